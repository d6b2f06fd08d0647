import { TranscriptEvent } from '@baton/transcript';
import { z } from 'zod';
import { ClientId, Id, MAX_PROMPT_CHARS, PromptOrigin, SchemaVersion } from './common';
import { PromptOutcome, Update } from './updates';
import { QueueView, TaskView } from './views';

/**
 * Client wire messages over WebSocket (one JSON object per text frame). Every request carries an
 * `id` that its reply echoes.
 */
const request = <O extends string, S extends z.ZodRawShape>(op: O, shape: S) =>
  z.object({ v: SchemaVersion, id: Id, op: z.literal(op), ...shape });
const sessionRef = { taskId: ClientId, sessionId: ClientId };
const Generation = z.number().int().min(0);

/**
 * Without `afterSeq`: a `snapshot` (resync false), then the reply, then every update with a seq
 * above the snapshot's, in order. With `afterSeq` (resume): the updates after it that the client
 * missed, then the reply (`mode: 'resumed'`) — or, when they are no longer retained, a snapshot
 * flagged `resync: true` and the reply (`mode: 'resync'`). With `sessionId`, the snapshot holds that
 * session only and updates of other sessions are not sent: seqs then skip, but never silently —
 * the task's seq stays gapless and the server checks it. Subscribing again to the same task
 * replaces the subscription.
 */
export const SubscribeRequest = request('subscribe', {
  taskId: ClientId,
  sessionId: ClientId.optional(),
  /** Resume: the last sequence the client applied; it gets what it missed, or a resync snapshot. */
  afterSeq: z.number().int().min(0).optional(),
});
export const UnsubscribeRequest = request('unsubscribe', { taskId: ClientId });
export const PromptRequest = request('prompt', {
  ...sessionRef,
  text: z.string().min(1).max(MAX_PROMPT_CHARS),
  idempotencyKey: Id,
  origin: PromptOrigin.default('human'),
});
export const QueueListRequest = request('queue.list', sessionRef);
export const QueueCancelRequest = request('queue.cancel', { ...sessionRef, promptId: Id });
export const QueueSendNowRequest = request('queue.send_now', {
  ...sessionRef,
  promptId: Id,
  observedGeneration: Generation.optional(),
});
export const QueueAutoRunRequest = request('queue.auto_run', {
  ...sessionRef,
  enabled: z.boolean(),
});
export const SessionCancelRequest = request('session.cancel', {
  ...sessionRef,
  observedGeneration: Generation.optional(),
});
/** Clears the session's activity (background work, tools) and stops its execution; the queue stays. */
export const SessionResetRequest = request('session.reset', sessionRef);
/** Deletes the session: its queue is discarded (each prompt told why), its execution stopped. */
export const SessionDeleteRequest = request('session.delete', sessionRef);
/** Scope `admin`: ends the running turn now, clears the activity, stops the execution. */
export const SessionForceReleaseRequest = request('session.force_release', {
  ...sessionRef,
  reason: z.string().max(500).optional(),
});
/**
 * Scope `prompt`: answers a permission request the agent is waiting on (the session's
 * `permissions`) with one of the options it offered. A second answer is `failed` with reason
 * `permission_answered` and changes nothing.
 */
export const PermissionRespondRequest = request('permission.respond', {
  ...sessionRef,
  requestId: Id,
  optionId: Id,
});
/** Archived: no prompts, no executions, queues discarded; unarchive takes prompts again. */
export const TaskArchiveRequest = request('task.archive', { taskId: ClientId });
export const TaskUnarchiveRequest = request('task.unarchive', { taskId: ClientId });
/** Deleted for good: a tombstone keeps the id taken (see docs/protocol.md). */
export const TaskDeleteRequest = request('task.delete', { taskId: ClientId });
export const PingRequest = request('ping', {});

/** A transcript cursor: the stream id of the last event a reader has (`0-0`: none yet). */
export const TranscriptCursor = z
  .string()
  .regex(/^\d{1,20}-\d{1,20}$/, 'a transcript cursor is a stream id such as 1712345678901-0');
/**
 * Scope `read`: the session's transcript, from after `after` (or from the start): the reply, then
 * `transcript` messages catching up and then live, in stream order, each event once. A reconnect
 * that subscribes again with the last cursor it got misses nothing and gets nothing twice. Another
 * tenant's task, like an absent one, has an empty transcript. Subscribing again to the same
 * session replaces the subscription.
 */
