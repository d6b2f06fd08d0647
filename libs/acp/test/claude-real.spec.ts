import {
  activeSubagentCount,
  foregroundActivity,
  liveRegistrations,
  sessionActivity,
} from '@baton/activity';
import type { ForegroundActivity } from '@baton/protocol';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clientAdvertisement, type ClientProfileOptions, type FactBody } from '../src';
import { FIXTURES } from './helpers';
import { findClaudeInstall, offlineClaudeEnv, type ClaudeInstall } from './support/claude-cli';
import {
  startScriptedModelServer,
  type ScriptBlock,
  type ScriptTurn,
  type ScriptedModelServer,
} from './support/scripted-model-server';
import { RealSession, SESSION, waitForFile } from './support/real-session';

/**
 * The real claude-agent-acp 0.101.0 adapter and the real Claude Code CLI, fully offline: the
 * model is a scripted Messages API server on 127.0.0.1, the tools (background Bash, Agent
 * subagents, Monitor) really run. AgentHost hosts the adapter as a worker would (Manual mode,
 * raw SDK task messages on) and its facts are folded by @baton/activity with `decide` after each
 * one, the owner's loop; admitted prompts go back to the agent. Every background command waits
 * for a file the test creates, so each probe sees the state it names; completions that happen
 * together are checked per entity, never as one global order.
 *
 * A conversation request the script has no turn for fails the scenario at once, with what the
 * request held; so does an admitted prompt with no text to deliver.
 *
 * BATON_RECORD_CLAUDE_FIXTURES=1 rewrites fixtures/claude-real-*.jsonl from these runs;
 * BATON_SCRIPTED_MODEL_DUMP=<file> appends every request the model server gets to that JSONL file.
 */

const install = findClaudeInstall();

jest.setTimeout(150_000);

// ------------------------------------------------------------------------------------------------
// Scripts: the model's side of each scenario.

const bash = (
  id: string,
  command: string,
  description: string,
  background = false,
): ScriptBlock => ({
  type: 'tool_use',
  id,
  name: 'Bash',
  input: { command, description, ...(background ? { run_in_background: true } : {}) },
});
const agent = (id: string, marker: string): ScriptBlock => ({
  type: 'tool_use',
  id,
  name: 'Agent',
  input: {
    description: 'Background check',
    prompt: `${marker}: look around and report`,
    subagent_type: 'general-purpose',
    run_in_background: true,
  },
});
const toolSearchMonitor: ScriptBlock = {
  type: 'tool_use',
  id: 'toolu_search',
  name: 'ToolSearch',
  input: { query: 'select:Monitor', max_results: 1 },
};
const monitor = (command: string): ScriptBlock => ({
  type: 'tool_use',
  id: 'toolu_monitor',
  name: 'Monitor',
  input: { command, description: 'Watch the release file' },
});
const say = (text: string): ScriptBlock[] => [{ type: 'text', text }];
const tool = (id: string, name: string, input: Record<string, unknown>): ScriptBlock => ({
  type: 'tool_use',
  id,
  name,
  input,
});

/** The edit scenario's workspace: a file the model edits, and one it writes anew. */
const EDITED = 'notes.txt';
const EDITED_BEFORE = 'first line\nhello world\nlast line\n';
const EDIT_OLD = 'hello world';
const EDIT_NEW = 'hello baton';
const WRITTEN = 'fresh.txt';
const WRITE_TEXT = 'a new file\nwritten by the model\n';

/** The subagent's own loop: its conversation starts with the Agent prompt's marker. */
const subagentTurns = (marker: string): ScriptTurn[] => [
  {
    name: 'subagent: child Bash',
    when: { first: marker, last: marker },
    reply: [bash('toolu_child', `${waitForFile('release-agent')}; echo child`, 'Wait for release')],
  },
  {
    name: 'subagent: report',
    when: { first: marker, afterTool: 'Bash' },
    reply: say('Child work done.'),
  },
];
/**
 * Task notifications (completions and Monitor events) each start a cycle; any number of them. The
 * CLI delivers them as system reminders.
 */
const notifications: ScriptTurn = {
  name: 'notification cycle',
  when: { reminder: '<task-notification>' },
  reply: say('Noted.'),
  repeat: true,
};
const secondPrompt: ScriptTurn = {
  name: 'second prompt',
  when: { last: 'SECOND' },
  reply: say('Second answer.'),
};

