import { negotiate, reduceFrames, type FactBody } from '../src';
import { EXPECTED } from '@baton/testing';
import { assertValidFact, loadFixture } from './helpers';

const run = (name: string): FactBody[] => reduceFrames(loadFixture(name)).facts;
const ofType = <T extends FactBody['type']>(facts: FactBody[], type: T) =>
  facts.filter((f): f is Extract<FactBody, { type: T }> => f.type === type);

/** Each case: the rule it proves and the fixture that proves it. */
const CASES: [rule: string, fixture: string][] = [
  [
    'claude: a foreground Agent subagent and its stamped children are foreground, nothing registers',
    'claude-subagent-foreground',
  ],
  [
    'claude: a background Agent registers at its async launch; children are background; raw task_notification ends it',
    'claude-subagent-background-raw',
  ],
  [
    'claude: without raw SDK messages a background subagent registers unattested; the task-notification cycle retires it for display only (sole candidate)',
    'claude-subagent-background-plain',
  ],
  [
    'claude: a run_in_background Bash registers under its SDK task id; the raw notification after the turn ends it',
    'claude-shell-background-raw',
  ],
  [
    'claude: a run_in_background Bash without raw messages registers under its launch id; the task-notification cycle names it the sole candidate',
    'claude-shell-background-plain',
  ],
  ['claude: a completed TaskStop naming a registered task stops it', 'claude-shell-taskstop'],
  [
    'claude: a Monitor registers at task_started; event cycles are not completions; task_updated ends it',
    'claude-monitor-raw',
  ],
  [
    'claude: a Monitor without raw messages: each event cycle names it a candidate that may be none (possibly finished, never retired)',
    'claude-monitor-plain',
  ],
  [
    'claude: each human-origin idle carries the generation of its own prompt while an earlier one is held open',
    'claude-handoff-held-prompt',
  ],
  [
    'claude (real 0.101.0): a background Bash registers at task_started under its task id, before its launch card completes; task_updated ends it after the turn',
    'claude-real-shell',
  ],
  [
    'claude (real 0.101.0): a background Agent and its stamped child are background; a successor prompt releases the held one; the subagent ends by its task id',
    'claude-real-subagent',
  ],
  [
    'claude (real 0.101.0): ToolSearch then Monitor; an event cycle is an idle, not a completion; task_updated ends the watch',
    'claude-real-monitor',
  ],
  [
    'claude (real 0.101.0): shell, subagent and Monitor launched in one message each register and end by their own task id',
    'claude-real-all',
  ],
  [
    'claude (real 0.101.0, plain v1 client): shell — see docs/recordings.md',
    'claude-real-plain-shell',
  ],
  [
    'claude (real 0.101.0, plain v1 client): subagent — see docs/recordings.md',
    'claude-real-plain-subagent',
  ],
  [
    'claude (real 0.101.0, plain v1 client): monitor — see docs/recordings.md',
    'claude-real-plain-monitor',
  ],
  ['claude (real 0.101.0, plain v1 client): all — see docs/recordings.md', 'claude-real-plain-all'],
  [
    'claude (real 0.101.0, plain v1 client): twoShells — see docs/recordings.md',
    'claude-real-plain-twoShells',
  ],
  [
    'claude (real 0.101.0, terminal_output client): shell — see docs/recordings.md',
    'claude-real-terminal-shell',
  ],
  [
    'claude (real 0.101.0, terminal_output client): subagent — see docs/recordings.md',
    'claude-real-terminal-subagent',
  ],
  [
    'claude (real 0.101.0, terminal_output client): monitor — see docs/recordings.md',
    'claude-real-terminal-monitor',
  ],
  [
    'claude (real 0.101.0, terminal_output client): all — see docs/recordings.md',
    'claude-real-terminal-all',
  ],
  [
    'claude (real 0.101.0, terminal_output client): twoShells — see docs/recordings.md',
    'claude-real-terminal-twoShells',
  ],
  [
    'claude (real 0.101.0, subagents: {} client): shell — see docs/recordings.md',
    'claude-real-subagents-shell',
  ],
  [
    'claude (real 0.101.0, subagents: {} client): subagent — see docs/recordings.md',
    'claude-real-subagents-subagent',
  ],
  [
    'claude (real 0.101.0, subagents: {} client): monitor — see docs/recordings.md',
    'claude-real-subagents-monitor',
  ],
  [
    'claude (real 0.101.0, subagents: {} client): all — see docs/recordings.md',
    'claude-real-subagents-all',
  ],
  [
    'claude (real 0.101.0, subagents: {} client): twoShells — see docs/recordings.md',
    'claude-real-subagents-twoShells',
  ],
  [
    'claude (real 0.101.0, subagents + raw): task_started names an Agent tool_use_id the parent never shows; the child session registers by its id and ends by its task',
    'claude-real-subagentsRaw-subagent',
  ],
  [
    'claude (real 0.101.0, subagents + raw): all three, each ended by its own id',
    'claude-real-subagentsRaw-all',
  ],
  [
    'claude (real 0.101.0, raw SDK task messages): two background shells, each ended by its own task id',
    'claude-real-twoShells',
  ],
  [
    'claude: updates replayed by session/load are history and produce no facts',
    'claude-session-load-history',
  ],
  [
    'claude: an adapter that predates lineage claims no ownership for top-level tools',
    'claude-legacy-no-lineage',
  ],
  [
    'codex: a spawnAgent child registers unattested by thread id; a wait card with its terminal state ends it',
    'codex-subagent-1x',
  ],
  [
    'codex: a 2.x spawnAgent without _meta registers by title and thread id and does not end at turn end',
    'codex-subagent-2x-no-end',
  ],
  [
    'codex: a child ends when it ends — an activity card of its thread saying completed retires it (reconstructed 1.x shapes)',
    'codex-subagent-activity-end',
  ],
  ['codex: exec commands are foreground tools, never background work', 'codex-exec-command'],
  [
    'codex (real codex-acp 0.16.0): a plain turn is message output and the turn end',
    'codex-real-plain',
  ],
  [
    'codex (real 0.16.0): an exec_command is a foreground tool card, started in progress and completed',
    'codex-real-exec',
  ],
  [
    'codex (real 0.16.0): a spawn_agent child and its wait_agent put nothing on the wire — no card, no child tool; only the turn',
    'codex-real-subagent',
  ],
  [
    'codex (real 0.16.0): a command outliving its yield keeps its card in progress past the turn; at the turn end it is registered as a shell (unattested) and reported possibly finished, since its end is never reported',
    'codex-real-longExec',
  ],
  [
    'codex (real 0.16.0, terminal_output client): a plain turn is as without it',
    'codex-real-terminal-plain',
  ],
  [
    'codex (real 0.16.0, terminal_output client): terminal_info, terminal_output and terminal_exit ride the exec card; still a foreground tool',
    'codex-real-terminal-exec',
  ],
  [
    'codex (real 0.16.0, terminal_output client): a command left running — terminal_exit never comes either; the shell carries its terminal id',
    'codex-real-terminal-longExec',
  ],
  [
    'codex (real 0.16.0, terminal_output client): the child is as invisible as without it',
    'codex-real-terminal-subagent',
  ],
  [
    'generic: tools without lineage are foreground; plan, thought and message are output; unknown updates are ignored',
    'generic-turn',
  ],
  [
    'ACP v2 asked and answered: info/capabilities identify the agent; the prompt answered with its messageId is no turn end',
    'claude-v2-initialize',
  ],
  [
    'ACP v2 (real 0.101.0): the shell registers when state_update background lists its terminal and ends when the list drops it; the turn ends at state_update idle with its stopReason',
    'claude-v2-shell',
  ],
  [
    'ACP v2 (real 0.101.0): a subagent registers when the list names its session and ends when the list drops it',
    'claude-v2-subagent',
  ],
  [
    'ACP v2 (real 0.101.0): a Monitor is never listed, so never registered; its event cycles are idles',
    'claude-v2-monitor',
  ],
  ['ACP v2 (real 0.101.0): shell, subagent and Monitor — the list names two', 'claude-v2-all'],
  ['ACP v2 (real 0.101.0): two shells, each retired by the list', 'claude-v2-twoShells'],
  ['generic: a cancelled prompt ends its turn with stopReason cancelled', 'generic-cancelled'],
  [
    'claude (real 0.101.0): Read, then an Edit and a Write asked and allowed: foreground tools of the turn, nothing registered',
    'claude-real-edit',
  ],
  ['qwen (real 0.24.4): a plain answer, nothing registered', 'qwen-real-plain'],
  [
    'qwen (real 0.24.4): a shell command asked and allowed once: a foreground tool of the turn',
    'qwen-real-exec',
  ],
  [
    'qwen (real 0.24.4): a file write asked (a diff) and allowed once: a foreground tool',
    'qwen-real-edit',
  ],
  [
    'qwen (real 0.24.4): a background shell registers by its task id when its card completes and ends by `_meta.backgroundTask`, identified',
    'qwen-real-background',
  ],
  [
    'qwen (real 0.24.4): a cancelled command: its card fails, the turn ends cancelled',
    'qwen-real-cancel',
  ],
  ['opencode (real 1.18.33): a plain answer, generic, nothing registered', 'opencode-real-plain'],
  [
    'opencode (real 1.18.33): a bash command asked and allowed once: a foreground tool of the turn',
    'opencode-real-exec',
  ],
  [
    'opencode (real 1.18.33): a write asked and allowed once: a foreground tool',
    'opencode-real-edit',
  ],
  [
    'opencode (real 1.18.33): a task subagent is a foreground card of the turn; its child sends nothing',
    'opencode-real-subagent',
  ],
  [
    'opencode (real 1.18.33): a cancelled command: its card completes aborted, the turn ends cancelled',
    'opencode-real-cancel',
  ],
];

