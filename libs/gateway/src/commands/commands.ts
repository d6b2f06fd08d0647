import { randomUUID } from 'node:crypto';
import {
  SCHEMA_VERSION,
  isDecision,
  splitTaskKey,
  type CommandResult,
  type PromptOrigin,
  type PromptResult,
  type StreamEntry,
  type Update,
  type Writer,
} from '@baton/protocol';
import { inSpan, traceparentOf } from '@baton/health';
import type { EventStore } from '@baton/store';
import type { Logger } from '../logger';
import type { GatewayMetrics } from '../metrics/metrics';
import type { Executions } from '../rest/executions';
import type { UpdateHub } from '../updates/update-hub';
import type { CommandWriter } from './command-writer';

export interface PromptInput {
  taskId: string;
  sessionId: string;
  text: string;
  idempotencyKey: string;
  origin: PromptOrigin;
  /** The prompt's id, when the client named it (an AHP turn id); a fresh one otherwise. */
  promptId?: string;
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
 * Writes the commands of clients to task streams (through the gateway's one {@link CommandWriter})
 * and waits for their answers. A prompt to a parked session also starts the execution that
 * resumes it, whichever transport sent it.
 */
export class Commands {
  constructor(
    private readonly writer: CommandWriter,
    private readonly store: EventStore,
    private readonly hub: UpdateHub,
    private readonly admissionWaitMs: number,
    private readonly metrics: GatewayMetrics,
    private readonly executions: Executions,
    private readonly log: Logger,
  ) {}

  private append(taskId: string, make: (writer: Writer) => StreamEntry): Promise<string> {
    return this.writer.append(taskId, make);
  }

  /**
   * Submits a prompt and waits (up to the admission wait) for the decision on its key. A key the
   * session already knows makes no second prompt: the owner announces the decision it has. When
   * the answer is `pending`, `onLate` gets the decision if it comes within a while.
   */
  prompt(input: PromptInput, onLate?: (u: Decided) => void): Promise<PromptResult> {
    // The trace of a prompt starts here (or under the HTTP request that carried it) and ends when
    // its decision reached the client; the owner and the worker continue it from the entry.
    return inSpan(
      'baton.prompt.submit',
      {
        'baton.task': input.taskId,
        'baton.session': input.sessionId,
        'baton.idempotency_key': input.idempotencyKey,
      },
      async (span) => {
        const result = await this.submit(input, traceparentOf(span), onLate);
        span.setAttribute(
          'baton.decision',
          result.status === 'decided' ? result.decision.outcome : result.status,
        );
        if (result.status === 'decided') span.setAttribute('baton.prompt', result.promptId);
        return result;
      },
    );
  }

  private async submit(
    input: PromptInput,
    traceparent: string | undefined,
    onLate?: (u: Decided) => void,
  ): Promise<PromptResult> {
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
          void this.resumeForPrompt(taskId, sessionId, u.data.decision);
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
      // The decision is read from the shard's tail: it must be placed before the prompt is written.
      await this.hub.ready(taskId);
      await this.append(taskId, (writer) => ({
        v: SCHEMA_VERSION,
        type: 'prompt.submit',
        taskId,
        sessionId,
        writer,
        data: {
          commandId: randomUUID(),
          promptId: input.promptId ?? randomUUID(),
          idempotencyKey,
          text: input.text,
          origin: input.origin,
          ...(traceparent ? { traceparent } : {}),
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
      await this.resumeForPrompt(taskId, sessionId, u.data.decision);
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
   * A prompt to a parked session starts the execution that resumes it: when the owner queued it
   * for want of an execution (`no_execution`), or behind prompts already queued
   * (`queue_not_empty`: an earlier resume may have found no worker in time), and the session is
   * parked. A resume already under way is the same execution (Executions.resumeParked), so
   * nothing starts twice; the prompt runs on it as soon as it is ready. Best effort: when it
   * cannot (the profile is gone), the prompt waits as for any session without an execution.
   */
  private async resumeForPrompt(
    taskId: string,
    sessionId: string,
    decision: Decided['data']['decision'],
  ): Promise<void> {
    if (
      decision.outcome !== 'queued' ||
      (decision.reason !== 'no_execution' && decision.reason !== 'queue_not_empty')
    )
      return;
    const tenant = splitTaskKey(taskId)?.tenant;
    if (tenant === undefined) return;
    try {
      const view = await this.hub.view(taskId);
      const session = view.sessions.find((s) => s.sessionId === sessionId);
      if (session?.parked) await this.executions.resumeParked(taskId, tenant, session);
    } catch (err) {
      this.log.warn({ err, taskId, sessionId }, 'resuming a parked session for a prompt failed');
    }
  }

  /**
   * Appends a queue or session command and waits (up to the admission wait) for the owner's
   * answer: the decision that names the command in the task stream after it.
   */
  command(taskId: string, sessionId: string, cmd: QueueCommand): Promise<CommandResult> {
    const { type, ...rest } = cmd;
    return this.ask(
      taskId,
      { type, sessionId, data: rest },
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
    return this.ask(taskId, { type }, type === 'task.delete' ? ['task_deleted'] : []);
  }

  /**
   * Appends the command's entry (of its session, or task-wide when it names none) under a fresh
   * command id, then reads the task stream after
   * it for the decision that names that id: `command.rejected` and `task.command_rejected` are a
   * failure (unless their reason is in `doneWhen`: the state asked for holds already), any other
   * decision is done. A `command.failed` update answers sooner; every update of the task wakes
   * the reader. No answer within the admission wait is `pending`.
   */
  private async ask(
    taskId: string,
    command: { type: QueueCommand['type'] | TaskCommand; sessionId?: string; data?: object },
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
      const { type, sessionId, data } = command;
      let cursor = await this.append(
        taskId,
        (writer) =>
          ({
            v: SCHEMA_VERSION,
            type,
            taskId,
            // A task-wide command's entry names no session.
            ...(sessionId !== undefined ? { sessionId } : {}),
            writer,
            data: { commandId, ...data },
          }) as StreamEntry,
      );
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