const SCRIPTS = {
  shell: [
    {
      name: 'launch shell',
      when: { last: 'RUN-SHELL' },
      reply: [
        { type: 'text', text: 'Starting it.' },
        bash('toolu_shell', `${waitForFile('release-shell')}; echo done`, 'Wait for release', true),
      ],
    },
    {
      name: 'shell launched',
      when: { afterTool: 'Bash' },
      reply: say('It runs in the background.'),
    },
    notifications,
  ],
  subagent: [
    ...subagentTurns('SUBAGENT-TASK'),
    {
      name: 'launch agent',
      when: { last: 'RUN-AGENT' },
      reply: [agent('toolu_agent', 'SUBAGENT-TASK')],
    },
    { name: 'agent launched', when: { afterTool: 'Agent' }, reply: say('Launched.') },
    secondPrompt,
    notifications,
  ],
  monitor: [
    { name: 'load Monitor', when: { last: 'RUN-MONITOR' }, reply: [toolSearchMonitor] },
    {
      name: 'start Monitor',
      when: { afterTool: 'ToolSearch' },
      reply: [
        monitor(
          `${waitForFile('arm-monitor')}; echo armed; ${waitForFile('release-monitor')}; echo finished`,
        ),
      ],
    },
    { name: 'monitor started', when: { afterTool: 'Monitor' }, reply: say('Watching.') },
    notifications,
  ],
  all: [
    ...subagentTurns('SUBAGENT-TASK'),
    { name: 'load Monitor', when: { last: 'RUN-ALL' }, reply: [toolSearchMonitor] },
    {
      name: 'launch all three',
      when: { afterTool: 'ToolSearch' },
      reply: [
        bash('toolu_shell', `${waitForFile('release-shell')}; echo done`, 'Wait for release', true),
        agent('toolu_agent', 'SUBAGENT-TASK'),
        monitor(`${waitForFile('release-monitor')}; echo finished`),
      ],
    },
    { name: 'all launched', when: { afterTool: 'Monitor' }, reply: say('All three started.') },
    secondPrompt,
    notifications,
  ],
  twoShells: [
    {
      name: 'launch two shells',
      when: { last: 'RUN-TWO' },
      reply: [
        bash('toolu_shell_a', `${waitForFile('release-a')}; echo a`, 'First shell', true),
        bash('toolu_shell_b', `${waitForFile('release-b')}; echo b`, 'Second shell', true),
      ],
    },
    {
      name: 'shells launched',
      when: { afterTool: 'Bash' },
      reply: say('Both run in the background.'),
    },
    notifications,
  ],
  edit: (work: string): ScriptTurn[] => [
    {
      name: 'read the file',
      when: { last: 'RUN-EDIT' },
      reply: [
        { type: 'text', text: 'Reading it first.' },
        tool('toolu_read', 'Read', { file_path: join(work, EDITED) }),
      ],
    },
    {
      name: 'edit the file',
      when: { afterTool: 'Read' },
      reply: [
        tool('toolu_edit', 'Edit', {
          file_path: join(work, EDITED),
          old_string: EDIT_OLD,
          new_string: EDIT_NEW,
        }),
      ],
    },
    {
      name: 'write a new file',
      when: { afterTool: 'Edit' },
      reply: [
        tool('toolu_write', 'Write', { file_path: join(work, WRITTEN), content: WRITE_TEXT }),
      ],
    },
    { name: 'files changed', when: { afterTool: 'Write' }, reply: say('Edited and written.') },
  ],
} satisfies Record<string, ScriptTurn[] | ((work: string) => ScriptTurn[])>;

/** The client profiles the adapter tells apart; `raw` is what a Baton worker asks for. */
const CLIENT_PROFILES = {
  raw: { rawSdkMessages: true },
  plain: {},
  terminal: { terminalOutput: true },
  subagents: { subagents: true },
  subagentsRaw: { subagents: true, rawSdkMessages: true },
  v2: { protocolVersion: 2 },
} satisfies Record<string, ClientProfileOptions>;
type ClientProfile = keyof typeof CLIENT_PROFILES;

/** `claude-real-<scenario>` for the raw profile (the first recordings), else with the profile. */
const fixtureName = (profile: ClientProfile, scenario: string) =>
  profile === 'raw'
    ? `claude-real-${scenario}`
    : profile === 'v2'
      ? `claude-v2-${scenario}`
      : `claude-real-${profile}-${scenario}`;

