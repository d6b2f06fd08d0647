// Test traffic: a gateway submitting prompts and a worker playing each admitted prompt as a
// short turn (dispatch, output, a tool, idle, end), both writing with store.append as the real
// processes do. Per task, every append waits for the previous one (the writer's contract).
import type { StreamEntry } from '@baton/protocol';
import type { EventStore } from '@baton/store';
import { GENERIC_CAPS, Writer } from './support';

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
