// Fold benchmark for libs/activity: replay a recorded stream of 1,000,000 entries over 10,000
// sessions (1,000 tasks x 10 sessions) through fold (evolve + sequenced updates), and measure the
// heap held per idle session. Run alone: `npx tsx --expose-gc bench/fold.bench.ts`.
import { SCHEMA_VERSION, type Capabilities, type StreamEntry } from '@baton/protocol';
import { decide, fold, initialTaskState, type TaskState } from '@baton/activity';
import type { BenchResult } from './lib';

const CAPS: Capabilities = {
  agent: { name: 'claude-agent-acp', version: '0.101.0' },
  dialect: 'claude',
  promptQueueing: true,
  handoff: false,
  attestedKinds: ['subagent', 'shell', 'monitor'],
  unambiguousCompletionKinds: [],
};

/** Records a realistic stream: executions, prompts and their decisions, output, tools, background work. */
export function recordStream(
  tasks: number,
  sessionsPerTask: number,
  target: number,
): StreamEntry[][] {
  const streams: StreamEntry[][] = [];
  const perTask = Math.ceil(target / tasks);
  let seq = 0;
  for (let t = 0; t < tasks; t++) {
    const taskId = `task-${t}`;
    let state: TaskState = initialTaskState(taskId);
    const out: StreamEntry[] = [];
    const push = (e: StreamEntry) => {
      out.push(e);
      state = fold(state, e).state;
      for (const d of decide(state)) {
        const entry = {
          v: SCHEMA_VERSION,
          taskId,
          writer: { role: 'projector', instance: 'p', seq: ++seq },
          ...d,
        } as StreamEntry;
        out.push(entry);
        state = fold(state, entry).state;
      }
    };
    const fact = (sessionId: string, type: string, data: unknown) =>
      push({
        v: SCHEMA_VERSION,
        taskId,
        sessionId,
        executionId: `${sessionId}-x`,
        generation: 1,
        writer: { role: 'worker', instance: 'w', seq: ++seq },
        type,
        data,
      } as StreamEntry);
    for (let s = 0; s < sessionsPerTask; s++) {
      fact(`s${s}`, 'execution.started', { startedAt: '2026-11-30T00:00:00Z' });
      fact(`s${s}`, 'capabilities.negotiated', CAPS);
    }
    for (let round = 0; out.length < perTask; round++) {
      for (let s = 0; s < sessionsPerTask && out.length < perTask; s++) {
        const sessionId = `s${s}`;
        const promptId = `${sessionId}-p${round}`;
        push({
          v: SCHEMA_VERSION,
          taskId,
          sessionId,
          writer: { role: 'gateway', instance: 'g', seq: ++seq },
          type: 'prompt.submit',
          data: {
            commandId: `c${seq}`,
            promptId,
            idempotencyKey: promptId,
            text: 'Fix the failing test in src/app.ts',
            origin: 'human',
          },
        } as StreamEntry);
        const gen = state.sessions[sessionId]!.turn!.generation;
        fact(sessionId, 'prompt.dispatched', { promptId, admissionGeneration: gen });
        for (let i = 0; i < 8; i++)
          fact(sessionId, 'foreground.output', { channel: i % 3 === 0 ? 'thought' : 'message' });
        const tool = `toolu_${round}`;
        fact(sessionId, 'tool.started', {
          toolCallId: tool,
          ownership: 'foreground',
          title: 'Read file',
        });
        fact(sessionId, 'tool.updated', { toolCallId: tool, status: 'completed' });
        // What the worker passes on of the agent's usage: the window mid-turn, tokens at the end.
        fact(sessionId, 'usage.reported', { used: 20_000 + round * 500, size: 200_000 });
        if (round % 4 === 0) {
          const id = `subagent:${round}`;
          fact(sessionId, 'background.started', {
            attested: true,
            toolCallId: `launch_${round}`,
            work: {
              kind: 'subagent',
              id,
              label: 'Review',
              chat: `ahp-chat:/${id}`,
              startedAt: '2026-11-30T00:00:00Z',
            },
          });
          fact(sessionId, 'tool.started', {
            toolCallId: `child_${round}`,
            parentToolCallId: `launch_${round}`,
          });
          fact(sessionId, 'background.ended', { workId: id, status: 'completed' });
        }
        fact(sessionId, 'foreground.idle', { origin: 'human', admissionGeneration: gen });
        fact(sessionId, 'usage.reported', {
          cost: { amount: round / 100, currency: 'USD' },
          tokens: { input: 20_000 + round * 500, output: 400, total: 20_400 + round * 500 },
        });
        fact(sessionId, 'turn.ended', { admissionGeneration: gen, stopReason: 'end_turn' });
      }
    }
    streams.push(out);
  }
  return streams;
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

export async function runFoldBench(): Promise<BenchResult[]> {
  const TASKS = 1_000;
  const SESSIONS = 10;
  const streams = recordStream(TASKS, SESSIONS, 1_000_000);
  const total = streams.reduce((n, s) => n + s.length, 0);

  // Baseline in the same run: the cost of merely parsing the same entries from JSON.
  const texts = streams.map((s) => s.map((e) => JSON.stringify(e)));
  let t0 = process.hrtime.bigint();
  let parsed = 0;
  for (const s of texts) for (const line of s) parsed += JSON.parse(line) ? 1 : 0;
  const parseRate = (parsed * 1e9) / Number(process.hrtime.bigint() - t0);

  const rates: number[] = [];
  let states: TaskState[] = [];
  let updates = 0;
  for (let run = 0; run < 3; run++) {
    gc();
    t0 = process.hrtime.bigint();
    states = streams.map((stream) => {
      let st = initialTaskState(stream[0]!.taskId);
      for (const e of stream) {
        const f = fold(st, e);
        st = f.state;
        updates += f.updates.length;
      }
      return st;
    });
    rates.push((total * 1e9) / Number(process.hrtime.bigint() - t0));
  }
  const foldRate = Math.max(...rates);

  // Heap per idle session: the folded states hold 10,000 sessions, all idle (every turn ended).
  const idle = states
    .flatMap((s) => Object.values(s.sessions))
    .filter((s) => s.turn === null && !s.generating);
  if (idle.length !== TASKS * SESSIONS)
    throw new Error(`expected ${TASKS * SESSIONS} idle sessions, got ${idle.length}`);
  gc();
  const withStates = process.memoryUsage().heapUsed;
  states = [];
  idle.length = 0;
  gc();
  const without = process.memoryUsage().heapUsed;
  const perSession = (withStates - without) / (TASKS * SESSIONS);
  const hasGc = typeof (globalThis as { gc?: unknown }).gc === 'function';
  void updates;

  return [
    {
      name: `fold: ${total.toLocaleString('en-US')} entries over 10,000 sessions (evolve + updates), vs JSON.parse of the same entries`,
      value: foldRate,
      unit: 'entries/s',
      baseline: parseRate,
      ratio: foldRate / parseRate,
    },
    {
      name: 'fold: goal ≥ 1,000,000 entries/s in one process',
      value: foldRate,
      unit: 'entries/s',
      baseline: 1_000_000,
      ratio: foldRate / 1_000_000,
      goal: 1,
    },
    {
      name: `fold: heap per idle session${hasGc ? '' : ' (run with --expose-gc for an exact figure)'} (goal ≤ 2,048 B)`,
      value: perSession,
      unit: 'B',
      baseline: 2048,
      ratio: perSession / 2048,
    },
  ];
}

if (require.main === module) {
  void runFoldBench().then((r) => console.table(r));
}
