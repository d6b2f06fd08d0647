import fc from 'fast-check';
import { initialAcpState, reduceFrame, type AcpState, type FactBody, type Frame } from '../src';
import { assertValidFact, loadFixture } from './helpers';

/**
 * Random frames built from the vocabulary real adapters use (tool names, lineage stamps, hook
 * responses, raw SDK task messages, origins) with fields dropped, swapped or replaced by noise,
 * after a random real handshake so every dialect gets exercised.
 */

const ids = fc.constantFrom('t1', 't2', 't3', 'task_a', 'bash_1', '', 'x'.repeat(300));
const noise = fc.anything({ maxDepth: 2 });

const claudeCode = fc.record(
  {
    toolName: fc.oneof(
      fc.constantFrom('Agent', 'Task', 'Bash', 'Monitor', 'TaskStop', 'Read', 'PowerShell'),
      noise,
    ),
    parentToolUseId: fc.oneof(ids, noise),
    toolResponse: fc.oneof(
      fc.record(
        {
          status: fc.constantFrom('async_launched', 'completed'),
          agentId: ids,
          backgroundTaskId: ids,
          taskId: ids,
        },
        { requiredKeys: [] },
      ),
      noise,
    ),
  },
  { requiredKeys: [] },
);

const update = fc.oneof(
  fc.record(
    {
      sessionUpdate: fc.constantFrom('tool_call', 'tool_call_update'),
      toolCallId: fc.oneof(ids, noise),
      title: fc.oneof(fc.constantFrom('spawnAgent', 'wait', 'Terminal'), noise),
      kind: fc.oneof(fc.string(), noise),
      status: fc.oneof(
        fc.constantFrom('pending', 'in_progress', 'completed', 'failed', 'cancelled', 'paused'),
        noise,
      ),
      rawInput: fc.oneof(
        fc.record(
          {
            run_in_background: fc.boolean(),
            command: fc.oneof(fc.string(), noise),
            task_id: ids,
            receiverThreadIds: fc.array(fc.oneof(ids, noise), { maxLength: 2 }),
            agentsStates: fc.dictionary(
              fc.constantFrom('t1', 'task_a'),
              fc.record({ status: fc.constantFrom('running', 'completed', 'errored', 'notFound') }),
            ),
          },
          { requiredKeys: [] },
        ),
        noise,
      ),
      _meta: fc.oneof(
        fc.record(
          {
            claudeCode,
            terminal_info: fc.oneof(fc.record({ terminal_id: ids }), noise),
            terminal_exit: fc.oneof(
              fc.record(
                { exit_code: fc.oneof(fc.constant(null), fc.integer()), signal: noise },
                { requiredKeys: [] },
              ),
              noise,
            ),
            codex: fc.oneof(
              fc.record({
                subagent: fc.record(
                  {
                    threadId: ids,
                    activity: fc.constantFrom('started', 'completed', 'interrupted'),
                  },
                  { requiredKeys: [] },
                ),
              }),
              noise,
            ),
          },
          { requiredKeys: [] },
        ),
        noise,
      ),
    },
    { requiredKeys: ['sessionUpdate'] },
  ),
  // Subagents profile: a child session announced, running or idle.
  fc.record(
    {
      sessionUpdate: fc.constant('subagent_update'),
      sessionId: fc.oneof(ids, noise),
      title: fc.oneof(fc.string(), noise),
      state: fc.oneof(
        fc.record(
          {
            state: fc.constantFrom('running', 'idle'),
            stopReason: fc.constantFrom('end_turn', 'cancelled', 'refusal', 'weird'),
          },
          { requiredKeys: [] },
        ),
        noise,
      ),
    },
    { requiredKeys: ['sessionUpdate'] },
  ),
  fc.record(
    {
      sessionUpdate: fc.constantFrom(
        'agent_message_chunk',
        'agent_thought_chunk',
        'plan',
        'usage_update',
        'subagent_update',
        'async_task_spawned',
        'state_update',
        'terminal_update',
      ),
      content: fc.oneof(fc.record({ type: fc.constant('text'), text: fc.string() }), noise),
      // v2: state_update's list and state, terminal_update's fields.
      state: fc.oneof(fc.constantFrom('running', 'idle'), noise),
      stopReason: fc.oneof(fc.constantFrom('end_turn', 'cancelled'), noise),
      background: fc.oneof(
        fc.array(
          fc.record(
            {
              type: fc.constantFrom('terminal', 'subagent', 'tool_call', '_claude/task', 'x'),
              terminalId: ids,
              sessionId: ids,
              toolCallId: ids,
              taskId: ids,
            },
            { requiredKeys: ['type'] },
          ),
          { maxLength: 3 },
        ),
        noise,
      ),
      terminalId: fc.oneof(ids, noise),
      command: fc.oneof(fc.string(), noise),
      exitStatus: fc.oneof(fc.constant({}), noise),
      _meta: fc.oneof(
        fc.record(
          {
            '_claude/origin': fc.oneof(
              fc.record(
                {
                  kind: fc.oneof(fc.constantFrom('human', 'task-notification'), noise),
                  subkind: fc.oneof(fc.constant('peer-send-message'), noise),
                },
                { requiredKeys: ['kind'] },
              ),
              noise,
            ),
            claudeCode: fc.record({ parentToolUseId: fc.oneof(ids, noise) }, { requiredKeys: [] }),
          },
          { requiredKeys: [] },
        ),
        noise,
      ),
    },
    { requiredKeys: ['sessionUpdate'] },
  ),
);

