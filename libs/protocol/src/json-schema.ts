import { z } from 'zod';
import { BackgroundWork } from './background-work';
import { StreamEntry } from './entries';
import { ExecutionJob, InboxMessage } from './execution';
import { Update } from './updates';
import { TaskView } from './views';
import {
  ClientMessage,
  CommandResult,
  PongResult,
  PromptResult,
  QueueListResult,
  ServerMessage,
  SubscribeResult,
  TranscriptSubscribeResult,
  TranscriptUnsubscribeResult,
  UnsubscribeResult,
} from './wire';

/** Every schema Baton publishes as JSON Schema, by file name. */
export const PUBLISHED_SCHEMAS = {
  'stream-entry': StreamEntry,
  update: Update,
  'task-view': TaskView,
  'background-work': BackgroundWork,
  'client-message': ClientMessage,
  'server-message': ServerMessage,
  // The `result` of an `ok: true` reply, per request op (the reply itself says `result: unknown`).
  'subscribe-result': SubscribeResult,
  'unsubscribe-result': UnsubscribeResult,
  'prompt-result': PromptResult,
  'command-result': CommandResult,
  'queue-list-result': QueueListResult,
  'pong-result': PongResult,
  'transcript-subscribe-result': TranscriptSubscribeResult,
  'transcript-unsubscribe-result': TranscriptUnsubscribeResult,
  'execution-job': ExecutionJob,
  'inbox-message': InboxMessage,
} as const;

export function toJsonSchemas(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(PUBLISHED_SCHEMAS)) {
    out[name] = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
  }
  return out;
}
