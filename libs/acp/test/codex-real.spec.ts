import {
  foregroundActivity,
  liveRegistrations,
  sessionActivity,
  sessionView,
} from '@baton/activity';
import type { ForegroundActivity, StreamEntry } from '@baton/protocol';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Owner } from '@baton/testing';
import {
  AgentHost,
  clientAdvertisement,
  toFact,
  toRecordingLine,
  type ClientProfileOptions,
  type FactBody,
  type Frame,
} from '../src';
import { assertValidFact, FIXTURES } from './helpers';
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
import { scrubRecording } from './support/scrub-recording';

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
const SESSION = 's1';
const PROBE_MS = 60_000;

jest.setTimeout(120_000);

const waitFor = (file: string) => `until [ -f ${file} ]; do sleep 0.1; done`;
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
      reply: [exec(`${waitFor('release-exec')}; echo hello`)],
    },
    { name: 'command done', when: { afterTool: 'exec_command' }, reply: say('It printed hello.') },
  ],
  longExec: [
    {
      name: 'start long command',
      when: { last: 'RUN-LONG' },
      reply: [exec(`${waitFor('release-long')}; echo late > long-done`, 250)],
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
      reply: [exec(`${waitFor('release-agent')}; echo child`)],
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

class CodexSession {
  readonly facts: FactBody[] = [];
  readonly frames: Frame[] = [];
  readonly activities: ForegroundActivity[] = [];
  readonly owner = new Owner();
  readonly shadow = new Owner();
  private host!: AgentHost;
  private readonly sent = new Set<string>();
  private readonly turns: Promise<unknown>[] = [];
  private seq = 0;
  private stderr = '';
  private failure: string | undefined;

  private constructor(
    readonly scenario: Scenario,
    readonly profile: ClientProfile,
    readonly home: string,
    readonly work: string,
    readonly server: ScriptedResponsesServer,
  ) {}

  static async start(
    scenario: Scenario,
    profile: ClientProfile,
    codex: CodexInstall,
  ): Promise<CodexSession> {
    const home = mkdtempSync(join(tmpdir(), 'baton-codex-'));
    const work = join(home, 'work');
    mkdirSync(work);
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
    s.owner.command(SESSION, 'session.configure', { admission: 'handoff' });
    s.shadow.command(SESSION, 'session.configure', { admission: 'coarse' });
    try {
      s.host = await AgentHost.start({
        command: codex.binary,
        args: [],
        env: offlineCodexEnv(home),
        sessionCwd: work,
        advertise: clientAdvertisement(CLIENT_PROFILES[profile]),
        mode: 'full-access',
        permissionPolicy: 'allow-once',
        setupTimeoutMs: PROBE_MS,
        onFact: (f) => s.onFact(f),
        onRawFrame: (f) => s.frames.push(f),
        onStderr: (c) => (s.stderr = (s.stderr + c).slice(-8_000)),
      });
    } catch (e) {
      await server.close();
      rmSync(home, { recursive: true, force: true });
      throw new Error(`${scenario}: the adapter did not start: ${String(e)}\n${s.describe()}`);
    }
    return s;
  }

  private onFact(f: FactBody): void {
    assertValidFact(f);
    this.facts.push(f);
    const entry = toFact(
      {
        v: 1,
        taskId: this.owner.taskId,
        sessionId: SESSION,
        executionId: 'e1',
        generation: 1,
        writer: { role: 'worker', instance: 'w-codex', seq: ++this.seq },
      },
      f,
    ) as StreamEntry;
    for (const o of [this.owner, this.shadow]) {
      o.append(entry);
      o.decideNow();
    }
    this.activities.push(foregroundActivity(this.session()));
    setImmediate(() => this.dispatchAdmitted());
  }

  session(owner: Owner = this.owner) {
    return owner.session(SESSION);
  }

  private dispatchAdmitted(): void {
    for (const e of this.owner.entries) {
      if (e.type !== 'prompt.admitted' || this.sent.has(e.data.promptId)) continue;
      this.sent.add(e.data.promptId);
      const s = this.session();
      const claim = [s.turn, s.steer].find(
        (c) => c?.promptId === e.data.promptId && c.generation === e.data.admissionGeneration,
      );
      if (!claim?.text) {
        this.fail(`prompt ${e.data.promptId} was admitted but no claim carries its text`);
        continue;
      }
      this.turns.push(
        this.host
          .prompt({
            promptId: e.data.promptId,
            admissionGeneration: e.data.admissionGeneration,
            text: claim.text,
          })
          .catch((err: unknown) => err),
      );
    }
  }

  submit(key: string): string {
    const id = this.owner.submit(SESSION, key);
    this.shadow.submit(SESSION, key);
    this.dispatchAdmitted();
    return id;
  }

  release(file: string): void {
    writeFileSync(join(this.work, file), '');
  }

  fail(reason: string): void {
    this.failure ??= reason;
  }

  async until(what: string, cond: () => boolean): Promise<void> {
    const deadline = Date.now() + PROBE_MS;
    for (;;) {
      if (this.failure !== undefined)
        throw new Error(
          `${this.scenario}: while waiting for ${what}: ${this.failure}\n${this.describe()}`,
        );
      if (cond()) return;
      if (Date.now() > deadline)
        throw new Error(`${this.scenario}: timed out waiting for ${what}\n${this.describe()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  has(pred: (f: FactBody) => boolean): boolean {
    return this.facts.some(pred);
  }

  describe(): string {
    return [
      `facts: ${this.facts.map((f) => `${f.type} ${JSON.stringify(f.data).slice(0, 160)}`).join('\n  ')}`,
      `model requests: ${JSON.stringify(this.server.requests.map((r) => `${r.path}:${r.answer}`))}`,
      `stderr tail: ${this.stderr.slice(-2_000)}`,
    ].join('\n');
  }

  async finish(): Promise<void> {
    const answers = await Promise.all(this.turns);
    answers.forEach((a) => {
      if (a instanceof Error) throw a;
    });
    await this.host.close();
    if (process.env.BATON_RECORD_CODEX_FIXTURES === '1') {
      const processes = new Map<string, string>();
      const frames = scrubRecording(this.frames, {
        home: this.home,
        homeAs: '/tmp/baton-codex',
        sessionId: this.host.sessionId!,
        rewrite: (message, at) => scrubCodexTool(message, at, processes),
      });
      writeFileSync(
        join(FIXTURES, codexFixtureName(this.profile, this.scenario) + '.jsonl'),
        frames.map(toRecordingLine).join('\n') + '\n',
      );
    }
  }

  async dispose(): Promise<void> {
    await this.host?.close();
    await this.server.close();
    rmSync(this.home, { recursive: true, force: true });
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