export const TranscriptSubscribeRequest = request('transcript.subscribe', {
  ...sessionRef,
  after: TranscriptCursor.optional(),
});
export const TranscriptUnsubscribeRequest = request('transcript.unsubscribe', sessionRef);

export const ClientMessage = z.discriminatedUnion('op', [
  SubscribeRequest,
  UnsubscribeRequest,
  PromptRequest,
  QueueListRequest,
  QueueCancelRequest,
  QueueSendNowRequest,
  QueueAutoRunRequest,
  SessionCancelRequest,
  SessionResetRequest,
  SessionDeleteRequest,
  SessionForceReleaseRequest,
  PermissionRespondRequest,
  TaskArchiveRequest,
  TaskUnarchiveRequest,
  TaskDeleteRequest,
  PingRequest,
  TranscriptSubscribeRequest,
  TranscriptUnsubscribeRequest,
]);
export type ClientMessage = z.infer<typeof ClientMessage>;

export const ErrorCode = z.enum([
  'invalid_message',
  'message_too_large',
  'prompt_too_long',
  'rate_limited',
  'too_many_subscriptions',
  'unauthorized',
  'forbidden',
  'not_found',
  /** The task's state refuses the request (REST 409): e.g. an execution of an archived task. */
  'conflict',
  'unavailable',
  'internal',
]);
export type ErrorCode = z.infer<typeof ErrorCode>;
export const WireError = z.object({
  code: ErrorCode,
  message: z.string(),
  /** The offending field, as a dotted path, when the error is about one field. */
  path: z.string().optional(),
});
export type WireError = z.infer<typeof WireError>;

/** A message of the server: the schema version, its `type`, and what that type carries. */
const serverMessage = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.object({ v: SchemaVersion, type: z.literal(type), ...shape });

export const ReplyMessage = z.union([
  serverMessage('reply', { id: Id, ok: z.literal(true), result: z.unknown() }),
  serverMessage('reply', { id: Id, ok: z.literal(false), error: WireError }),
]);
export const SnapshotMessage = serverMessage('snapshot', {
  /** True when updates the client asked for are no longer retained: start over from this state. */
  resync: z.boolean(),
  task: TaskView,
});
export const UpdateMessage = serverMessage('update', { update: Update });
export const ErrorMessage = serverMessage('error', { error: WireError });

/** One event of a transcript as a reader gets it: its stream id is its cursor. */
export const TranscriptEntry = z.object({
  id: z.string(),
  executionId: z.string(),
  event: TranscriptEvent,
});
export type TranscriptEntry = z.infer<typeof TranscriptEntry>;
/**
 * Events of a transcript subscription, in stream order; `cursor` is what to subscribe again with
 * (it may be past the last event: entries of other sessions are skipped). `resync` (no events):
 * the connection fell behind and dropped what it could not take; once it has drained, the
 * subscription catches up by itself from `cursor`, the last it delivered. `gap` (no events): the
 * transcript's retention removed events after the reader's cursor before it could read them; the
 * subscription goes on from `cursor` (`gap.through`, the last event removed). Or the cursor lies
 * inside items whose deltas were since joined into whole items (the transcript keeps its deltas
 * for the hot window, whole items after it): the rest of those items is lost to this cursor,
 * and the subscription goes on from the cursor itself (`cursor` is the reader's own), as what
 * began after it is read whole; a reader that wants those items whole reads from the start.
 */
export const TranscriptGap = z.object({
  /**
   * The transcript's bound (its age or its length) removed the events, or its compaction the
   * rest of items the cursor was inside.
   */
  reason: z.literal('retention'),
  /** The cursor the reader had. */
  after: z.string(),
  /**
   * The last event removed: the events in (after, through] are lost (of a compaction: the
   * events in that range of the items the cursor was inside).
   */
  through: z.string(),
});
export type TranscriptGap = z.infer<typeof TranscriptGap>;
/** A transcript message of one session: its events, or a resync, or a gap; then its cursor. */
const transcriptMessage = <S extends z.ZodRawShape>(shape: S) =>
  serverMessage('transcript', { taskId: Id, sessionId: Id, ...shape, cursor: z.string() });
