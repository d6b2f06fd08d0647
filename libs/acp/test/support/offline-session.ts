import type { AgentHostOptions } from '../../src';
import { fixturePath } from '../helpers';
import { failSessionOnUnmatched, OpenAiRealSession } from './real-session';
import type { ScriptedServer, ScriptedServerOptions } from './scripted-script';
import type { ScrubOptions } from './scrub-recording';

/** How AgentHost starts the agent (the session's folder and callbacks are the session's). */
export type AgentStart = Omit<
  AgentHostOptions,
  'sessionCwd' | 'onFact' | 'onRawFrame' | 'onStderr'
>;

/** One scenario of a real agent, run offline against a scripted OpenAI model server. */
export interface OfflineRun {
  /** The agent: its private HOME is `baton-<agent>-…`, shown as `/tmp/baton-<agent>` in recordings. */
  agent: string;
  /** The scenario, named in failures. */
  scenario: string;
  /** The fixture (a name in fixtures/) the run rewrites, when recording was asked for. */
  fixture: string;
  /** Whether to rewrite the fixture (the spec's BATON_RECORD_…_FIXTURES=1). */
  record: boolean;
  /** Starts the scripted model server; `work` is the agent's work folder. */
  startServer(
    options: Pick<ScriptedServerOptions, 'onUnmatched' | 'dumpTo'>,
    work: string,
  ): Promise<ScriptedServer>;
  /** Writes the agent's private, offline configuration into `home`; says how to start it. */
  configure(home: string, server: ScriptedServer): AgentStart;
  /** A last pass over the recording's messages (agent-specific fields), new for each run. */
  scrubRewrite?: () => NonNullable<ScrubOptions['rewrite']>;
}

/**
 * A real agent's scenario, offline: a private HOME with a work folder, the scripted model server
 * (a request its script does not match fails the session at once), the agent under AgentHost
 * with handoff admission, and, when asked, the scrubbed recording written to its fixture.
 */
export class OfflineSession extends OpenAiRealSession {
  constructor(
    readonly run: OfflineRun,
    home: string,
    work: string,
    server: ScriptedServer,
  ) {
    super(run.scenario, home, work, server);
  }

  /** Starts `run`, as this class (a subclass may keep more of what it observes). */
  static async start<T extends OfflineSession>(
    this: new (run: OfflineRun, home: string, work: string, server: ScriptedServer) => T,
    run: OfflineRun,
  ): Promise<T> {
    const { home, work } = OpenAiRealSession.makeHome(run.agent);
    const late: { session?: T } = {};
    const server = await run.startServer(failSessionOnUnmatched(late), work);
    const start = run.configure(home, server);
    const s = new this(run, home, work, server);
    late.session = s;
    await s.open('handoff', start);
    return s;
  }

  protected recording(): { file: string; scrub: ScrubOptions } | undefined {
    if (!this.run.record) return undefined;
    const rewrite = this.run.scrubRewrite?.();
    return {
      file: fixturePath(this.run.fixture),
      scrub: {
        home: this.home,
        homeAs: `/tmp/baton-${this.run.agent}`,
        sessionId: this.host.sessionId!,
        ...(rewrite ? { rewrite } : {}),
      },
    };
  }
}
