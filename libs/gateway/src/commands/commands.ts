import { randomUUID } from 'node:crypto';
import {
  SCHEMA_VERSION,
  isDecision,
  type CommandResult,
  type PromptOrigin,
  type PromptResult,
  type StreamEntry,
  type Update,
  type Writer,
} from '@baton/protocol';
import type { EventStore } from '@baton/store';
import type { GatewayMetrics } from '../metrics/metrics';
import type { UpdateHub } from '../updates/update-hub';

export interface PromptInput {
  taskId: string;
  sessionId: string;
  text: string;
  idempotencyKey: string;
  origin: PromptOrigin;
}

export type QueueCommand =
  | { type: 'queue.cancel'; promptId: string }
  | { type: 'queue.send_now'; promptId: string; observedGeneration?: number }
  | { type: 'queue.set_auto_run'; enabled: boolean }
  | { type: 'session.cancel'; observedGeneration?: number }
  | { type: 'session.reset' }
  | { type: 'session.delete' }
  | { type: 'session.force_release'; reason?: string }
  | { type: 'permission.respond'; requestId: string; optionId: string; subject?: string };

/** Task-wide commands: their entries name no session. */
export type TaskCommand = 'task.archive' | 'task.unarchive' | 'task.delete';

/** How long a prompt answered `pending` keeps listening for its decision to pass it on. */
const LATE_DECISION_MS = 10 * 60_000;
const POLL_MS = [2, 5, 10, 20, 50, 100];

type Decided = Extract<Update, { type: 'prompt.decided' }>;

/**
 * Writes the commands of clients to task streams and waits for their answers. Every command is
 * appended under this process's writer instance with a growing seq; appends to one task go one at
 * a time, so the store's per-writer dedupe (which keeps the highest seq) never sees them reordered.
 */
export class Commands {
  private seq = 0;
  private readonly chains = new Map<string, Promise<unknown>>();

  constructor(
    private readonly store: EventStore,
    private readonly hub: UpdateHub,
    private readonly writerInstance: string,
    private readonly admissionWaitMs: number,
    private readonly metrics: GatewayMetrics,
    /** No caller waits longer than this for its append, however many wait before it. */
    private readonly storeTimeoutMs: number,
  ) {}

  private append(taskId: string, make: (writer: Writer) => StreamEntry): Promise<string> {
    const prev = this.chains.get(taskId) ?? Promise.resolve();
    const next = prev
      .catch(() => undefined)
      .then(async () => {
        const entry = make({ role: 'gateway', instance: this.writerInstance, seq: ++this.seq });
        const [id] = await this.store.append(taskId, [entry]);
        if (!id) throw new Error('the store took a fresh writer seq for a duplicate');
        return id;
      });
    this.chains.set(taskId, next);
    void next
      .catch(() => undefined)
      .finally(() => {
        if (this.chains.get(taskId) === next) this.chains.delete(taskId);
      });
    return this.bounded(next);
  }