// ------------------------------------------------------------------------------------------------
// A real session: adapter + CLI under AgentHost, its facts folded by the owner's loop.

interface Step {
  fact: FactBody['type'];
  activity: ForegroundActivity;
  live: number;
}

class ClaudeSession extends RealSession<ScriptedModelServer> {
  /** Foreground activity and live registrations after each fact. */
  readonly steps: Step[] = [];

  private constructor(
    name: string,
    home: string,
    work: string,
    server: ScriptedModelServer,
    readonly profile: ClientProfile = 'raw',
  ) {
    super(name, home, work, server);
  }

  static async start(
    name: keyof typeof SCRIPTS,
    policy: 'handoff' | 'coarse',
    claude: ClaudeInstall,
    profile: ClientProfile = 'raw',
  ): Promise<ClaudeSession> {
    const { home, work } = RealSession.makeHome('claude');
    // The server reports to the session it serves, made once the server's URL is known.
    const late: { session?: ClaudeSession } = {};
    const scripted = SCRIPTS[name];
    const server = await startScriptedModelServer({
      script: typeof scripted === 'function' ? scripted(work) : scripted,
      onUnmatched: (r) =>
        late.session?.fail(
          `the model server has no scripted turn for a conversation request\n${r.report}`,
        ),
      dumpTo: process.env.BATON_SCRIPTED_MODEL_DUMP,
    });
    const s = new ClaudeSession(name, home, work, server, profile);
    late.session = s;
    await s.open(policy, {
      command: process.execPath,
      args: [claude.adapter],
      env: offlineClaudeEnv(home, server.url),
      advertise: clientAdvertisement(CLIENT_PROFILES[profile]),
      mode: 'default',
    });
    return s;
  }

  protected observe(f: FactBody): void {
    const s = this.session();
    this.steps.push({
      fact: f.type,
      activity: foregroundActivity(s),
      live: liveRegistrations(s).length,
    });
  }

  protected requestSummaries(): string[] {
    return this.server.requests.map((r) => `${r.kind}:${r.answer}`);
  }

  protected recording() {
    if (process.env.BATON_RECORD_CLAUDE_FIXTURES !== '1') return undefined;
    return {
      file: join(FIXTURES, fixtureName(this.profile, this.name) + '.jsonl'),
      scrub: { home: this.home, sessionId: this.host.sessionId! },
    };
  }

  // -- fact queries ---------------------------------------------------------------------------

  /** Index of the first fact matching, failing the test if there is none. */
  at(label: string, pred: (f: FactBody) => boolean): number {
    const i = this.facts.findIndex(pred);
    if (i < 0) throw new Error(`${this.name}: no fact "${label}"\n${this.describe()}`);
    return i;
  }

  /** The labelled facts exist and come in this order: the order of one entity's life. */
  expectOrder(...steps: [string, (f: FactBody) => boolean][]): void {
    const at = steps.map(([label, pred]) => [label, this.at(label, pred)] as const);
    for (let i = 1; i < at.length; i++) {
      if (at[i]![1] <= at[i - 1]![1])
        throw new Error(
          `${this.name}: "${at[i]![0]}" came before "${at[i - 1]![0]}"\n${this.describe()}`,
        );
    }
  }

  /**
   * Quiet: nothing holds the foreground, nothing is registered, the model has been told of every
   * registered task's end, and every notification cycle it answered has ended. (Activity alone
   * could be null between a completion and the cycle the CLI starts to report it.)
   */
  async settle(): Promise<void> {
    await this.until('the session to settle', () => {
      const s = this.session();
      if (foregroundActivity(s) !== null || s.turn !== null || liveRegistrations(s).length > 0)
        return false;
      const told = new Set(
        this.server.requests.flatMap((r) =>
          r.kind === 'conversation' ? terminalNotifications(r.lastReminders ?? '') : [],
        ),
      );
      const works = this.facts.flatMap((f) =>
        f.type === 'background.started' ? [f.data.work.id] : [],
      );
      const cycles = this.server.used.filter((n) => n === notifications.name).length;
      const ended = this.facts.filter(idleOf('task-notification')).length;
      return works.every((w) => told.has(w)) && ended >= cycles;
    });
  }

  /** Consecutive distinct foreground activities, as the owner saw them. */
  activities(): ForegroundActivity[] {
    return this.steps.map((s) => s.activity).filter((a, i, all) => i === 0 || a !== all[i - 1]);
  }
}

