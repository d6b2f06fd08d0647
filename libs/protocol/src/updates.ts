import { z } from 'zod';
import { TaskKey } from './task-key';
import { AdmissionMode, Id, SchemaVersion, StreamId, TaskStatus } from './common';
import { BackgroundWork } from './background-work';
import { PermissionResolver, QueueReason, RejectReason, RemoveReason } from './entries';
import {
  ParkedView,
  PermissionRequestView,
  QueueView,
  SessionActivityView,
  TaskActivityView,
} from './views';

/**
 * Updates published to clients, one per visible change, in a per-task sequence with no gaps.
 * The sequence belongs to the folded state: any replica that folds the same stream publishes the
 * same update under the same sequence.
 *
 * The updates one task stream entry causes form a group (consecutive seqs): each carries the
 * entry's stream id (`entry`), and the group's last one carries `last: true`. A client applies a
 * group as one change, when its last update arrives, so it never shows a state between two
 * updates of one entry. Both are optional on read only: updates published before they existed
 * lack them, and an update without `last` is a group of its own. Publishers always set both
 * ({@link GroupedUpdate}).
 */
const update = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.object({
    v: SchemaVersion,
    taskId: TaskKey,
    seq: z.number().int().positive(),
    /** Id of the task stream entry the update comes from, e.g. "1733000000000-0". */
    entry: StreamId.optional(),
    /** True on the last update of its entry's group (absent: true). */
    last: z.boolean().optional(),
    type: z.literal(type),
    data,
  });

export const SessionActivityChanged = update(
  'session.activity',
  SessionActivityView.extend({ sessionId: Id }),
);
export const SessionQueueChanged = update('session.queue', QueueView.extend({ sessionId: Id }));
/** AHP `chat/backgroundWorkSet`: upsert the complete entry by id. */
export const BackgroundWorkSet = update(
  'chat/backgroundWorkSet',
  z.object({ sessionId: Id, work: BackgroundWork }),
);
/** AHP `chat/backgroundWorkRemoved`: remove by id (a no-op when absent). */
export const BackgroundWorkRemoved = update(
  'chat/backgroundWorkRemoved',
  z.object({ sessionId: Id, id: Id }),
);
export const TaskActivityChanged = update('task.activity', TaskActivityView);
/** The session was parked (its ACP session kept, to be resumed), or is no longer (null). */
export const SessionParkedChanged = update(
  'session.parked',
  z.object({ sessionId: Id, parked: ParkedView.nullable() }),
);
/**
 * How a request that left the open list was settled: the option chosen (`selected`) or
 * `cancelled`, and by whom. `by` is absent when the fold no longer knows (the session deleted).
 */
export const PermissionSettled = z.object({
  requestId: Id,
  outcome: z.enum(['selected', 'cancelled']),
  optionId: Id.optional(),
  by: PermissionResolver.optional(),
});
export type PermissionSettled = z.infer<typeof PermissionSettled>;

/**
 * The permission requests waiting for a person changed: the complete list, oldest first, and
 * (additive, absent when none) how each request that left it was settled.
 */
export const SessionPermissionsChanged = update(
  'session.permissions',
  z.object({
    sessionId: Id,
    requests: z.array(PermissionRequestView),
    resolved: z.array(PermissionSettled).optional(),
  }),
);

export const PromptOutcome = z.discriminatedUnion('outcome', [
  z.object({
    outcome: z.literal('admitted'),
    mode: AdmissionMode,
    admissionGeneration: z.number().int().min(0),
  }),
  z.object({
    outcome: z.literal('queued'),
    position: z.number().int().positive(),
    reason: QueueReason,
  }),
  z.object({ outcome: z.literal('rejected'), reason: RejectReason, message: z.string() }),
  z.object({ outcome: z.literal('removed'), reason: RemoveReason }),
  /** Admitted, and its turn failed: it never started (`abandoned`). */
  z.object({ outcome: z.literal('failed'), reason: z.enum(['abandoned']), message: z.string() }),
  /**
   * Admitted, and its turn was ended without the agent: a cancel it never answered, an operator,
   * its task or session deleted while it ran.
   */
  z.object({
    outcome: z.literal('cancelled'),
    reason: z.enum(['cancel_timeout', 'force_released', 'task_deleted', 'session_deleted']),
    message: z.string(),
  }),
]);
export type PromptOutcome = z.infer<typeof PromptOutcome>;

/** The decision on one prompt, correlated by its idempotency key. */
export const PromptDecided = update(
  'prompt.decided',
  z.object({ sessionId: Id, promptId: Id, idempotencyKey: Id, decision: PromptOutcome }),
);
/** A command that could not be carried out, correlated by its command id. */
export const CommandFailed = update(
  'command.failed',
  z.object({ sessionId: Id, commandId: Id, reason: z.string(), message: z.string() }),
);
/** Advisory, at most once per admission generation. */
export const TurnStalledUpdate = update(
  'turn.stalled',
  z.object({ sessionId: Id, promptId: Id, admissionGeneration: z.number().int().min(0) }),
);
export const SessionRemoved = update('session.deleted', z.object({ sessionId: Id }));
/** The task was archived, unarchived or deleted (a deleted task's view is its tombstone). */
export const TaskStatusChanged = update('task.status', z.object({ status: TaskStatus }));

export const UPDATE_SCHEMAS = [
  SessionActivityChanged,
  SessionQueueChanged,
  BackgroundWorkSet,
  BackgroundWorkRemoved,
  TaskActivityChanged,
  SessionPermissionsChanged,
  SessionParkedChanged,
  PromptDecided,
  CommandFailed,
  TurnStalledUpdate,
  SessionRemoved,
  TaskStatusChanged,
] as const;

export const Update = z.discriminatedUnion('type', [...UPDATE_SCHEMAS]);
export type Update = z.infer<typeof Update>;
export type UpdateType = Update['type'];
/** Every update type a shard's update stream can hold. */
export const UPDATE_TYPES: ReadonlySet<string> = new Set(
  UPDATE_SCHEMAS.map((s) => s.shape.type.value),
);
/** An update before the projector stamps it with the task's next sequence and its entry. */
export type UnsequencedUpdate = Update extends infer U
  ? U extends Update
    ? Omit<U, 'seq' | 'v' | 'taskId' | 'entry' | 'last'>
    : never
  : never;

/** An update as published: with its entry's position and the group's end marked. */
export type GroupedUpdate = Update & { readonly entry: string; readonly last: boolean };

/**
 * The updates of one entry (the stream entry `entry`), stamped as its group: every one names the
 * entry, the last one is marked `last`. The group is exactly what folding that entry gave.
 */
export function groupOf(entry: string, updates: readonly Update[]): GroupedUpdate[] {
  const n = updates.length;
  return updates.map((u, i) => ({ ...u, entry, last: i === n - 1 }));
}

/** Whether an update ends its group (one without the marker, as published before it, does). */
export const endsGroup = (u: Update): boolean => u.last !== false;