const sdkMessage = fc.record(
  {
    type: fc.oneof(fc.constant('system'), noise),
    subtype: fc.constantFrom('task_started', 'task_updated', 'task_notification', 'other'),
    task_id: fc.oneof(ids, noise),
    tool_use_id: fc.oneof(ids, noise),
    is_backgrounded: fc.boolean(),
    status: fc.oneof(fc.constantFrom('completed', 'failed', 'stopped', 'killed'), noise),
    patch: fc.oneof(
      fc.record(
        { status: fc.constantFrom('completed', 'failed', 'killed'), is_backgrounded: fc.boolean() },
        { requiredKeys: [] },
      ),
      noise,
    ),
  },
  { requiredKeys: [] },
);

const message = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      jsonrpc: fc.constant('2.0'),
      method: fc.constant('session/update'),
      // Updates of the session, or of a child session (ids also name subagents' sessions).
      params: fc.record({
        sessionId: fc.oneof(fc.constant('sess-1'), fc.constant('sess-real'), ids),
        update,
      }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      jsonrpc: fc.constant('2.0'),
      method: fc.constant('_claude/sdkMessage'),
      params: fc.record({ message: sdkMessage }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      jsonrpc: fc.constant('2.0'),
      id: fc.oneof(fc.integer({ min: 0, max: 6 }), fc.string()),
      result: noise,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      jsonrpc: fc.constant('2.0'),
      id: fc.integer({ min: 0, max: 6 }),
      method: fc.constantFrom('session/prompt', 'session/load', 'session/new'),
      params: noise,
    }),
  },
  { weight: 1, arbitrary: noise },
);

const frame: fc.Arbitrary<Frame> = fc.record({
  direction: fc.constantFrom('agent->client' as const, 'client->agent' as const),
  at: fc.constant('2026-11-10T10:00:00.000Z'),
  message,
});

const HANDSHAKES = [
  'claude-subagent-background-raw',
  'claude-shell-background-plain',
  'claude-monitor-plain',
  'claude-real-subagents-all',
  'claude-real-terminal-twoShells',
  'codex-subagent-activity-end',
  'claude-v2-all',
  'claude-legacy-no-lineage',
  'codex-subagent-1x',
  'generic-turn',
];