/** Task ids whose end (a notification with a status, not a Monitor event) the text reports. */
const terminalNotifications = (text: string): string[] =>
  [...text.matchAll(/<task-notification>([\s\S]*?)<\/task-notification>/g)].flatMap((m) => {
    const id = /<task-id>([^<]+)<\/task-id>/.exec(m[1] ?? '')?.[1];
    return id !== undefined && /<status>/.test(m[1] ?? '') ? [id] : [];
  });

// Fact predicates.
type F = FactBody;
const toolStarted = (id: string) => (f: F) => f.type === 'tool.started' && f.data.toolCallId === id;
const topLevelStarted = (id: string) => (f: F) =>
  f.type === 'tool.started' && f.data.toolCallId === id && f.data.ownership === 'foreground';
const childStarted = (id: string, parent: string) => (f: F) =>
  f.type === 'tool.started' &&
  f.data.toolCallId === id &&
  f.data.ownership === 'background' &&
  f.data.parentToolCallId === parent;
const toolCompleted = (id: string) => (f: F) =>
  f.type === 'tool.updated' && f.data.toolCallId === id && f.data.status === 'completed';
const bgStarted = (kind: string, toolCallId: string) => (f: F) =>
  f.type === 'background.started' && f.data.work.kind === kind && f.data.toolCallId === toolCallId;
const bgEnded = (kind: string, toolCallId: string) => (f: F) =>
  f.type === 'background.ended' && f.data.kind === kind && f.data.toolCallId === toolCallId;
const idleOf = (origin: string, gen?: number) => (f: F) =>
  f.type === 'foreground.idle' &&
  f.data.origin === origin &&
  (gen === undefined || f.data.admissionGeneration === gen);
const turnEnded = (gen: number) => (f: F) =>
  f.type === 'turn.ended' && f.data.admissionGeneration === gen;

const started = (s: ClaudeSession, kind: string, toolCallId: string) =>
  s.facts.find(bgStarted(kind, toolCallId)) as Extract<F, { type: 'background.started' }>;

/** Every registration's work id is the SDK task id the raw messages named for its launch. */
const expectIdentified = (s: ClaudeSession, kind: string, toolCallId: string) => {
  const reg = started(s, kind, toolCallId);
  expect(reg.data.attested).toBe(true);
  const taskStarted = s.frames.find((f) => {
    const m = (f.message as { params?: { message?: { subtype?: string; tool_use_id?: string } } })
      .params?.message;
    return m?.subtype === 'task_started' && m.tool_use_id === toolCallId;
  });
  const taskId = (taskStarted?.message as { params: { message: { task_id: string } } }).params
    .message.task_id;
  expect(reg.data.work.id).toBe(taskId);
  expect(s.facts.find(bgEnded(kind, toolCallId))).toMatchObject({
    data: { workId: taskId, status: 'completed' },
  });
};

// ------------------------------------------------------------------------------------------------

const describeReal = 'missing' in install ? describe.skip : describe;
if ('missing' in install) {
  console.warn(`claude-real.spec: skipped, ${install.missing}`);
}