describe('dialect fixtures', () => {
  it('covers every fixture file with a rule', () => {
    expect(CASES.map(([, f]) => f).sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  it.each(CASES)('%s', (_rule, fixture) => {
    const facts = run(fixture);
    expect(facts).toEqual(EXPECTED[fixture]);
    facts.forEach(assertValidFact);
  });
});

describe('rules stated directly', () => {
  it('usage: a usage_update reports the context window and cost, the prompt answer the turn’s tokens; nothing unusable is reported', () => {
    const base = loadFixture('generic-turn');
    const at = base.at(-1)!.at;
    const update = (u: Record<string, unknown>, meta?: Record<string, unknown>) => ({
      direction: 'agent->client' as const,
      at,
      message: {
        jsonrpc: '2.0',
        method: 'session/update',
        params: { sessionId: 's', update: { sessionUpdate: 'usage_update', ...u, _meta: meta } },
      },
    });
    const generic = reduceFrames([
      ...base,
      update({ used: 5, size: 100, cost: { amount: 0.25, currency: 'EUR' } }),
      update({ used: -1, size: 1.5, cost: { amount: 'lots' } }),
      update({ cost: { amount: 0 } }),
    ]).facts;
    expect(ofType(generic, 'usage.reported').slice(-2)).toEqual([
      {
        type: 'usage.reported',
        data: { used: 5, size: 100, cost: { amount: 0.25, currency: 'EUR' } },
      },
      { type: 'usage.reported', data: { cost: { amount: 0, currency: '' } } },
    ]);
    // Claude: a subagent's usage (stamped with its parent tool) is its own context, not the session's.
    const claude = loadFixture('claude-real-edit');
    const reported = (extra: ReturnType<typeof update>[]) =>
      ofType(reduceFrames([...claude, ...extra]).facts, 'usage.reported').length;
    const before = reported([]);
    expect(reported([update({ used: 7 }, { claudeCode: { parentToolUseId: 'toolu_read' } })])).toBe(
      before,
    );
    expect(reported([update({ used: 7 })])).toBe(before + 1);
    // Codex answers a prompt without usage: no tokens are made up.
    expect(
      ofType(run('codex-real-plain'), 'usage.reported').filter((f) => f.data.tokens !== undefined),
    ).toEqual([]);
    expect(ofType(run('claude-real-edit'), 'usage.reported').at(-1)).toEqual({
      type: 'usage.reported',
      data: { tokens: { input: 400, output: 40, cachedRead: 0, cachedWrite: 0, total: 440 } },
    });
  });

  it('codex: a command left running ends by its card id if its card ever completes (0.16.0 never does; a later version may)', () => {
    const frames = loadFixture('codex-real-longExec');
    const last = frames.at(-1)!;
    const completed = {
      direction: 'agent->client' as const,
      at: last.at,
      message: {
        jsonrpc: '2.0',
        method: 'session/update',
        params: {
          sessionId: 'sess-real',
          update: {
            sessionUpdate: 'tool_call_update',
            toolCallId: 'call_scripted1',
            status: 'completed',
          },
        },
      },
    };
    const facts = reduceFrames([...frames, completed, completed]).facts;
    expect(ofType(facts, 'background.ended')).toEqual([
      {
        type: 'background.ended',
        data: { status: 'unknown', candidates: ['call_scripted1'], mayBeNone: true },
      },
      {
        type: 'background.ended',
        data: {
          workId: 'call_scripted1',
          toolCallId: 'call_scripted1',
          kind: 'shell',
          status: 'completed',
        },
      },
    ]);
    // A command that completes within its turn is never registered.
    expect(ofType(run('codex-real-exec'), 'background.started')).toEqual([]);
  });

  it('claude: the work is registered before its launch card completes', () => {
    for (const name of [
      'claude-subagent-background-raw',
      'claude-shell-background-plain',
      'claude-monitor-plain',
      'claude-real-shell',
      'claude-real-subagent',
      'claude-real-monitor',
    ]) {
      const facts = run(name);
      const started = facts.findIndex((f) => f.type === 'background.started');
      const launchId = ofType(facts, 'background.started')[0]?.data.toolCallId;
      const cardDone = facts.findIndex(
        (f) =>
          f.type === 'tool.updated' &&
          f.data.toolCallId === launchId &&
          f.data.status === 'completed',
      );
      expect(started).toBeGreaterThanOrEqual(0);
      expect(started).toBeLessThan(cardDone);
    }
  });

  it('claude: a task-notification cycle end is an idle, never an identified completion', () => {
    const facts = run('claude-monitor-plain');
    expect(
      ofType(facts, 'foreground.idle').filter((f) => f.data.origin === 'task-notification'),
    ).toHaveLength(2);
    // A live Monitor makes every such cycle possibly one of its events: "maybe none".
    expect(ofType(facts, 'background.ended').map((f) => f.data)).toEqual([
      { status: 'unknown', candidates: ['toolu_M'], mayBeNone: true },
      { status: 'unknown', candidates: ['toolu_M'], mayBeNone: true },
    ]);
  });

  it('claude: with raw task messages (attested work) a task-notification cycle names no candidates', () => {
    for (const name of ['claude-real-shell', 'claude-real-all', 'claude-monitor-raw']) {
      expect(ofType(run(name), 'background.ended').every((f) => f.data.workId)).toBe(true);
    }
  });

  it('claude: a background subagent child message is not foreground output', () => {
    const plain = run('claude-subagent-background-plain');
    const fg = run('claude-subagent-foreground');
    // "Reviewing now." (14 chars) is the child message in both recordings.
    expect(ofType(plain, 'foreground.output').map((f) => f.data.chars)).not.toContain(14);
    expect(ofType(fg, 'foreground.output').map((f) => f.data.chars)).toContain(14);
  });

  it('every background.ended a dialect emits names its work, or the candidates it could be', () => {
    for (const name of Object.keys(EXPECTED)) {
      for (const f of ofType(run(name), 'background.ended')) {
        expect(f.data.workId ?? f.data.toolCallId ?? f.data.candidates).toBeDefined();
      }
    }
  });
});

describe('protocol version', () => {
  /** The real v1 shell session, its initialize answer saying `protocolVersion` instead of 1. */
  const answer = (protocolVersion: unknown) => {
    const frames = loadFixture('claude-real-shell');
    const init = frames[1]!.message as { result: Record<string, unknown> };
    const result: Record<string, unknown> = { ...init.result, protocolVersion };
    if (protocolVersion === undefined) delete result.protocolVersion;
    return [frames[0]!, { ...frames[1]!, message: { ...init, result } }, ...frames.slice(2)];
  };

  it('a v2 answer to a v1 request is refused, named, and never read by the nearest dialect', () => {
    const r = reduceFrames(answer(2));
    expect(r.state.refused).toBe(
      'the agent answered initialize with protocolVersion 2; Baton asked for ACP protocol version 1 and speaks no other in this session',
    );
    expect(r.state.dialect).toBeUndefined();
    expect(r.facts).toEqual([]);
  });

  it('a v1 answer to a v2 request is refused too: Baton speaks the version it asked for', () => {
    const frames = loadFixture('claude-v2-shell');
    const init = frames[1]!.message as { result: Record<string, unknown> };
    const v1 = [
      frames[0]!,
      { ...frames[1]!, message: { ...init, result: { ...init.result, protocolVersion: 1 } } },
      ...frames.slice(2),
    ];
    const r = reduceFrames(v1);
    expect(r.state.refused).toMatch(/Baton asked for ACP protocol version 2 and speaks no other/);
    expect(r.facts).toEqual([]);
  });

  it.each([[2], [0], ['1'], [undefined], [1.5]])(
    'protocolVersion %p in an otherwise real v1 session: refused, no facts at all',
    (v) => {
      const r = reduceFrames(answer(v));
      expect(r.state.refused).toMatch(/Baton asked for ACP protocol version 1 and speaks no other/);
      expect(r.facts).toEqual([]);
    },
  );

  it('the same session answered in v1 is read', () => {
    const r = reduceFrames(answer(1));
    expect(r.state.refused).toBeUndefined();
    expect(r.facts).toEqual(run('claude-real-shell'));
  });
});

describe('capabilities from initialize', () => {
  const init = (name: string, version?: string, meta?: object) => ({
    protocolVersion: 1,
    agentInfo: { name, ...(version ? { version } : {}) },
    agentCapabilities: meta ? { _meta: meta } : {},
  });
  const allRaw = { method: 'session/new', meta: { claudeCode: { emitRawSDKMessages: true } } };

  it('claude attests its kinds and handoff only with raw SDK task messages enabled', () => {
    const agent = init('@agentclientprotocol/claude-agent-acp', '0.101.0', {
      claudeCode: { promptQueueing: true },
    });
    expect(negotiate(agent, allRaw)).toMatchObject({
      dialect: 'claude',
      promptQueueing: true,
      handoff: true,
      attestedKinds: ['shell', 'subagent', 'monitor'],
    });
    expect(negotiate(agent, { method: 'session/new' })).toMatchObject({
      handoff: false,
      attestedKinds: [],
    });
  });

  it('claude: a raw filter without task_started (no launch link) or restricted by origin attests nothing', () => {
    const agent = init('@agentclientprotocol/claude-agent-acp', '0.101.0');
    const only = (filters: object[]) => ({
      method: 'session/new',
      meta: { claudeCode: { emitRawSDKMessages: filters } },
    });
    expect(
      negotiate(agent, only([{ type: 'system', subtype: 'task_notification' }])).attestedKinds,
    ).toEqual([]);
    expect(
      negotiate(agent, only([{ type: 'system', origin: { kind: 'human' } }])).attestedKinds,
    ).toEqual([]);
    expect(negotiate(agent, only([{ type: 'system' }])).attestedKinds).toHaveLength(3);
  });

  it('claude before raw SDK messages (0.25) or without a version attests nothing', () => {
    expect(negotiate(init('@zed-industries/claude-agent-acp', '0.25.0'), allRaw).handoff).toBe(
      false,
    );
    expect(negotiate(init('@agentclientprotocol/claude-agent-acp'), allRaw).handoff).toBe(false);
  });

  it('the dialect follows what the agent reports, not its display title', () => {
    expect(negotiate(init('@agentclientprotocol/codex-acp', '2.6.0')).dialect).toBe('codex');
    // What the real @zed-industries/codex-acp 0.16.0 answers: the bare name.
    expect(negotiate(init('codex-acp', '0.16.0')).dialect).toBe('codex');
    expect(
      negotiate(init('my-agent', '1.0.0', { claudeCode: { promptQueueing: false } })).dialect,
    ).toBe('claude');
    expect(negotiate({ agentInfo: { name: 'x', title: 'Claude Agent' } }).dialect).toBe('generic');
    expect(negotiate(undefined).dialect).toBe('generic');
  });

  it('codex and generic attest nothing', () => {
    for (const name of ['@agentclientprotocol/codex-acp', 'codex-acp', 'goose']) {
      expect(negotiate(init(name, '9.9.9'), allRaw)).toMatchObject({
        handoff: false,
        attestedKinds: [],
        promptQueueing: false,
      });
    }
  });
});
