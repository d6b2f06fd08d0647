import { z } from 'zod';
import { TaskKey } from './task-key';
import { AdmissionPolicy, ForegroundActivity, Id, PromptOrigin, SessionState } from './common';
import { BackgroundWork } from './background-work';

export const QueueEntryView = z.object({
  promptId: Id,
  idempotencyKey: Id,
  text: z.string(),
  origin: PromptOrigin,
});
export type QueueEntryView = z.infer<typeof QueueEntryView>;

export const QueueView = z.object({
  autoRun: z.boolean(),
  /** 0 means unlimited. */
  capacity: z.number().int().min(0),
  entries: z.array(QueueEntryView),
});
export type QueueView = z.infer<typeof QueueView>;

/** What a session is doing, as clients see it. Every field is derived from the folded stream. */
export const SessionActivityView = z.object({
  state: SessionState,
  foregroundActivity: ForegroundActivity,
  activeSubagentCount: z.number().int().min(0),
  supportsSteering: z.boolean(),
  /** The admission generation of the running turn, if any: what send-now and cancel observe. */
  runningGeneration: z.number().int().min(0).nullable(),
  admission: AdmissionPolicy,
});
export type SessionActivityView = z.infer<typeof SessionActivityView>;

export const SessionView = z.object({
  sessionId: Id,
  activity: SessionActivityView,
  queue: QueueView,
  /** AHP ChatState.backgroundWork: active work only; `[]` once the last entry is removed. */
  backgroundWork: z.array(BackgroundWork),
});
export type SessionView = z.infer<typeof SessionView>;

/** Task aggregate: most active wins (generating > background > null); counts summed. */
export const TaskActivityView = z.object({
  foregroundActivity: ForegroundActivity,
  activeSubagentCount: z.number().int().min(0),
});
export type TaskActivityView = z.infer<typeof TaskActivityView>;

export const TaskView = z.object({
  taskId: TaskKey,
  /** Sequence of the last update folded into this view. */
  seq: z.number().int().min(0),
  activity: TaskActivityView,
  sessions: z.array(SessionView),
});
export type TaskView = z.infer<typeof TaskView>;
