import {
  foregroundActivity,
  liveRegistrations,
  sessionActivity,
  sessionView,
} from '@baton/activity';
import type { ForegroundActivity } from '@baton/protocol';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { clientAdvertisement, type ClientProfileOptions, type FactBody } from '../src';
import { FIXTURES } from './helpers';
import {
  CODEX_ACP_VERSION,
  findCodexInstall,
  offlineCodexEnv,
  writeOfflineCodexConfig,
  type CodexInstall,
} from './support/codex-acp';
import {
  startScriptedResponsesServer,
  type ResponsesItem,
  type ResponsesTurn,
  type ScriptedResponsesServer,
} from './support/scripted-responses-server';
import { RealSession, waitForFile } from './support/real-session';

/**
 * The real codex-acp 0.16.0 adapter (Codex 0.137 inside), fully offline: the model is a scripted
 * OpenAI Responses API on 127.0.0.1 (support/scripted-responses-server.ts), HOME and CODEX_HOME
 * are private, the provider needs no login, and the tools really run (exec_command in a real
 * shell, spawn_agent children with their own model conversations). AgentHost hosts the adapter
 * as a worker would (session mode `full-access`: this machine has no bubblewrap for Codex's
 * sandbox) and its facts are folded by @baton/activity with `decide` after each one.
 *
 * Skipped, with the reason, when the adapter is not installed (support/codex-acp.ts says how).
 * BATON_RECORD_CODEX_FIXTURES=1 rewrites fixtures/codex-real-*.jsonl from these runs; what each
 * must show is checked on the recordings in codex-real-recordings.spec.ts (offline, in CI).
 */

const install = findCodexInstall();

jest.setTimeout(120_000);

const say = (text: string): ResponsesItem[] => [{ type: 'message', text }];
/**
 * `yield_time_ms` at its maximum by default: the call returns when the command exits (well
 * before). With a short yield, a command still running is left to run as a unified-exec process
 * and the call returns "Process running with session ID …".
 */
const exec = (cmd: string, yieldMs = 30_000): ResponsesItem => ({
  type: 'function_call',
  name: 'exec_command',
  arguments: { cmd, yield_time_ms: yieldMs },
});
const MULTI_AGENT = 'multi_agent_v1';
const agentIdOf = (output: string | undefined): string => {
  const id = (JSON.parse(output ?? '{}') as { agent_id?: unknown }).agent_id;
  if (typeof id !== 'string') throw new Error(`spawn_agent returned no agent_id: ${output}`);
  return id;
};

const SCRIPTS = {
  plain: [{ name: 'answer', when: { last: 'SAY-HELLO' }, reply: say('Hello from the script.') }],
  exec: [
    {
      name: 'run command',
      when: { last: 'RUN-EXEC' },
      reply: [exec(`${waitForFile('release-exec')}; echo hello`)],
    },
    { name: 'command done', when: { afterTool: 'exec_command' }, reply: say('It printed hello.') },
  ],
  longExec: [
    {
      name: 'start long command',
      when: { last: 'RUN-LONG' },
      reply: [exec(`${waitForFile('release-long')}; echo late > long-done`, 250)],
    },
    {
      name: 'left running',
      when: { afterTool: 'exec_command' },
      reply: say('It keeps running in the background.'),
    },
    { name: 'second prompt', when: { last: 'SECOND' }, reply: say('Second answer.') },
  ],
  subagent: [
    // The child's own conversation starts with the task spawn_agent gave it.
    {
      name: 'child: command',
      when: { first: 'CHILD-TASK', last: 'CHILD-TASK' },
      reply: [exec(`${waitForFile('release-agent')}; echo child`)],
    },
    {
      name: 'child: report',
      when: { first: 'CHILD-TASK', afterTool: 'exec_command' },
      reply: say('Child work done.'),
    },
    {
      name: 'spawn child',
      when: { last: 'RUN-AGENT' },
      reply: [
        {
          type: 'function_call',
          name: 'spawn_agent',
          namespace: MULTI_AGENT,
          arguments: { message: 'CHILD-TASK: run one command and report' },
        },
      ],
    },
    {
      name: 'wait for child',
      when: { afterTool: 'spawn_agent' },
      reply: (r) => [
        {
          type: 'function_call',
          name: 'wait_agent',
          namespace: MULTI_AGENT,
          arguments: { targets: [agentIdOf(r.lastToolOutput)], timeout_ms: 60_000 },
        },
      ],
    },
    {
      name: 'child finished',
      when: { afterTool: 'wait_agent' },
      reply: say('The child finished.'),
    },
    {
      name: 'notification',
      when: { last: '<subagent_notification>' },
      reply: say('Noted.'),
      repeat: true,
    },
  ],
} satisfies Record<string, ResponsesTurn[]>;
type Scenario = keyof typeof SCRIPTS;