describeReal(
  'claude-agent-acp 0.101.0 + the real Claude Code CLI, offline against a scripted model',
  () => {
    const claude = install as ClaudeInstall;
    let s: ClaudeSession | undefined;

    afterEach(async () => {
      await s?.dispose();
      s = undefined;
    });

    it('a background Bash shell: registered attested, foreground idle while it runs, ended by its task id', async () => {
      s = await ClaudeSession.start('shell', 'handoff', claude);
      // What a worker hosting the adapter gets: identified completion for all three kinds, and the
      // session in Manual mode (no permission classifier requests to the model).
      expect(s.facts[1]).toMatchObject({
        type: 'capabilities.negotiated',
        data: {
          agent: { name: '@agentclientprotocol/claude-agent-acp', version: '0.101.0' },
          dialect: 'claude',
          promptQueueing: true,
          handoff: true,
          attestedKinds: ['shell', 'subagent', 'monitor'],
          unambiguousCompletionKinds: [],
          _meta: { claudeCode: { rawTaskEvents: true, lineage: true } },
          // What was asked and answered, as the wire had it.
          asked: {
            protocolVersion: 1,
            sessionMeta: { claudeCode: { emitRawSDKMessages: expect.any(Array) } },
          },
          answered: { protocolVersion: 1, agentCapabilities: { loadSession: true } },
        },
      });
      const setMode = s.frames.find(
        (f) => (f.message as { method?: string }).method === 'session/set_mode',
      );
      expect(setMode?.message).toMatchObject({ params: { modeId: 'default' } });
      const p1 = s.submit('RUN-SHELL');
      const session = s;
      await s.until(
        'the turn to end with the shell registered',
        () => session.has(turnEnded(1)) && session.has(bgStarted('shell', 'toolu_shell')),
      );
      // The prompt is answered while the shell runs: the session waits for input, the work shows.
      expect(sessionActivity(s.session())).toMatchObject({
        state: 'waiting_for_input',
        foregroundActivity: 'background',
        activeSubagentCount: 0,
      });
      expect(liveRegistrations(s.session()).map((r) => r.work)).toEqual([
        expect.objectContaining({
          kind: 'shell',
          label: 'Wait for release',
          command: `${waitForFile('release-shell')}; echo done`,
        }),
      ]);
      // Both policies admit a new prompt now: a shell never holds the foreground.
      const shadow = s.detachShadow();
      shadow.submit(SESSION, 'probe');
      expect(shadow.decisionsFor('p-probe')).toEqual([
        { outcome: 'admitted', mode: 'turn', admissionGeneration: 2 },
      ]);

      s.release('release-shell');
      await s.settle();
      await s.finish();

      s.expectOrder(
        ['Bash tool started (foreground)', topLevelStarted('toolu_shell')],
        ['shell registered', bgStarted('shell', 'toolu_shell')],
        ['Bash launch card completed', toolCompleted('toolu_shell')],
        ['human idle of prompt 1', idleOf('human', 1)],
        ['turn 1 ended', turnEnded(1)],
        ['shell ended', bgEnded('shell', 'toolu_shell')],
        ['task-notification cycle idle', idleOf('task-notification')],
      );
      expectIdentified(s, 'shell', 'toolu_shell');
      expect(s.owner.decisionsFor(p1)).toEqual([
        { outcome: 'admitted', mode: 'turn', admissionGeneration: 1 },
      ]);
      expect(s.activities()).toEqual([null, 'generating', 'background', null, 'generating', null]);
      expect(liveRegistrations(s.session())).toEqual([]);
      expect(s.server.unmatched()).toEqual([]);
    });

    it('a background Agent subagent with a child tool: held prompt yields, handoff admits a human prompt, coarse queues it', async () => {
      s = await ClaudeSession.start('subagent', 'handoff', claude);
      s.submit('RUN-AGENT');
      const session = s;
      await s.until(
        'the human cycle to yield with the subagent and its child running',
        () => session.has(idleOf('human', 1)) && session.has(toolStarted('toolu_child')),
      );
      // The adapter holds prompt 1 open for its subagent, but the foreground has yielded to it.
      expect(s.has(turnEnded(1))).toBe(false);
      expect(sessionActivity(s.session())).toMatchObject({
        state: 'running',
        foregroundActivity: 'background',
        activeSubagentCount: 1,
      });
      const shadow = s.detachShadow();
      expect(sessionActivity(shadow.session(SESSION))).toMatchObject({
        foregroundActivity: 'generating',
        admission: 'coarse',
      });
      const p2 = s.submit('SECOND');
      expect(s.owner.decisionsFor(p2)).toEqual([
        { outcome: 'admitted', mode: 'handoff', admissionGeneration: 2 },
      ]);
      shadow.submit(SESSION, 'SECOND');
      expect(shadow.decisionsFor(p2)).toEqual([{ outcome: 'queued', position: 1, reason: 'busy' }]);

      // The real adapter takes the successor: it answers the held prompt and then prompt 2, while
      // the subagent still runs.
      await s.until('prompt 2 to be answered', () => session.has(turnEnded(2)));
      expect(s.has(bgEnded('subagent', 'toolu_agent'))).toBe(false);
      expect(sessionActivity(s.session())).toMatchObject({
        foregroundActivity: 'background',
        activeSubagentCount: 1,
      });

      s.release('release-agent');
      await s.settle();
      await s.finish();

      s.expectOrder(
        ['Agent tool started (foreground)', topLevelStarted('toolu_agent')],
        ['subagent registered', bgStarted('subagent', 'toolu_agent')],
        ['Agent launch card completed', toolCompleted('toolu_agent')],
        ['subagent ended', bgEnded('subagent', 'toolu_agent')],
      );
      s.expectOrder(
        ['subagent registered', bgStarted('subagent', 'toolu_agent')],
        ['child Bash started under the subagent', childStarted('toolu_child', 'toolu_agent')],
        ['child Bash completed', toolCompleted('toolu_child')],
        ['subagent ended', bgEnded('subagent', 'toolu_agent')],
      );
      s.expectOrder(
        ['human idle of prompt 1', idleOf('human', 1)],
        [
          'prompt 2 dispatched',
          (f) => f.type === 'prompt.dispatched' && f.data.admissionGeneration === 2,
        ],
        ['held prompt 1 answered', turnEnded(1)],
        ['human idle of prompt 2', idleOf('human', 2)],
        ['turn 2 ended', turnEnded(2)],
      );
      expectIdentified(s, 'subagent', 'toolu_agent');
      // The child's output is the subagent's, never the foreground's.
      expect(
        s.facts.filter(
          (f) =>
            f.type === 'tool.updated' &&
            f.data.toolCallId === 'toolu_child' &&
            f.data.ownership === 'foreground',
        ),
      ).toEqual([]);
      expect(s.activities()).toEqual([
        null,
        'generating',
        'background',
        'generating',
        'background',
        null,
        'generating',
        null,
      ]);
      expect(activeSubagentCount(s.session())).toBe(0);
      expect(s.server.used).toEqual(
        expect.arrayContaining(['subagent: child Bash', 'subagent: report']),
      );
      expect(s.server.unmatched()).toEqual([]);
    });

    it('a Monitor watch (after ToolSearch select:Monitor): event cycles do not end it, its task does', async () => {
      s = await ClaudeSession.start('monitor', 'coarse', claude);
      s.submit('RUN-MONITOR');
      const session = s;
      await s.until(
        'the turn to end with the watch registered',
        () => session.has(turnEnded(1)) && session.has(bgStarted('monitor', 'toolu_monitor')),
      );
      expect(sessionActivity(s.session())).toMatchObject({
        state: 'waiting_for_input',
        foregroundActivity: 'background',
      });
      const beforeEvent = s.steps.length;
      s.release('arm-monitor');
      await s.until('the event cycle to finish', () =>
        session.steps.slice(beforeEvent).some((x) => x.fact === 'foreground.idle'),
      );
      // An event woke the agent (a cycle of its own) and the watch is still registered.
      expect(s.steps.slice(beforeEvent).map((x) => x.activity)).toEqual(
        expect.arrayContaining(['generating']),
      );
      expect(s.has(bgEnded('monitor', 'toolu_monitor'))).toBe(false);
      expect(sessionActivity(s.session())).toMatchObject({ foregroundActivity: 'background' });

      s.release('release-monitor');
      await s.settle();
      await s.finish();

      s.expectOrder(
        ['ToolSearch completed', toolCompleted('toolu_search')],
        ['Monitor tool started (foreground)', topLevelStarted('toolu_monitor')],
        ['watch registered', bgStarted('monitor', 'toolu_monitor')],
        ['Monitor launch card completed', toolCompleted('toolu_monitor')],
        ['turn 1 ended', turnEnded(1)],
        ['an event cycle ended', idleOf('task-notification')],
        ['watch ended', bgEnded('monitor', 'toolu_monitor')],
      );
      expectIdentified(s, 'monitor', 'toolu_monitor');
      expect(s.activities().slice(0, 5)).toEqual([
        null,
        'generating',
        'background',
        'generating',
        'background',
      ]);
      expect(s.activities().at(-1)).toBeNull();
      expect(liveRegistrations(s.session())).toEqual([]);
      expect(s.server.unmatched()).toEqual([]);
    });

    it('all three at once: each ends by its own identity; coarse admits the queued prompt only when the held turn ends', async () => {
      s = await ClaudeSession.start('all', 'coarse', claude);
      s.submit('RUN-ALL');
      const session = s;
      await s.until(
        'the human cycle to end with all three registered',
        () =>
          session.has(idleOf('human', 1)) &&
          ['shell', 'subagent', 'monitor'].every((k) =>
            session.facts.some((f) => f.type === 'background.started' && f.data.work.kind === k),
          ),
      );
      expect(sessionActivity(s.session())).toMatchObject({
        state: 'running',
        foregroundActivity: 'generating',
        activeSubagentCount: 1,
        admission: 'coarse',
      });
      expect(
        liveRegistrations(s.session())
          .map((r) => r.work.kind)
          .sort(),
      ).toEqual(['monitor', 'shell', 'subagent']);
      const shadow = s.detachShadow();
      expect(sessionActivity(shadow.session(SESSION))).toMatchObject({
        foregroundActivity: 'background',
        admission: 'handoff',
      });
      const p2 = s.submit('SECOND');
      expect(s.owner.decisionsFor(p2)).toEqual([
        { outcome: 'queued', position: 1, reason: 'busy' },
      ]);
      shadow.submit(SESSION, 'SECOND');
      expect(shadow.decisionsFor(p2)).toEqual([
        { outcome: 'admitted', mode: 'handoff', admissionGeneration: 2 },
      ]);

      // Released together: the completions interleave as they will.
      for (const f of ['release-shell', 'release-monitor', 'release-agent']) s.release(f);
      await s.until('prompt 2 to be admitted, dispatched and answered', () =>
        session.has(turnEnded(2)),
      );
      await s.settle();
      await s.finish();

      for (const [kind, id] of [
        ['shell', 'toolu_shell'],
        ['subagent', 'toolu_agent'],
        ['monitor', 'toolu_monitor'],
      ] as const) {
        s.expectOrder(
          [`${id} started (foreground)`, topLevelStarted(id)],
          [`${kind} registered`, bgStarted(kind, id)],
          [`${id} launch card completed`, toolCompleted(id)],
          [`${kind} ended`, bgEnded(kind, id)],
        );
        expectIdentified(s, kind, id);
      }
      s.expectOrder(
        ['child Bash started under the subagent', childStarted('toolu_child', 'toolu_agent')],
        ['child Bash completed', toolCompleted('toolu_child')],
        ['subagent ended', bgEnded('subagent', 'toolu_agent')],
      );
      // Coarse: the queued prompt runs only once the held turn (kept open by the subagent) ended.
      s.expectOrder(
        ['subagent ended', bgEnded('subagent', 'toolu_agent')],
        ['held turn 1 ended', turnEnded(1)],
        [
          'prompt 2 dispatched',
          (f) => f.type === 'prompt.dispatched' && f.data.admissionGeneration === 2,
        ],
        ['turn 2 ended', turnEnded(2)],
      );
      expect(s.owner.decisionsFor(p2)).toEqual([
        { outcome: 'queued', position: 1, reason: 'busy' },
        { outcome: 'admitted', mode: 'turn', admissionGeneration: 2 },
      ]);
      expect(s.activities()[0]).toBeNull();
      expect(s.activities().at(-1)).toBeNull();
      expect(liveRegistrations(s.session())).toEqual([]);
      expect(activeSubagentCount(s.session())).toBe(0);
      expect(s.server.unmatched()).toEqual([]);
    });

    it('an Edit and a Write in the workspace: each asks permission with its diff, allowed, and changes the file', async () => {
      s = await ClaudeSession.start('edit', 'handoff', claude);
      writeFileSync(join(s.work, EDITED), EDITED_BEFORE);
      s.submit('RUN-EDIT');
      const session = s;
      await s.until('the turn to end', () => session.has(turnEnded(1)));
      await s.finish();

      expect(readFileSync(join(s.work, EDITED), 'utf8')).toBe(
        EDITED_BEFORE.replace(EDIT_OLD, EDIT_NEW),
      );
      expect(readFileSync(join(s.work, WRITTEN), 'utf8')).toBe(WRITE_TEXT);
      // Default mode asks before each change; the request carries the diff, the host allows it.
      const asked = s.frames.filter(
        (f) => (f.message as { method?: string }).method === 'session/request_permission',
      );
      expect(asked.map((f) => f.message)).toEqual([
        expect.objectContaining({
          params: expect.objectContaining({
            toolCall: expect.objectContaining({
              toolCallId: 'toolu_edit',
              content: [
                expect.objectContaining({
                  type: 'diff',
                  path: join(s.work, EDITED),
                  newText: expect.stringContaining(EDIT_NEW),
                }),
              ],
            }),
          }),
        }),
        expect.objectContaining({
          params: expect.objectContaining({
            toolCall: expect.objectContaining({ toolCallId: 'toolu_write' }),
          }),
        }),
      ]);
      for (const tool of ['toolu_read', 'toolu_edit', 'toolu_write'])
        expect(s.has(toolCompleted(tool))).toBe(true);
      expect(s.server.used).toEqual([
        'read the file',
        'edit the file',
        'write a new file',
        'files changed',
      ]);
      expect(s.server.unmatched()).toEqual([]);
    });
  },
);

