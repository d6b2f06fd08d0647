import { z } from 'zod';
import { Id, StreamId } from './common';

/**
 * A task's history over a time range, as the REST history query answers it: computed from the
 * task stream by the same fold as the live state (libs/activity taskHistory). Times are ms since
 * the epoch, read off the stream ids (Redis's clock).
 */
const Ms = z.number().int().nonnegative();

export const ActivityLane = z.enum([
  'failed',
  'waiting_for_person',
  'generating',
  'background',
  'waiting',
  'idle',
]);
export type ActivityLane = z.infer<typeof ActivityLane>;

export const ActivityInterval = z.object({
  state: ActivityLane,
  from: Ms,
  /** null: still so at the end of the range. */
  to: Ms.nullable(),
  /** The attention reason while failed or waiting. */
  reason: z.string().optional(),
});
export type ActivityInterval = z.infer<typeof ActivityInterval>;

export const TurnRecord = z.object({
  promptId: Id,
  generation: z.number().int().nonnegative(),
  start: Ms,
  end: Ms.nullable(),
  /** The agent's stop reason (`end_turn`, `cancelled`, …), or what ended it (`abandoned`, …). */
  stopReason: z.string().optional(),
});
export type TurnRecord = z.infer<typeof TurnRecord>;

export const BackgroundRecord = z.object({
  id: Id,
  kind: z.string(),
  label: z.string(),
  start: Ms,
  end: Ms.nullable(),
  /** Named by its own id, ended with its execution, or ended without saying which it was. */
  endedBy: z.enum(['identified', 'execution', 'unidentified']).optional(),
});
export type BackgroundRecord = z.infer<typeof BackgroundRecord>;

export const PromptHistory = z.object({
  promptId: Id,
  idempotencyKey: Id,
  submittedAt: Ms,
  decision: z.enum(['admitted', 'queued', 'rejected']).nullable(),
  decidedAt: Ms.nullable(),
  /** Queued until admitted: how long it waited (null while waiting, or never queued). */
  queueWaitMs: Ms.nullable(),
  admittedAt: Ms.nullable(),
  dispatchedAt: Ms.nullable(),
  /** Why it was rejected or removed. */
  reason: z.string().optional(),
});
export type PromptHistory = z.infer<typeof PromptHistory>;

export const ExecutionRecord = z.object({
  executionId: Id,
  requestedAt: Ms.nullable(),
  start: Ms.nullable(),
  end: Ms.nullable(),
  reason: z.string().optional(),
});
export type ExecutionRecord = z.infer<typeof ExecutionRecord>;

export const SessionHistory = z.object({
  sessionId: Id,
  activity: z.array(ActivityInterval),
  turns: z.array(TurnRecord),
  background: z.array(BackgroundRecord),
  prompts: z.array(PromptHistory),
  executions: z.array(ExecutionRecord),
  /**
   * Where the session's transcript events of the range are (their stream ids' time in it): page
   * `GET …/sessions/{sessionId}/transcript` from just before `first` up to `last`. Absent when
   * the range holds none of them.
   */
  transcript: z
    .object({ first: StreamId, last: StreamId })
    .optional()
    .describe(
      'the cursor range of the session’s transcript events in the range: the first and last ' +
        'stream id whose time falls in it (absent when none does)',
    ),
});
export type SessionHistory = z.infer<typeof SessionHistory>;

export const TaskHistory = z.object({
  /** The task's id as its tenant names it. */
  taskId: Id,
  from: Ms,
  to: Ms,
  sessions: z.array(SessionHistory),
  /** Entries folded inside the range. */
  entries: z.number().int().nonnegative(),
  /** A list or the range reached its bound: later items are left out. */
  truncated: z.boolean(),
  /**
   * When the range held more entries than one answer folds: the time of the first one left out.
   * Ask again with `since` = `next` for the rest (pages meet there: an interval open at the end
   * of one page is where the next one starts).
   */
  next: Ms.optional(),
  /** The stream was trimmed behind the range's start: what happened before is gone. */
  trimmed: z.boolean().optional(),
});
export type TaskHistory = z.infer<typeof TaskHistory>;