/** The handshake and first prompt of a real recording, so the random tail runs in a live turn. */
const prefixes = HANDSHAKES.map((name) => {
  const frames = loadFixture(name);
  const promptAt = frames.findIndex(
    (f) => (f.message as { method?: string }).method === 'session/prompt',
  );
  return frames.slice(0, promptAt + 1);
});

const fold = (frames: Frame[]): FactBody[] => {
  let state: AcpState = initialAcpState();
  const facts: FactBody[] = [];
  for (const f of frames) {
    const r = reduceFrame(state, f);
    state = r.state;
    facts.push(...r.facts);
  }
  return facts;
};

const scenario = fc.tuple(
  fc.integer({ min: 0, max: prefixes.length - 1 }),
  fc.array(frame, { maxLength: 40 }),
  // Real frames of every fixture mixed in, so registrations exist for the noise to hit.
  fc.array(fc.constantFrom(...HANDSHAKES.flatMap((n) => loadFixture(n))), { maxLength: 20 }),
  fc.array(fc.nat(), { maxLength: 60 }),
);

const interleave = (a: Frame[], b: Frame[], picks: number[]): Frame[] => {
  const out: Frame[] = [];
  let i = 0;
  let j = 0;
  for (const p of picks) {
    if (p % 2 === 0 && i < a.length) out.push(a[i++] as Frame);
    else if (j < b.length) out.push(b[j++] as Frame);
  }
  return out.concat(a.slice(i), b.slice(j));
};

describe('dialect properties', () => {
  it('random frame noise never throws and every fact is a valid protocol fact', () => {
    fc.assert(
      fc.property(scenario, ([p, random, real, picks]) => {
        const facts = fold([...(prefixes[p] as Frame[]), ...interleave(random, real, picks)]);
        facts.forEach(assertValidFact);
      }),
      { numRuns: 400 },
    );
  });

  it('a background.ended names work the same dialect registered (identified at most once), or only live unattested candidates', () => {
    fc.assert(
      fc.property(scenario, ([p, random, real, picks]) => {
        const facts = fold([...(prefixes[p] as Frame[]), ...interleave(random, real, picks)]);
        const registered = new Map<string, boolean>();
        const ended = new Set<string>();
        /** Sole candidates of an unidentified end: retired for display, never offered again. */
        const presumed = new Set<string>();
        for (const f of facts) {
          if (f.type === 'background.started') {
            // A child session that runs again after its idle (a resumed subagent) registers again.
            registered.set(f.data.work.id, f.data.attested);
            ended.delete(f.data.work.id);
          }
          if (f.type !== 'background.ended') continue;
          if (f.data.candidates !== undefined) {
            expect(f.data.workId).toBeUndefined();
            expect(f.data.toolCallId).toBeUndefined();
            expect(f.data.status).toBe('unknown');
            expect(f.data.candidates.length).toBeGreaterThan(0);
            for (const id of f.data.candidates) {
              // Attested work ends by its own identity: never a guess's candidate.
              expect(registered.get(id)).toBe(false);
              expect(ended.has(id)).toBe(false);
              expect(presumed.has(id)).toBe(false);
            }
            if (f.data.candidates.length === 1 && f.data.mayBeNone !== true)
              presumed.add(f.data.candidates[0]!);
            continue;
          }
          expect(f.data.workId).toBeDefined();
          const id = f.data.workId as string;
          expect(registered.has(id)).toBe(true);
          expect(ended.has(id)).toBe(false);
          ended.add(id);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('raw JSON of any shape is ignored without throwing', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            direction: fc.constantFrom('agent->client' as const, 'client->agent' as const),
            at: fc.constant('2026-11-10T10:00:00.000Z'),
            message: fc.jsonValue(),
          }),
          { maxLength: 30 },
        ),
        (frames) => {
          fold(frames).forEach(assertValidFact);
        },
      ),
    );
  });
});