// ------------------------------------------------------------------------------------------------
// Every client profile × every scenario, driven the same way; what each must show is checked on the
// recordings (claude-profiles.spec.ts), these runs make them and check that the agent got through.

interface Drive {
  prompt: string;
  /** The scripted turn that answers the launch's tool results: the launch is over. */
  launched: string;
  /** Background tasks whose end the model must be told of before the session is settled. */
  tasks: number;
  then: (s: ClaudeSession) => Promise<void>;
}

const terminalTold = (s: ClaudeSession): Set<string> =>
  new Set(
    s.server.requests.flatMap((r) =>
      r.kind === 'conversation' ? terminalNotifications(r.lastReminders ?? '') : [],
    ),
  );

/** Waits for `n` task-notification cycles to have been answered and ended. */
const cyclesEnded = (s: ClaudeSession, n: number) =>
  s.until(`${n} task-notification cycle(s) to end`, () => {
    const used = s.server.used.filter((x) => x === notifications.name).length;
    return used >= n && s.facts.filter(idleOf('task-notification')).length >= n;
  });

/** The edit scenario is recorded in the raw profile only (its own test). */
type Launching = Exclude<keyof typeof SCRIPTS, 'edit'>;

const DRIVES: Record<Launching, Drive> = {
  shell: {
    prompt: 'RUN-SHELL',
    launched: 'shell launched',
    tasks: 1,
    then: async (s) => s.release('release-shell'),
  },
  subagent: {
    prompt: 'RUN-AGENT',
    launched: 'agent launched',
    tasks: 1,
    then: async (s) => {
      s.submit('SECOND');
      s.release('release-agent');
    },
  },
  monitor: {
    prompt: 'RUN-MONITOR',
    launched: 'monitor started',
    tasks: 1,
    then: async (s) => {
      s.release('arm-monitor');
      await cyclesEnded(s, 1);
      s.release('release-monitor');
    },
  },
  all: {
    prompt: 'RUN-ALL',
    launched: 'all launched',
    tasks: 3,
    then: async (s) => {
      s.submit('SECOND');
      for (const f of ['release-shell', 'release-monitor', 'release-agent']) s.release(f);
    },
  },
  twoShells: {
    prompt: 'RUN-TWO',
    launched: 'shells launched',
    tasks: 2,
    then: async (s) => {
      // One at a time: the first completion is reported while both could be the one.
      s.release('release-a');
      await s.until('the first shell to be reported', () => terminalTold(s).size >= 1);
      await cyclesEnded(s, 1);
      s.release('release-b');
    },
  },
};

