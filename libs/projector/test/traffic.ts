// Test traffic: a gateway submitting prompts and a worker playing each admitted prompt as a
// short turn (dispatch, output, a tool, idle, end), both writing with store.append as the real
// processes do. Per task, every append waits for the previous one (the writer's contract).
import type { StreamEntry } from '@baton/protocol';
import type { EventStore, StoredEntry } from '@baton/store';
import { waitFor } from '@baton/testing';
import {
  GENERIC_CAPS,
  Writer,
  acquisitions,
  foldAll,
  readStream,
  readUpdatesByTask,
  sameJson,
  updateProblems,
  writerViolations,
  type ProjectorProcess,
} from './support';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Traffic loops still running (stopped by the suites' afterAll when a test fails midway). */
const drivers = new Set<() => Promise<void>>();
export const stopAllTraffic = () => Promise.all([...drivers].map((stop) => stop()));

export interface SimTask {
  taskId: string;
  sessionId: string;
  executionId: string;
  generation: number;
}

export class Traffic {
  readonly worker: Writer;
  readonly gateway: Writer;
  private readonly chains = new Map<string, Promise<unknown>>();
  private readonly inboxCursor = new Map<string, string>();
  private readonly seen = new Set<string>();
  /** Turns dispatched whose end the worker still owes, per task. */
  private readonly owed = new Map<string, { promptId: string; generation: number }[]>();
  submitted = 0;
  deliveries = 0;
  duplicateDeliveries = 0;
  turnsEnded = 0;
  private keys = 0;

  constructor(
    private readonly store: EventStore,
    readonly tasks: readonly SimTask[],
    name: string,
  ) {
    this.worker = new Writer('worker', `${name}-worker`);
    this.gateway = new Writer('gateway', `${name}-gateway`);
  }

  /** Appends entries made inside the task's chain, so seqs reach the store in order. */
  append(taskId: string, make: () => StreamEntry[]): Promise<unknown> {
    const prev = this.chains.get(taskId) ?? Promise.resolve();
    const next = prev.then(() => this.store.append(taskId, make()));
    this.chains.set(
      taskId,
      next.catch(() => undefined),
    );
    return next;
  }

  async startExecutions(caps = GENERIC_CAPS): Promise<void> {
    await Promise.all(
      this.tasks.map(async (x) => {
        // The worker takes the execution's lease before it reports the start.
        await this.store.executions.renewLease(x, 600_000);
        await this.append(x.taskId, () => [
          this.worker.fact(x, 'execution.started', { startedAt: '2026-11-30T00:00:00Z' }),
          this.worker.fact(x, 'capabilities.negotiated', caps),
        ]);
      }),
    );
  }

  submit(x: SimTask, origin: 'human' | 'agent' = 'human'): Promise<unknown> {
    const key = `k${++this.keys}`;
    this.submitted += 1;
    return this.append(x.taskId, () => [
      this.gateway.command(x.taskId, x.sessionId, 'prompt.submit', {
        commandId: `c-${key}`,
        promptId: `p-${key}`,
        idempotencyKey: key,
        text: `prompt ${key}`,
        origin,
      }),
    ]);
  }

  /**
   * One round of the worker: ends the turns dispatched last round, then reads every inbox and
   * dispatches what was delivered (ignoring a delivery it has already seen).
   */
  async workerRound(): Promise<void> {
    const ends: Promise<unknown>[] = [];
    for (const x of this.tasks) {
      const owed = this.owed.get(x.taskId);
      if (!owed || owed.length === 0) continue;
      this.owed.set(x.taskId, []);
      for (const t of owed) {
        ends.push(
          this.append(x.taskId, () => [
            this.worker.fact(x, 'tool.updated', {
              toolCallId: `tool-${t.promptId}`,
              status: 'completed',
            }),
            this.worker.fact(x, 'foreground.idle', {
              origin: 'human',
              admissionGeneration: t.generation,
            }),
            this.worker.fact(x, 'turn.ended', {
              admissionGeneration: t.generation,
              stopReason: 'end_turn',
            }),
          ]).then(() => (this.turnsEnded += 1)),
        );
      }
    }
    await Promise.all(ends);
    const pages = await Promise.all(
      this.tasks.map((x) =>
        this.store.inbox.read(x.taskId, x.executionId, this.inboxCursor.get(x.taskId) ?? '0-0'),
      ),
    );
    const starts: Promise<unknown>[] = [];
    this.tasks.forEach((x, i) => {
      const page = pages[i]!;
      if (page.items.length > 0) this.inboxCursor.set(x.taskId, page.lastId);
      for (const { message: m } of page.items) {
        if (m.type !== 'prompt.deliver') continue;
        const key = `${x.taskId}/${m.data.promptId}/${m.data.admissionGeneration}`;
        if (this.seen.has(key)) {
          this.duplicateDeliveries += 1;
          continue;
        }
        this.seen.add(key);
        this.deliveries += 1;
        const g = m.data.admissionGeneration;
        starts.push(
          this.append(x.taskId, () => [
            this.worker.fact(x, 'prompt.dispatched', {
              promptId: m.data.promptId,
              admissionGeneration: g,
            }),
            this.worker.fact(x, 'foreground.output', { channel: 'message', chars: 40 }),
            this.worker.fact(x, 'tool.started', {
              toolCallId: `tool-${m.data.promptId}`,
              ownership: 'foreground',
              status: 'in_progress',
              title: 'Run the tests',
            }),
          ]).then(() => {
            const list = this.owed.get(x.taskId) ?? [];
            list.push({ promptId: m.data.promptId, generation: g });
            this.owed.set(x.taskId, list);
          }),
        );
      }
    });
    await Promise.all(starts);
  }

  /** Turns the worker still has to finish. */
  pendingTurns(): number {
    let n = 0;
    for (const list of this.owed.values()) n += list.length;
    return n;
  }
}

export async function owners(store: EventStore): Promise<Map<number, string>> {
  return new Map((await store.leases.list()).map((l) => [l.shard, l.owner]));
}

export function counts(o: Map<number, string>, ids: readonly string[]): number[] {
  return ids.map((id) => [...o.values()].filter((x) => x === id).length);
}

/** Drives traffic until stopped: a few prompts per round to random tasks, and the worker's round. */
export function drive(traffic: Traffic, perRound: number) {
  let running = true;
  const loop = (async () => {
    while (running) {
      for (let i = 0; i < perRound; i++) {
        void traffic.submit(traffic.tasks[Math.floor(Math.random() * traffic.tasks.length)]!);
      }
      await traffic.workerRound();
      await sleep(50);
    }
  })();
  const stop = async () => {
    running = false;
    drivers.delete(stop);
    await loop.catch(() => undefined);
  };
  drivers.add(stop);
  return stop;
}

/** Lets the worker finish every prompt, then waits until every view equals its from-scratch fold. */
export async function drainAndCheck(
  store: EventStore,
  traffic: Traffic,
  all: readonly ProjectorProcess[],
  shards: number,
) {
  await waitFor(
    async () => {
      await traffic.workerRound();
      return traffic.pendingTurns() === 0 && traffic.turnsEnded >= traffic.submitted;
    },
    'every submitted prompt delivered, run and ended',
    120_000,
  );
  const streams = new Map<string, StoredEntry[]>();
  await waitFor(
    async () => {
      for (const x of traffic.tasks) {
        const entries = await readStream(store, x.taskId);
        streams.set(x.taskId, entries);
        const view = await store.views.read(x.taskId);
        if (!sameJson(view, foldAll(x.taskId, entries).view)) return false;
      }
      return true;
    },
    'every view equals the from-scratch fold of its stream',
    120_000,
  );
  const published = await readUpdatesByTask(store, shards);
  const problems: string[] = [];
  let admitted = 0;
  for (const x of traffic.tasks) {
    const entries = streams.get(x.taskId)!;
    const f = foldAll(x.taskId, entries);
    problems.push(...updateProblems(x.taskId, published.get(x.taskId) ?? [], f.updates));
    expect(await store.lastUpdateSeq(x.taskId)).toBe(f.state.seq);
    // Exactly one admission per prompt: no double send across the failover.
    const perPrompt = new Map<string, number>();
    for (const { entry } of entries) {
      if (entry.type === 'prompt.admitted') {
        perPrompt.set(entry.data.promptId, (perPrompt.get(entry.data.promptId) ?? 0) + 1);
        admitted += 1;
      }
    }
    for (const [p, n] of perPrompt)
      if (n !== 1) problems.push(`${x.taskId}: ${p} admitted ${n} times`);
  }
  expect(problems).toEqual([]);
  expect(admitted).toBe(traffic.submitted);
  expect(writerViolations((t) => store.shardOf(t), streams, acquisitions(all))).toEqual([]);
  return { streams };
}

export function simTasks(name: string, n: number): SimTask[] {
  return Array.from({ length: n }, (_, i) => ({
    taskId: `${name}-task-${i}`,
    sessionId: 's1',
    executionId: `${name}-x-${i}`,
    generation: 1,
  }));
}
