import { z } from 'zod';
import { TaskKey } from './task-key';
import {
  AdmissionPolicy,
  ForegroundActivity,
  Id,
  PromptOrigin,
  SessionState,
  TaskStatus,
} from './common';
import { BackgroundWork } from './background-work';
import { AgentUsage, PermissionOption, QueueReason } from './entries';

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
  /** Why the head of the queue does not run now; null when the queue is empty or about to run. */
  blockedBy: QueueReason.nullable(),
});
export type QueueView = z.infer<typeof QueueView>;

/**
 * Why a session is not simply running or promptable, for a person to read: `failed` (the last
 * turn or execution request failed), `waiting` (for a worker, or for an execution to stop), or
 * `needs_operator` (nothing will change by itself: start an execution, cancel, or force-release).
 */
export const AttentionReason = z.enum([
  'turn_abandoned',
  'cancel_timeout',
  'force_released',
  'no_worker',
  'turn_stalled',
  'execution_stopping',
  'waiting_for_worker',
  'no_execution',
  /** The agent asked permission and waits for a person's answer (`permissions` lists it). */
  'permission_requested',
]);
export type AttentionReason = z.infer<typeof AttentionReason>;
export const Attention = z.object({
  /**
   * `needs_person`: the session waits for a person — the agent asked permission (reason
   * `permission_requested`) and nothing moves until someone answers or the timeout denies it.
   */
  kind: z.enum(['failed', 'waiting', 'needs_operator', 'needs_person']),
  reason: AttentionReason,
  message: z.string(),
  promptId: Id.optional(),
  executionId: Id.optional(),
});
export type Attention = z.infer<typeof Attention>;

/** What a session is doing, as clients see it. Every field is derived from the folded stream. */
export const SessionActivityView = z.object({
  state: SessionState,
  foregroundActivity: ForegroundActivity,
  activeSubagentCount: z.number().int().min(0),
  supportsSteering: z.boolean(),
  /** The admission generation of the running turn, if any: what send-now and cancel observe. */
  runningGeneration: z.number().int().min(0).nullable(),
  admission: AdmissionPolicy,
  attention: Attention.nullable(),
  /**
   * The agent asked permission and waits for a person's answer: the headline is "waits for you",
   * and `foregroundActivity` meanwhile is never `generating` (the agent sends nothing until the
   * answer). Baton always sets it; absent (views written before it existed) means false.
   */
  waitingForPerson: z.boolean().optional(),
  /**
   * What the agent last reported of its usage: context window (`used` of `size` tokens), cost so
   * far, the last turn's tokens. Absent until it reports any (and in views written before it
   * existed); an update carries null when a fresh agent session or a reset clears it.
   */
  usage: AgentUsage.nullable().optional(),
});
export type SessionActivityView = z.infer<typeof SessionActivityView>;

/**
 * A permission request of the agent that waits for a person: answer it with one of `options`
 * (`permission.respond`). Only open `ask` requests are listed; one answered (by a person, the
 * timeout, a cancel) leaves the list.
 */
export const PermissionRequestView = z.object({
  requestId: Id,
  toolCallId: Id.optional(),
  title: z.string().optional(),
  toolKind: z.string().optional(),
  options: z.array(PermissionOption),
  executionId: Id,
});
export type PermissionRequestView = z.infer<typeof PermissionRequestView>;

/**
 * A parked session: its last execution was closed for being idle, its ACP session kept. The next
 * prompt (or an explicit resume) starts a new execution of the same profile that loads it.
 */
export const ParkedView = z.object({
  executionId: Id,
  acpSessionId: Id,
  /** The agent advertised `loadSession`: a resume continues the conversation. */
  loadable: z.boolean(),
  profile: z.string().optional(),
  recording: z.string().optional(),
  speed: z.number().optional(),
  workspace: z.string().optional(),
});
export type ParkedView = z.infer<typeof ParkedView>;

export const SessionView = z.object({
  sessionId: Id,
  activity: SessionActivityView,
  queue: QueueView,
  /** AHP ChatState.backgroundWork: active work only; `[]` once the last entry is removed. */
  backgroundWork: z.array(BackgroundWork),
  /**
   * Permission requests waiting for a person, oldest first. Baton always sets it; absent (views
   * written before it existed) means none.
   */
  permissions: z.array(PermissionRequestView).optional(),
  /** Set while the session is parked (absent otherwise, and in views written before it existed). */
  parked: ParkedView.nullable().optional(),
});
export type SessionView = z.infer<typeof SessionView>;

/** Task aggregate: most active wins (generating > background > null); counts summed. */
export const TaskActivityView = z.object({
  foregroundActivity: ForegroundActivity,
  activeSubagentCount: z.number().int().min(0),
  /** Sessions waiting for a person (an open permission request): "2 sessions need you". */
  /** Baton always sets it; absent (views written before it existed) means 0. */
  sessionsNeedingPerson: z.number().int().min(0).optional(),
});
export type TaskActivityView = z.infer<typeof TaskActivityView>;

export const TaskView = z.object({
  taskId: TaskKey,
  status: TaskStatus,
  /** Sequence of the last update folded into this view. */
  seq: z.number().int().min(0),
  activity: TaskActivityView,
  sessions: z.array(SessionView),
});
export type TaskView = z.infer<typeof TaskView>;
