import { z } from 'zod';
import { Id, MAX_PROMPT_CHARS, PromptOrigin, SchemaVersion } from './common';
import { Update } from './updates';
import { TaskView } from './views';

/**
 * Client wire messages over WebSocket (one JSON object per text frame). Every request carries an
 * `id` that its reply echoes.
 */
const request = <O extends string, S extends z.ZodRawShape>(op: O, shape: S) =>
  z.object({ v: SchemaVersion, id: Id, op: z.literal(op), ...shape });
const sessionRef = { taskId: Id, sessionId: Id };
const Generation = z.number().int().min(0);

export const SubscribeRequest = request('subscribe', {
  taskId: Id,
  sessionId: Id.optional(),
  /** Resume: the last sequence the client applied; it gets what it missed, or a resync snapshot. */
  afterSeq: z.number().int().min(0).optional(),
});
export const UnsubscribeRequest = request('unsubscribe', { taskId: Id });
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
export const PingRequest = request('ping', {});

export const ClientMessage = z.discriminatedUnion('op', [
  SubscribeRequest,
  UnsubscribeRequest,
  PromptRequest,
  QueueListRequest,
  QueueCancelRequest,
  QueueSendNowRequest,
  QueueAutoRunRequest,
  SessionCancelRequest,
  PingRequest,
]);
export type ClientMessage = z.infer<typeof ClientMessage>;

export const ErrorCode = z.enum([
  'invalid_message',
  'message_too_large',
  'rate_limited',
  'too_many_subscriptions',
  'unauthorized',
  'forbidden',
  'not_found',
  'unavailable',
  'internal',
]);
export const WireError = z.object({
  code: ErrorCode,
  message: z.string(),
  /** The offending field, as a dotted path, when the error is about one field. */
  path: z.string().optional(),
});
export type WireError = z.infer<typeof WireError>;

export const ReplyMessage = z.union([
  z.object({
    v: SchemaVersion,
    type: z.literal('reply'),
    id: Id,
    ok: z.literal(true),
    result: z.unknown(),
  }),
  z.object({
    v: SchemaVersion,
    type: z.literal('reply'),
    id: Id,
    ok: z.literal(false),
    error: WireError,
  }),
]);
export const SnapshotMessage = z.object({
  v: SchemaVersion,
  type: z.literal('snapshot'),
  /** True when updates the client asked for are no longer retained: start over from this state. */
  resync: z.boolean(),
  task: TaskView,
});
export const UpdateMessage = z.object({
  v: SchemaVersion,
  type: z.literal('update'),
  update: Update,
});
export const ErrorMessage = z.object({
  v: SchemaVersion,
  type: z.literal('error'),
  error: WireError,
});

export const ServerMessage = z.union([ReplyMessage, SnapshotMessage, UpdateMessage, ErrorMessage]);
export type ServerMessage = z.infer<typeof ServerMessage>;
