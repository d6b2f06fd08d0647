import type { RejectReason } from '@baton/protocol';
import { own } from './records';
import type { PromptRecord, SessionState, TaskState } from './state';

/**
 * What one task may hold waiting, whatever its sessions' queue capacities say: every queued
 * prompt's text is in the task's state and view, which the owner and every gateway serving the
 * task keep in memory and send to each subscriber. 0: no bound.
 */
export interface AdmissionLimits {
  /** Sessions with work (a queued prompt, a turn, a live or requested execution) per task. */
  readonly sessionsPerTask: number;
  /** UTF-8 bytes of the prompt texts queued on one session. */
  readonly queuedBytesPerSession: number;
  /** UTF-8 bytes of the prompt texts queued on all the task's sessions together. */
  readonly queuedBytesPerTask: number;
}

export const DEFAULT_ADMISSION_LIMITS: AdmissionLimits = Object.freeze({
  sessionsPerTask: 256,
  queuedBytesPerSession: 1_048_576,
  queuedBytesPerTask: 8_388_608,
});

export interface LimitRefusal {
  readonly reason: Extract<RejectReason, 'too_many_sessions' | 'queue_bytes'>;
  readonly message: string;
}

/**
 * Why `prompt` cannot wait in the queue of `s`, or undefined when it may. Asked only for a prompt
 * that would be queued. Sessions are counted in the order the owner decides, so of many new
 * sessions arriving together the first ones up to the bound get their prompts queued.
 */
export function queueLimitRefusal(
  task: TaskState,
  s: SessionState,
  prompt: PromptRecord,
  limits: AdmissionLimits,
): LimitRefusal | undefined {
  if (limits.sessionsPerTask > 0 && !hasWork(s)) {
    let others = 0;
    for (const id in task.sessions) {
      const o = task.sessions[id]!;
      if (o.id !== s.id && hasWork(o)) others += 1;
    }
    if (others >= limits.sessionsPerTask) {
      return {
        reason: 'too_many_sessions',
        message: `this task already has ${others} sessions with work, its bound (${limits.sessionsPerTask}); send to one of them, or wait until one is done`,
      };
    }
  }
  const bytes = utf8Length(prompt.text ?? '');
  if (limits.queuedBytesPerSession > 0) {
    const queued = queuedBytes(s);
    if (queued + bytes > limits.queuedBytesPerSession) {
      return {
        reason: 'queue_bytes',
        message: `session ${s.id} has ${queued} bytes of prompts queued; ${bytes} more would pass its bound of ${limits.queuedBytesPerSession}`,
      };
    }
  }
  if (limits.queuedBytesPerTask > 0) {
    let queued = 0;
    for (const id in task.sessions) queued += queuedBytes(task.sessions[id]!);
    if (queued + bytes > limits.queuedBytesPerTask) {
      return {
        reason: 'queue_bytes',
        message: `this task has ${queued} bytes of prompts queued; ${bytes} more would pass its bound of ${limits.queuedBytesPerTask}`,
      };
    }
  }
  return undefined;
}

function hasWork(s: SessionState): boolean {
  return (
    s.queue.length > 0 ||
    s.turn !== null ||
    s.requested !== null ||
    (s.execution !== null && s.execution.phase !== 'ended')
  );
}

function queuedBytes(s: SessionState): number {
  let n = 0;
  for (const id of s.queue) n += utf8Length(own(s.prompts, id)?.text ?? '');
  return n;
}

/** UTF-8 length without encoding: a lone surrogate counts as the 3 bytes of its replacement. */
export function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i += 1;
      } else n += 3;
    } else n += 3;
  }
  return n;
}