describeReal('claude-agent-acp 0.101.0 in every client profile (recordings)', () => {
  const claude = install as ClaudeInstall;
  let s: ClaudeSession | undefined;

  afterEach(async () => {
    await s?.dispose();
    s = undefined;
  });

  const cases = (['plain', 'terminal', 'subagents', 'subagentsRaw', 'v2', 'raw'] as const).flatMap(
    (profile) =>
      (Object.keys(DRIVES) as Launching[])
        // The raw profile's other scenarios are the detailed tests above; with subagents as
        // child sessions, raw task messages change only the subagent's ways.
        .filter((scenario) => profile !== 'raw' || scenario === 'twoShells')
        .filter(
          (scenario) => profile !== 'subagentsRaw' || scenario === 'subagent' || scenario === 'all',
        )
        .map((scenario) => [profile, scenario] as const),
  );

  it.each(cases)(
    '%s profile, %s: the agent gets through, every task reported',
    async (profile, scenario) => {
      const drive = DRIVES[scenario];
      s = await ClaudeSession.start(scenario, 'handoff', claude, profile);
      s.detachShadow();
      const session = s;
      s.submit(drive.prompt);
      await s.until(
        'the launch to be answered and the human cycle to end',
        () =>
          session.server.used.includes(drive.launched) &&
          (session.has(idleOf('human', 1)) || session.has(turnEnded(1))),
      );
      await drive.then(s);
      await s.until(
        'every task reported and every cycle ended',
        () =>
          terminalTold(session).size >= drive.tasks &&
          session.facts.filter(idleOf('task-notification')).length >=
            session.server.used.filter((x) => x === notifications.name).length &&
          session.session().turn === null &&
          session.session().queue.length === 0,
      );
      await s.finish();
      expect(s.server.unmatched()).toEqual([]);
    },
  );
});