  /**
   * Each command's own Redis time is bounded by the connection; behind a stalled task chain, a
   * caller would wait for every append before its own. It gives up at its own bound instead
   * (`unavailable`); the append may still land, and a retry under the same key finds it.
   */
  private bounded<T>(p: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(`Command timed out: the store took no append in ${this.storeTimeoutMs} ms`),
          ),
        this.storeTimeoutMs,
      );
    });
    return Promise.race([p, late]).finally(() => clearTimeout(timer));
  }

  /**
   * Submits a prompt and waits (up to the admission wait) for the decision on its key. A key the
   * session already knows makes no second prompt: the owner announces the decision it has. When
   * the answer is `pending`, `onLate` gets the decision if it comes within a while.
   */
  async prompt(input: PromptInput, onLate?: (u: Decided) => void): Promise<PromptResult> {
    const { taskId, sessionId, idempotencyKey } = input;
    let resolve!: (u: Decided) => void;
    const decided = new Promise<Decided>((r) => (resolve = r));
    let late: ((u: Decided) => void) | undefined;
    const stop = this.hub.listen(taskId, (frame) => {
      const u = frame.update;
      if (
        u.type === 'prompt.decided' &&
        u.data.sessionId === sessionId &&
        u.data.idempotencyKey === idempotencyKey
      ) {
        resolve(u);
        if (late) {
          stopAll();
          late(u);
        }
      }
    });
    let lateTimer: NodeJS.Timeout | undefined;
    const stopAll = () => {
      stop();
      if (lateTimer) clearTimeout(lateTimer);
    };
    const t0 = process.hrtime.bigint();
    try {
      await this.append(taskId, (writer) => ({
        v: SCHEMA_VERSION,
        type: 'prompt.submit',
        taskId,
        sessionId,
        writer,
        data: {
          commandId: randomUUID(),
          promptId: randomUUID(),
          idempotencyKey,
          text: input.text,
          origin: input.origin,
        },
      }));
    } catch (err) {
      stopAll();
      throw err;
    }
    let timer: NodeJS.Timeout | undefined;
    const u = await Promise.race([
      decided,
      new Promise<null>((r) => (timer = setTimeout(() => r(null), this.admissionWaitMs))),
    ]);
    clearTimeout(timer);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    if (u) {
      stopAll();
      this.metrics.admissionWait.observe({ outcome: u.data.decision.outcome }, seconds);
      return {
        status: 'decided',
        taskId,
        sessionId,
        idempotencyKey,
        promptId: u.data.promptId,
        decision: u.data.decision,
      };
    }
    this.metrics.admissionWait.observe({ outcome: 'pending' }, seconds);
    if (onLate) {
      late = onLate;
      lateTimer = setTimeout(stopAll, LATE_DECISION_MS);
      lateTimer.unref();
    } else stopAll();
    return { status: 'pending', taskId, sessionId, idempotencyKey };
  }

  /**
   * Records in the task stream that an execution of the session was put on the execution queue
   * (`execution.request`): its owner shows the session waiting for a worker until the execution
   * starts, and fails the request visibly (no_worker) after the start bound. Not waited on.
   */
  async requestExecution(taskId: string, sessionId: string, executionId: string): Promise<string> {
    const commandId = randomUUID();
    await this.append(taskId, (writer) => ({
      v: SCHEMA_VERSION,
      type: 'execution.request',
      taskId,
      sessionId,
      writer,
      data: { commandId, executionId },
    }));
    return commandId;
  }

  /**
   * Appends a queue or session command and waits (up to the admission wait) for the owner's
   * answer: the decision that names the command in the task stream after it.
   */
  command(taskId: string, sessionId: string, cmd: QueueCommand): Promise<CommandResult> {
    const { type, ...rest } = cmd;
    return this.ask(
      taskId,
      (commandId, writer) =>
        ({
          v: SCHEMA_VERSION,
          type,
          taskId,
          sessionId,
          writer,
          data: { commandId, ...rest },
        }) as StreamEntry,
      // Deleting what is already deleted leaves it deleted: what was asked.
      type === 'session.delete' ? ['session_deleted', 'task_deleted'] : [],
    );
  }

  /**
   * Appends a task-wide command (no session in its envelope) and waits for the owner's answer
   * the same way. A task that is already deleted is deleted for good (a tombstone never comes
   * back), so a delete of it is done without a write; archive and unarchive are always written
   * and answered by their decision, so a done never rests on a view that may lag behind.
   */
  async taskCommand(taskId: string, type: TaskCommand): Promise<CommandResult> {
    if (type === 'task.delete' && (await this.hub.view(taskId)).status === 'deleted') {
      return { status: 'done', commandId: randomUUID() };
    }
    return this.ask(
      taskId,
      (commandId, writer) =>
        ({
          v: SCHEMA_VERSION,
          type,
          taskId,
          writer,
          data: { commandId },
        }) as StreamEntry,
      type === 'task.delete' ? ['task_deleted'] : [],
    );
  }

  /**
   * Appends the entry `make` builds under a fresh command id, then reads the task stream after
   * it for the decision that names that id: `command.rejected` and `task.command_rejected` are a
   * failure (unless their reason is in `doneWhen`: the state asked for holds already), any other
   * decision is done. A `command.failed` update answers sooner; every update of the task wakes
   * the reader. No answer within the admission wait is `pending`.
   */
  private async ask(
    taskId: string,
    make: (commandId: string, writer: Writer) => StreamEntry,
    doneWhen: readonly string[],
  ): Promise<CommandResult> {
    const commandId = randomUUID();
    let wake: (() => void) | undefined;
    let failed: { reason: string; message: string } | undefined;
    const stop = this.hub.listen(taskId, (frame) => {
      const u = frame.update;
      if (u.type === 'command.failed' && u.data.commandId === commandId) failed = u.data;
      wake?.();
    });
    const answer = (f: { reason: string; message: string }): CommandResult =>
      doneWhen.includes(f.reason)
        ? { status: 'done', commandId }
        : { status: 'failed', commandId, reason: f.reason, message: f.message };
    try {
      let cursor = await this.append(taskId, (writer) => make(commandId, writer));
      const deadline = Date.now() + this.admissionWaitMs;
      for (let attempt = 0; ; attempt++) {
        if (failed) return answer(failed);
        const page = await this.store.readTask(taskId, cursor, 200);
        cursor = page.lastId;
        for (const { entry } of page.items) {
          if (!isDecision(entry) || !('commandId' in entry.data)) continue;
          if (entry.data.commandId !== commandId) continue;
          if (entry.type === 'command.rejected' || entry.type === 'task.command_rejected') {
            return answer(entry.data);
          }
          return { status: 'done', commandId };
        }
        const left = deadline - Date.now();
        if (left <= 0) return { status: 'pending', commandId };
        if (page.items.length === 200) continue;
        await new Promise<void>((r) => {
          const t = setTimeout(r, Math.min(left, POLL_MS[Math.min(attempt, POLL_MS.length - 1)]!));
          wake = () => {
            clearTimeout(t);
            r();
          };
        });
        wake = undefined;
      }
    } finally {
      stop();
    }
  }
}
