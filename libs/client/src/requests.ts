import { SCHEMA_VERSION, type ClientMessage } from '@baton/protocol';
import type { z } from 'zod';
import { BatonError } from './errors';

export interface RequestOptions {
  /** How long a request waits for its reply (default 30 s). */
  readonly requestTimeoutMs?: number;
  /**
   * Largest message the client sends (default 262144, the gateway's default limit): a larger one
   * is refused here with `message_too_large`, since the server's refusal could not name it.
   */
  readonly maxMessageBytes?: number;
}

/** A client message as the parts of the client write it: the envelope (`v`, `id`) is added here. */
export type Outgoing = ClientMessage extends infer M
  ? M extends ClientMessage
    ? Omit<M, 'v' | 'id'>
    : never
  : never;

/**
 * What happens to a request that was sent when the connection drops before its reply: reads are
 * sent again; anything else rejects with `disconnected` (a command may or may not have been
 * carried out — prompts and subscriptions handle that themselves).
 */
export type OnDrop = 'reject' | 'resend';

/** Refusals that say "not now" rather than "no": subscriptions and prompts try again later. */
export const RETRYABLE: ReadonlySet<string> = new Set(['rate_limited', 'unavailable', 'timeout']);

/** The part of the connection that requests go out on. */
export interface Line {
  readonly closed: boolean;
  readonly writable: boolean;
  send(text: string): void;
}

interface Inflight {
  readonly id: string;
  readonly message: Outgoing;
  readonly onDrop: OnDrop;
  sent: boolean;
  timer: ReturnType<typeof setTimeout> | null;
  resolve(result: unknown): void;
  reject(error: BatonError): void;
}

/** Requests and their replies, matched by id; each waits for its reply until a timeout. */
export class Requests {
  private nextId = 0;
  private readonly inflight = new Map<string, Inflight>();

  constructor(
    private readonly options: RequestOptions,
    private readonly line: Line,
  ) {}

  /** Sends `message` (now, or once connected) and resolves with the result of its reply. */
  request(message: Outgoing, onDrop: OnDrop): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (this.line.closed) return reject(new BatonError('closed', 'the client is closed'));
      const id = `r${++this.nextId}`;
      const r: Inflight = { id, message, onDrop, sent: false, timer: null, resolve, reject };
      r.timer = setTimeout(
        () => this.settle(r, new BatonError('timeout', `no reply to ${message.op} in time`)),
        this.options.requestTimeoutMs ?? 30_000,
      );
      this.inflight.set(id, r);
      this.transmit(r);
    });
  }

  /** A reply came: its request resolves with the result or rejects with the error. */
  reply(id: string, outcome: BatonError | { result: unknown }): void {
    const r = this.inflight.get(id);
    if (r) this.settle(r, outcome);
  }

  /** The connection dropped: what was sent is sent again or rejects, as its `onDrop` says. */
  lost(): void {
    for (const r of [...this.inflight.values()]) {
      if (!r.sent) continue;
      if (r.onDrop === 'resend') r.sent = false;
      else
        this.settle(r, new BatonError('disconnected', 'the connection dropped before the reply'));
    }
  }

  /** Connected again: sends what is not sent yet. */
  resume(): void {
    for (const r of this.inflight.values()) if (!r.sent) this.transmit(r);
  }

  rejectAll(error: BatonError): void {
    for (const r of [...this.inflight.values()]) this.settle(r, error);
  }

  private transmit(r: Inflight): void {
    if (!this.line.writable) return;
    const text = JSON.stringify({ v: SCHEMA_VERSION, id: r.id, ...r.message });
    const max = this.options.maxMessageBytes ?? 262_144;
    // UTF-8 takes at most 3 bytes per UTF-16 unit: only long messages need counting.
    if (text.length * 3 > max) {
      const bytes = new TextEncoder().encode(text).length;
      if (bytes > max) {
        this.settle(
          r,
          new BatonError('message_too_large', `message is ${bytes} bytes, the limit is ${max}`),
        );
        return;
      }
    }
    this.line.send(text);
    r.sent = true;
  }

  private settle(r: Inflight, outcome: BatonError | { result: unknown }): void {
    if (!this.inflight.delete(r.id)) return;
    if (r.timer) clearTimeout(r.timer);
    if (outcome instanceof BatonError) r.reject(outcome);
    else r.resolve(outcome.result);
  }
}

/** The result of a reply, checked against its schema: a mismatch is a `protocol` error. */
export function parseResult<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new BatonError('protocol', `unexpected reply: ${issue?.message}`, issue?.path.join('.'));
  }
  return parsed.data;
}