const CLIENT_PROFILES = {
  plain: {},
  terminal: { terminalOutput: true },
} satisfies Record<string, ClientProfileOptions>;
type ClientProfile = keyof typeof CLIENT_PROFILES;

export const codexFixtureName = (profile: ClientProfile, scenario: Scenario): string =>
  profile === 'plain' ? `codex-real-${scenario}` : `codex-real-${profile}-${scenario}`;

class CodexSession extends RealSession<ScriptedResponsesServer> {
  /** Foreground activity after each fact. */
  readonly activities: ForegroundActivity[] = [];

  private constructor(
    readonly scenario: Scenario,
    readonly profile: ClientProfile,
    home: string,
    work: string,
    server: ScriptedResponsesServer,
  ) {
    super(scenario, home, work, server);
  }

  static async start(
    scenario: Scenario,
    profile: ClientProfile,
    codex: CodexInstall,
  ): Promise<CodexSession> {
    const { home, work } = RealSession.makeHome('codex');
    const late: { session?: CodexSession } = {};
    const server = await startScriptedResponsesServer({
      script: SCRIPTS[scenario],
      onUnmatched: (r) =>
        late.session?.fail(`the model server has no scripted turn for ${JSON.stringify(r)}`),
      dumpTo: process.env.BATON_SCRIPTED_MODEL_DUMP,
    });
    writeOfflineCodexConfig(join(home, '.codex'), server.url);
    const s = new CodexSession(scenario, profile, home, work, server);
    late.session = s;
    await s.open('handoff', {
      command: codex.binary,
      args: [],
      env: offlineCodexEnv(home),
      advertise: clientAdvertisement(CLIENT_PROFILES[profile]),
      mode: 'full-access',
    });
    return s;
  }

  protected observe(): void {
    this.activities.push(foregroundActivity(this.session()));
  }

  protected requestSummaries(): string[] {
    return this.server.requests.map((r) => `${r.path}:${r.answer}`);
  }

  protected recording() {
    if (process.env.BATON_RECORD_CODEX_FIXTURES !== '1') return undefined;
    const processes = new Map<string, string>();
    return {
      file: join(FIXTURES, codexFixtureName(this.profile, this.scenario) + '.jsonl'),
      scrub: {
        home: this.home,
        homeAs: '/tmp/baton-codex',
        sessionId: this.host.sessionId!,
        rewrite: (message: Record<string, unknown>, at: string) =>
          scrubCodexTool(message, at, processes),
      },
    };
  }
}

/**
 * Codex's exec cards carry clock readings and a process id: rebased on the frame's time and named
 * by order of appearance, so a re-recording differs only where the traffic does.
 */
const scrubCodexTool = (
  message: Record<string, unknown>,
  at: string,
  processes: Map<string, string>,
): void => {
  const update = (message.params as { update?: Record<string, unknown> } | undefined)?.update;
  for (const key of ['rawInput', 'rawOutput'] as const) {
    const raw = update?.[key] as Record<string, unknown> | undefined;
    if (raw === undefined || typeof raw !== 'object') continue;
    for (const f of ['started_at_ms', 'completed_at_ms'])
      if (typeof raw[f] === 'number') raw[f] = Date.parse(at);
    if (typeof raw.process_id === 'string') {
      const known = processes.get(raw.process_id) ?? `proc${processes.size + 1}`;
      processes.set(raw.process_id, known);
      raw.process_id = known;
    }
    if (raw.duration !== undefined) raw.duration = { secs: 0, nanos: 0 };
  }
};

type F = FactBody;
const toolStarted = (f: F) => f.type === 'tool.started';
const toolDone = (f: F) => f.type === 'tool.updated' && f.data.status === 'completed';
const turnEnded = (gen: number) => (f: F) =>
  f.type === 'turn.ended' && f.data.admissionGeneration === gen;

