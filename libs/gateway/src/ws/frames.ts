import type { ClientMessage } from '@baton/protocol';
import {
  Id,
  MAX_PROMPT_CHARS,
  PingRequest,
  PromptRequest,
  QueueAutoRunRequest,
  QueueCancelRequest,
  QueueListRequest,
  QueueSendNowRequest,
  SessionCancelRequest,
  SessionDeleteRequest,
  SessionForceReleaseRequest,
  PermissionRespondRequest,
  SessionResetRequest,
  SubscribeRequest,
  TaskArchiveRequest,
  TaskDeleteRequest,
  TaskUnarchiveRequest,
  TranscriptSubscribeRequest,
  TranscriptUnsubscribeRequest,
  UnsubscribeRequest,
  type WireError,
} from '@baton/protocol';
import type { z } from 'zod';

const BY_OP = {
  subscribe: SubscribeRequest,
  unsubscribe: UnsubscribeRequest,
  prompt: PromptRequest,
  'queue.list': QueueListRequest,
  'queue.cancel': QueueCancelRequest,
  'queue.send_now': QueueSendNowRequest,
  'queue.auto_run': QueueAutoRunRequest,
  'session.cancel': SessionCancelRequest,
  'session.reset': SessionResetRequest,
  'session.delete': SessionDeleteRequest,
  'session.force_release': SessionForceReleaseRequest,
  'permission.respond': PermissionRespondRequest,
  'task.archive': TaskArchiveRequest,
  'task.unarchive': TaskUnarchiveRequest,
  'task.delete': TaskDeleteRequest,
  ping: PingRequest,
  'transcript.subscribe': TranscriptSubscribeRequest,
  'transcript.unsubscribe': TranscriptUnsubscribeRequest,
} as const satisfies Record<ClientMessage['op'], z.ZodType>;

export const OPS = Object.keys(BY_OP) as ClientMessage['op'][];

export type ParsedFrame =
  | { ok: true; message: ClientMessage }
  /** `id` is the request's id when it had a usable one, so the error can be its reply. */
  | { ok: false; id?: string; op?: string; error: WireError };

/** A frame's JSON, or why it is not a message at all. */
export function readJson(
  data: string | Buffer,
  maxBytes: number,
): { ok: true; value: unknown } | { ok: false; error: WireError } {
  if (typeof data !== 'string') {
    return {
      ok: false,
      error: {
        code: 'invalid_message',
        message: 'binary frames are not accepted: send each message as one JSON text frame',
      },
    };
  }
  const bytes = Buffer.byteLength(data, 'utf8');
  if (bytes > maxBytes) {
    return {
      ok: false,
      error: {
        code: 'message_too_large',
        message: `message is ${bytes} bytes, the limit is ${maxBytes}`,
      },
    };
  }
  try {
    return { ok: true, value: JSON.parse(data) };
  } catch (err) {
    return {
      ok: false,
      error: { code: 'invalid_message', message: `not JSON: ${(err as Error).message}` },
    };
  }
}

/** The usable request id of a parsed value, if any. */
export function idOf(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const id = (value as { id?: unknown }).id;
  return Id.safeParse(id).success ? (id as string) : undefined;
}

/**
 * Validates one client message: every failure names the field (dotted path) and the rule it
 * breaks, from the zod issues of the request's own schema.
 */
export function parseMessage(value: unknown): ParsedFrame {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return {
      ok: false,
      error: { code: 'invalid_message', message: '(root): expected a JSON object' },
    };
  }
  const id = idOf(value);
  const withId = id === undefined ? {} : { id };
  const op = (value as { op?: unknown }).op;
  if (typeof op !== 'string' || !Object.hasOwn(BY_OP, op)) {
    const got =
      typeof op === 'string' ? `unknown op ${JSON.stringify(op.slice(0, 100))}` : 'missing op';
    return {
      ok: false,
      ...withId,
      error: {
        code: 'invalid_message',
        path: 'op',
        message: `op: ${got}; expected one of ${OPS.join(', ')}`,
      },
    };
  }
  const r = BY_OP[op as ClientMessage['op']].safeParse(value);
  if (r.success) return { ok: true, message: r.data as ClientMessage };
  const issues = r.error.issues;
  const first = issues[0]!;
  const path = first.path.map(String).join('.') || '(root)';
  if (op === 'prompt' && path === 'text' && first.code === 'too_big') {
    const text = (value as { text?: unknown }).text;
    const n = typeof text === 'string' ? text.length : 0;
    return {
      ok: false,
      ...withId,
      op,
      error: {
        code: 'prompt_too_long',
        path,
        message: `text: the prompt has ${n} characters, the limit is ${MAX_PROMPT_CHARS}`,
      },
    };
  }
  const message = issues
    .slice(0, 3)
    .map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`)
    .join('; ');
  return { ok: false, ...withId, op, error: { code: 'invalid_message', path, message } };
}

/** A token bucket: `rate` messages per second, bursts up to `rate`. */
export interface TokenBucket {
  tokens: number;
  /** When the bucket was last looked at (ms). */
  tokensAt: number;
}

/** Takes a token from `b` at `now`; false when there is none. */
export function takeToken(b: TokenBucket, rate: number, now: number): boolean {
  b.tokens = Math.min(rate, b.tokens + ((now - b.tokensAt) * rate) / 1000);
  b.tokensAt = now;
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}