export const TranscriptMessage = z.union([
  transcriptMessage({ events: z.array(TranscriptEntry) }),
  transcriptMessage({ resync: z.literal(true) }),
  transcriptMessage({ gap: TranscriptGap }),
]);
export type TranscriptMessage = z.infer<typeof TranscriptMessage>;

export const ServerMessage = z.union([
  ReplyMessage,
  SnapshotMessage,
  UpdateMessage,
  ErrorMessage,
  TranscriptMessage,
]);
export type ServerMessage = z.infer<typeof ServerMessage>;

// ---------------------------------------------------------------------------------------------
// Results: the `result` of an `ok: true` reply, per request op
// ---------------------------------------------------------------------------------------------

/** subscribe: how the client's view was brought up to date, and the seq it is at. */
export const SubscribeResult = z.object({
  taskId: Id,
  sessionId: Id.optional(),
  mode: z.enum(['snapshot', 'resumed', 'resync']),
  /** The task seq the client is at once the messages sent before this reply are applied. */
  seq: z.number().int().min(0),
});
export type SubscribeResult = z.infer<typeof SubscribeResult>;

export const UnsubscribeResult = z.object({ taskId: Id, subscribed: z.literal(false) });

/** transcript.subscribe: the cursor its messages start after. */
export const TranscriptSubscribeResult = z.object({
  taskId: Id,
  sessionId: Id,
  subscribed: z.literal(true),
  cursor: z.string(),
});
export type TranscriptSubscribeResult = z.infer<typeof TranscriptSubscribeResult>;
export const TranscriptUnsubscribeResult = z.object({
  taskId: Id,
  sessionId: Id,
  subscribed: z.literal(false),
});

/**
 * prompt: the decision on the prompt under its idempotency key — the same for every retry of the
 * key, through any gateway. `pending` when no decision came within the gateway's admission wait:
 * the decision follows as a `prompt.decided` update (on the task's subscription, or, for a
 * connection not subscribed to the task, as an update message on the connection that prompted).
 */
export const PromptResult = z.discriminatedUnion('status', [
  z.object({
    status: z.literal('decided'),
    taskId: Id,
    sessionId: Id,
    idempotencyKey: Id,
    promptId: Id,
    decision: PromptOutcome,
  }),
  z.object({ status: z.literal('pending'), taskId: Id, sessionId: Id, idempotencyKey: Id }),
]);
export type PromptResult = z.infer<typeof PromptResult>;

/**
 * queue.cancel, queue.send_now, queue.auto_run, session.cancel, session.reset, session.delete,
 * session.force_release, permission.respond, task.archive, task.unarchive, task.delete: `done` once the owner of the
 * task carried the command out (a delete of what is already deleted is done too), `failed` when it
 * refused it (`command.rejected` / `task.command_rejected`, with its reason), `pending` when it
 * had not answered within the gateway's admission wait.
 */
export const CommandResult = z.discriminatedUnion('status', [
  z.object({ status: z.literal('done'), commandId: Id }),
  z.object({
    status: z.literal('failed'),
    commandId: Id,
    reason: z.string(),
    message: z.string(),
  }),
  z.object({ status: z.literal('pending'), commandId: Id }),
]);
export type CommandResult = z.infer<typeof CommandResult>;

/** queue.list: the session's queue as the task's current view has it. */
export const QueueListResult = QueueView.extend({ taskId: Id, sessionId: Id });
export type QueueListResult = z.infer<typeof QueueListResult>;

export const PongResult = z.object({ pong: z.literal(true) });

/**
 * REST, an execution: `waiting` for a free worker slot (with `position`, 1-based among the
 * waiting executions: 1 is the next a free slot takes; null when not known), `active` (a worker
 * hosts it), `completed` or `failed` (a worker refused it, e.g. `start_timeout`: no worker took
 * it within EXECUTION_START_TIMEOUT_MS), or `unknown` (never started here, or finished more than
 * a week ago).
 */
export const ExecutionStatusResult = z.object({
  executionId: Id,
  state: z.enum(['waiting', 'active', 'completed', 'failed', 'unknown']),
  position: z.number().int().min(1).nullable(),
});
export type ExecutionStatusResult = z.infer<typeof ExecutionStatusResult>;
/** REST, the reply to starting an execution: its status and its job. */
export const ExecutionStartResult = ExecutionStatusResult.extend({ jobId: z.string() });
export type ExecutionStartResult = z.infer<typeof ExecutionStartResult>;