const missing = 'missing' in install ? install.missing : undefined;
const describeReal = missing !== undefined ? describe.skip : describe;
if (missing !== undefined) console.warn(`codex-real.spec: skipped, ${missing}`);

describeReal(`codex-acp ${CODEX_ACP_VERSION}, offline against a scripted Responses API`, () => {
  const codex = install as CodexInstall;
  let s: CodexSession | undefined;

  afterEach(async () => {
    await s?.dispose();
    s = undefined;
  });

  const cases = (['plain', 'terminal'] as const).flatMap((profile) =>
    (Object.keys(SCRIPTS) as Scenario[]).map((scenario) => [profile, scenario] as const),
  );

  it.each(cases)('%s profile, %s', async (profile, scenario) => {
    s = await CodexSession.start(scenario, profile, codex);
    const session = s;
    expect(s.facts.find((f) => f.type === 'capabilities.negotiated')).toMatchObject({
      data: {
        agent: { name: 'codex-acp', version: CODEX_ACP_VERSION },
        dialect: 'codex',
        handoff: false,
        attestedKinds: [],
      },
    });
    const prompt = {
      plain: 'SAY-HELLO',
      exec: 'RUN-EXEC',
      longExec: 'RUN-LONG',
      subagent: 'RUN-AGENT',
    }[scenario];
    s.submit(prompt);

    if (scenario === 'exec') {
      // The command runs in the foreground: a tool of the turn, never background work.
      await s.until('the command to start', () => session.has(toolStarted));
      expect(sessionActivity(s.session())).toMatchObject({ state: 'running' });
      expect(foregroundActivity(s.session())).toBe('generating');
      s.release('release-exec');
      await s.until('the command to complete', () => session.has(toolDone));
    }
    if (scenario === 'subagent') {
      // The child runs its own command; nothing of it reaches the ACP client: the parent's turn
      // (waiting in wait_agent) is all Baton can show.
      await s.until('the child to run its command', () =>
        session.server.used.includes('child: command'),
      );
      expect(s.has(toolStarted)).toBe(false);
      expect(liveRegistrations(s.session())).toEqual([]);
      expect(sessionActivity(s.session())).toMatchObject({ state: 'running' });
      s.release('release-agent');
    }
    await s.until('the turn to end', () => session.has(turnEnded(1)));
    if (scenario === 'longExec') {
      // The turn ended with the command still running and its card still in progress; the
      // session is promptable. The process then exits: the adapter says nothing of it.
      expect(s.has(toolStarted)).toBe(true);
      expect(s.has(toolDone)).toBe(false);
      expect(sessionActivity(s.session())).toMatchObject({ state: 'waiting_for_input' });
      s.release('release-long');
      await s.until('the process to exit', () => existsSync(join(session.work, 'long-done')));
      await new Promise((r) => setTimeout(r, 1_500));
      expect(s.has(toolDone)).toBe(false);
      s.submit('SECOND');
      await s.until('the second turn to end', () => session.has(turnEnded(2)));
      expect(s.has(toolDone)).toBe(false);
      // Registered at the first turn's end, shown possibly finished, never ended.
      expect(liveRegistrations(s.session()).map((r) => r.work.kind)).toEqual(['shell']);
      expect(sessionView(s.session()).backgroundWork).toEqual([
        expect.objectContaining({ kind: 'shell', possiblyFinished: true }),
      ]);
      expect(sessionActivity(s.session())).toMatchObject({
        state: 'waiting_for_input',
        foregroundActivity: 'background',
      });
    }
    await s.finish();

    expect(s.server.unmatched()).toEqual([]);
    // The host's close ended the execution: nothing is left registered.
    expect(foregroundActivity(s.session())).toBeNull();
    expect(liveRegistrations(s.session())).toEqual([]);
    if (scenario !== 'longExec')
      expect(s.facts.filter((f) => f.type.startsWith('background.'))).toEqual([]);
    if (scenario === 'subagent')
      expect(s.server.used).toEqual(
        expect.arrayContaining([
          'spawn child',
          'child: command',
          'child: report',
          'wait for child',
          'child finished',
        ]),
      );
  });
});
