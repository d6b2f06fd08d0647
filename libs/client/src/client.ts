import {
  CommandResult,
  MAX_PROMPT_CHARS,
  PongResult,
  PromptResult,
  QueueListResult,
  SCHEMA_VERSION,
  ServerMessage,
  SubscribeResult,
  UPDATE_SCHEMAS,
  type ClientMessage,
  type PromptOrigin,
  type PromptOutcome,
  type TaskView,
  type Update,
} from '@baton/protocol';
import type { z } from 'zod';
import { backoffDelay, type BackoffOptions } from './backoff';
import { Emitter } from './emitter';
import { BatonError } from './errors';
import { GroupBuffer, stepUpdate } from './reducer';
import { defaultWebSocket, OPEN, type WebSocketConstructor, type WebSocketLike } from './socket';

export interface BatonClientOptions {
  /** WebSocket constructor; default: the global one, else the `ws` package (Node). */
  readonly WebSocket?: WebSocketConstructor;
  /**
   * Where the token goes: `query` (`?token=`, the only way a browser can send it) or `header`
   * (`Authorization: Bearer`, `ws` only). Default: `header` with `ws`, `query` otherwise.
   */
  readonly tokenIn?: 'query' | 'header';
  readonly backoff?: BackoffOptions;
  /**
   * Heartbeat period (default 15 s): after this long without traffic either way the client sends
   * a ping; after twice this long without hearing anything the connection is dropped and redialled.
   */
  readonly heartbeatMs?: number;
  /** How long a request waits for its reply (default 30 s). */
  readonly requestTimeoutMs?: number;
  /** Retry when the very first connection fails (default false: `connect` rejects). */
  readonly retryInitialConnect?: boolean;
  /** Idempotency keys for prompts that come without one. */
  readonly newKey?: () => string;
  /**
   * Largest message the client sends (default 262144, the gateway's default limit): a larger one
   * is refused here with `message_too_large`, since the server's refusal could not name it.
   */
  readonly maxMessageBytes?: number;
  /**
   * A prompt answered `pending` is asked about again (same key, so never made twice) after this
   * long, then at doubling intervals up to ten times it, in case its decision update is lost
   * (default 30 s; 0: never).
   */
  readonly pendingRecheckMs?: number;
}

/** Why a subscription's view changed. */
export type ViewCause = 'snapshot' | 'resync' | 'update';

export interface SubscribeOptions {
  /** Watch one session: the snapshot holds it only and other sessions' updates are not sent. */
  readonly sessionId?: string;
  /**
   * Every new view: the snapshot, then once per applied group (the updates of one stream entry,
   * applied together: never a view between two updates of one entry).
   */
  readonly onView?: (view: TaskView, cause: ViewCause) => void;
  /** Each update applied to the view, with the view after its whole group. */
  readonly onUpdate?: (update: Update, view: TaskView) => void;
  /** The view was replaced by a fresh snapshot because updates were missed or no longer retained. */
  readonly onResync?: (view: TaskView) => void;
  /** The server refused the subscription (forbidden, not_found, …); the subscription is over. */
  readonly onError?: (error: BatonError) => void;
}

export type SubscriptionState = 'subscribing' | 'live' | 'resyncing' | 'closed';

export interface Subscription {
  readonly taskId: string;
  readonly sessionId: string | undefined;
  readonly state: SubscriptionState;
  /** The local view: null until the first snapshot; always after a whole group of updates. */
  readonly view: TaskView | null;
  /** The last applied sequence (0 before the first snapshot): the end of a whole group. */
  readonly seq: number;
  /** Resolves with the first view; rejects if the server refuses the subscription. */
  readonly ready: Promise<TaskView>;
  unsubscribe(): Promise<void>;
}

export interface PromptRequest {
  readonly taskId: string;
  readonly sessionId: string;
  readonly text: string;
  /** Reused on every retry, so the prompt is never made twice; generated when absent. */
  readonly idempotencyKey?: string;
  readonly origin?: PromptOrigin;
}

export interface PendingPrompt {
  readonly taskId: string;
  readonly sessionId: string;
  readonly idempotencyKey: string;
  /** `sending`: no reply yet (or the connection dropped first); `pending`: accepted, undecided. */
  readonly status: 'sending' | 'pending';
}

export interface PromptDecision {
  readonly taskId: string;
  readonly sessionId: string;
  readonly idempotencyKey: string;
  readonly promptId: string;
  readonly decision: PromptOutcome;
  /** The reply said `pending` first and the decision came later as an update. */
  readonly wasPending: boolean;
}

export interface ClientEvents extends Record<string, unknown> {
  open: { reconnected: boolean };
  close: { code: number; reason: string; willReconnect: boolean };
  reconnecting: { attempt: number; delayMs: number };
  /** Errors not tied to one request: unsolicited server errors, protocol violations, auth. */
  error: BatonError;
  /**
   * Every new update (a duplicate of one already applied is not told again), once its group (the
   * updates of one stream entry) is complete: the updates of a group come one after the other,
   * before the group is applied to its subscription.
   */
  update: Update;
  'prompt.pending': PendingPrompt;
  'prompt.decided': PromptDecision;
}

type SessionRef = { readonly taskId: string; readonly sessionId: string };
type Outgoing = ClientMessage extends infer M
  ? M extends ClientMessage
    ? Omit<M, 'v' | 'id'>
    : never
  : never;

/**
 * What happens to a request that was sent when the connection drops before its reply: reads are
 * sent again; anything else rejects with `disconnected` (a command may or may not have been
 * carried out — prompts and subscriptions handle that themselves).
 */
type OnDrop = 'reject' | 'resend';

interface Inflight {
  readonly id: string;
  readonly message: Outgoing;
  readonly onDrop: OnDrop;
  sent: boolean;
  timer: ReturnType<typeof setTimeout> | null;
  resolve(result: unknown): void;
  reject(error: BatonError): void;
}

interface PromptEntry {
  readonly request: Required<PromptRequest>;
  status: 'sending' | 'pending';
  retries: number;
  rechecks: number;
  wasPending: boolean;
  readonly promise: Promise<PromptDecision>;
  resolve(d: PromptDecision): void;
  reject(e: BatonError): void;
  readonly onPending: Array<(p: PendingPrompt) => void>;
}

/** Refusals that say "not now" rather than "no": subscriptions and prompts try again later. */
const RETRYABLE: ReadonlySet<string> = new Set(['rate_limited', 'unavailable', 'timeout']);
const MAX_PROMPT_RETRIES = 8;

const AUTH_CLOSE_CODES: Record<number, 'unauthorized' | 'forbidden'> = {
  4401: 'unauthorized',
  4403: 'forbidden',
};

/**
 * A Baton WebSocket client: reconnects by itself, resumes every subscription from its last
 * applied seq, keeps a local view per task with the pure reducer, and resolves prompts with
 * their admission decision (re-sending them under the same idempotency key after a reconnect,
 * so none is ever made twice).
 */
export class BatonClient extends Emitter<ClientEvents> {
  private readonly options: BatonClientOptions;
  private ctor: WebSocketConstructor | null = null;
  private ctorIsWs = false;
  private url = '';
  private token = '';
  private socket: WebSocketLike | null = null;
  private dialing: WebSocketLike | null = null;
  private everOpened = false;
  private closed = true;
  private attempt = 0;
  private lastError = '';
  private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  private heartbeat: ReturnType<typeof setInterval> | null = null;
  private lastReceived = 0;
  private lastSent = 0;
  private nextId = 0;
  private firstOpen: { resolve(): void; reject(e: BatonError): void } | null = null;
  private readonly inflight = new Map<string, Inflight>();
  private readonly subs = new Map<string, SubscriptionImpl>();
  private readonly prompts = new Map<string, PromptEntry>();

  readonly queue = {
    list: (ref: SessionRef) =>
      this.request({ op: 'queue.list', ...ref }, 'resend').then((r) =>
        this.result(QueueListResult, r),
      ),
    cancel: (ref: SessionRef & { promptId: string }) =>
      this.command({ op: 'queue.cancel', ...ref }),
    sendNow: (ref: SessionRef & { promptId: string; observedGeneration?: number }) =>
      this.command({ op: 'queue.send_now', ...ref }),
    setAutoRun: (ref: SessionRef & { enabled: boolean }) =>
      this.command({ op: 'queue.auto_run', ...ref }),
  };

  constructor(options: BatonClientOptions = {}) {
    super();
    this.options = options;
  }

  /** True while a connection is open. */
  get connected(): boolean {
    return this.socket !== null;
  }

  /**
   * Opens the connection; resolves once it is open. A refused token rejects with `unauthorized`
   * or `forbidden` and is never retried; other failures of the first attempt reject unless
   * `retryInitialConnect` is set. Later drops reconnect on their own until `close()`.
   */
  async connect(url: string, token: string): Promise<void> {
    if (!this.closed) throw new Error('BatonClient: already connected or connecting');
    if (this.options.WebSocket) {
      this.ctor = this.options.WebSocket;
      this.ctorIsWs = false;
    } else {
      const d = await defaultWebSocket();
      this.ctor = d.ctor;
      this.ctorIsWs = d.isWs;
    }
    this.url = url;
    this.token = token;
    this.closed = false;
    this.everOpened = false;
    this.attempt = 0;
    return new Promise<void>((resolve, reject) => {
      this.firstOpen = { resolve, reject };
      this.dial();
    });
  }

  /** Closes the connection for good: pending requests and prompts reject with `closed`. */
  async close(): Promise<void> {
    if (this.closed && !this.socket && !this.dialing) return;
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    this.stopHeartbeat();
    const error = new BatonError('closed', 'the client was closed');
    for (const r of [...this.inflight.values()]) this.settle(r, error);
    for (const p of [...this.prompts.values()]) this.rejectPrompt(p, error);
    for (const s of this.subs.values()) s.end();
    this.subs.clear();
    this.firstOpen?.reject(error);
    this.firstOpen = null;
    const sockets = [this.socket, this.dialing].filter((s): s is WebSocketLike => s !== null);
    this.socket = null;
    this.dialing = null;
    await Promise.all(
      sockets.map(
        (ws) =>
          new Promise<void>((resolve) => {
            if (ws.readyState === 3) return resolve();
            // A socket still connecting may never report its close; do not hang on it.
            const t = setTimeout(resolve, 1_000);
            ws.onclose = () => {
              clearTimeout(t);
              resolve();
            };
            ws.onerror = () => undefined;
            ws.onmessage = null;
            ws.close(1000, 'client closed');
          }),
      ),
    );
    this.emit('close', { code: 1000, reason: 'client closed', willReconnect: false });
  }

  /**
   * Subscribes to a task (or one of its sessions): a snapshot, then every update in order. The
   * subscription survives reconnects: it is renewed with its last applied seq, so it gets what it
   * missed or, when that is no longer retained, a fresh snapshot (`onResync`).
   */
  subscribe(taskId: string, options: SubscribeOptions = {}): Subscription {
    if (this.subs.has(taskId)) throw new Error(`BatonClient: already subscribed to task ${taskId}`);
    const sub = new SubscriptionImpl(this, taskId, options);
    this.subs.set(taskId, sub);
    if (this.socket) this.sendSubscribe(sub, sub.resumeFrom());
    return sub;
  }

  async unsubscribe(taskId: string): Promise<void> {
    const sub = this.subs.get(taskId);
    if (!sub) return;
    this.subs.delete(taskId);
    sub.end();
    if (this.socket) await this.request({ op: 'unsubscribe', taskId }, 'reject').catch(() => {});
  }

  /**
   * Submits a prompt and resolves with its decision: admitted, queued (with its position) or
   * rejected. When the server answers `pending`, `onPending` is called and the promise waits for
   * the `prompt.decided` update. If the connection drops first, the prompt is sent again under
   * the same idempotency key after the reconnect, and the server answers with the same decision.
   */
  prompt(
    request: PromptRequest,
    options: { onPending?: (p: PendingPrompt) => void } = {},
  ): Promise<PromptDecision> {
    const full: Required<PromptRequest> = {
      taskId: request.taskId,
      sessionId: request.sessionId,
      text: request.text,
      origin: request.origin ?? 'human',
      idempotencyKey: request.idempotencyKey ?? (this.options.newKey ?? randomKey)(),
    };
    if (full.text.length > MAX_PROMPT_CHARS) {
      return Promise.reject(
        new BatonError(
          'prompt_too_long',
          `the prompt has ${full.text.length} characters, the limit is ${MAX_PROMPT_CHARS}`,
          'text',
        ),
      );
    }
    const key = promptKey(full);
    const existing = this.prompts.get(key);
    if (existing) {
      if (options.onPending) existing.onPending.push(options.onPending);
      return existing.promise;
    }
    let resolve!: (d: PromptDecision) => void;
    let reject!: (e: BatonError) => void;
    const promise = new Promise<PromptDecision>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const entry: PromptEntry = {
      request: full,
      status: 'sending',
      retries: 0,
      rechecks: 0,
      wasPending: false,
      promise,
      resolve,
      reject,
      onPending: options.onPending ? [options.onPending] : [],
    };
    this.prompts.set(key, entry);
    if (this.closed) this.rejectPrompt(entry, new BatonError('closed', 'the client is closed'));
    else this.sendPrompt(entry);
    return promise;
  }

  /** Prompts sent but not decided yet. */
  get pendingPrompts(): PendingPrompt[] {
    return [...this.prompts.values()].map((p) => pendingOf(p));
  }

  /**
   * Answers a permission request the agent waits on (the session view's `permissions`) with one
   * of the options it offered. A request already answered (by anyone, or by its timeout or a
   * cancel) comes back `failed` with reason `permission_answered`, and nothing changes.
   */
  answerPermission(
    ref: SessionRef & { requestId: string; optionId: string },
  ): Promise<CommandResult> {
    return this.command({ op: 'permission.respond', ...ref });
  }

  /** Cancels the session's running turn (only the one at `observedGeneration`, when given). */
  cancel(ref: SessionRef & { observedGeneration?: number }): Promise<CommandResult> {
    return this.command({ op: 'session.cancel', ...ref });
  }

  /** A round trip to the server. */
  async ping(): Promise<void> {
    this.result(PongResult, await this.request({ op: 'ping' }, 'reject'));
  }

  // -------------------------------------------------------------------------------------------
  // Connection
  // -------------------------------------------------------------------------------------------

  private dial(): void {
    const Ctor = this.ctor!;
    const useHeader = (this.options.tokenIn ?? (this.ctorIsWs ? 'header' : 'query')) === 'header';
    const url = new URL(this.url);
    if (!useHeader) url.searchParams.set('token', this.token);
    const ws = useHeader
      ? new Ctor(url.toString(), { headers: { authorization: `Bearer ${this.token}` } })
      : new Ctor(url.toString());
    this.dialing = ws;
    this.lastError = '';
    ws.onopen = () => {
      if (this.dialing !== ws) return;
      this.dialing = null;
      this.socket = ws;
      const reconnected = this.everOpened;
      this.everOpened = true;
      this.attempt = 0;
      this.lastReceived = this.lastSent = Date.now();
      this.startHeartbeat();
      this.firstOpen?.resolve();
      this.firstOpen = null;
      this.emit('open', { reconnected });
      this.resume();
    };
    ws.onmessage = (ev) => {
      if (this.socket !== ws) return;
      this.lastReceived = Date.now();
      this.receive(typeof ev.data === 'string' ? ev.data : String(ev.data));
    };
    ws.onerror = (ev) => {
      this.lastError = ev.message ?? (ev.error instanceof Error ? ev.error.message : '');
    };
    ws.onclose = (ev) => this.dropped(ws, ev.code, ev.reason);
  }

  private dropped(ws: WebSocketLike, code: number, reason: string): void {
    if (ws !== this.socket && ws !== this.dialing) return;
    this.socket = null;
    this.dialing = null;
    this.stopHeartbeat();
    for (const r of [...this.inflight.values()]) {
      if (!r.sent) continue;
      if (r.onDrop === 'resend') r.sent = false;
      else
        this.settle(r, new BatonError('disconnected', 'the connection dropped before the reply'));
    }
    for (const s of this.subs.values()) s.state = 'subscribing';
    if (this.closed) return;

    const auth = authFailure(code, reason, this.lastError);
    if (auth) {
      const error = new BatonError(
        auth,
        `the server refused the token: ${reason || this.lastError || code}`,
      );
      this.firstOpen?.reject(error);
      this.firstOpen = null;
      this.emit('error', error);
      void this.close();
      return;
    }
    if (!this.everOpened && !this.options.retryInitialConnect) {
      const error = new BatonError(
        'unavailable',
        `cannot connect to ${this.url}: ${this.lastError || reason || `close code ${code}`}`,
      );
      this.firstOpen?.reject(error);
      this.firstOpen = null;
      void this.close();
      return;
    }
    const delayMs = backoffDelay(this.attempt++, this.options.backoff);
    this.emit('close', { code, reason, willReconnect: true });
    this.emit('reconnecting', { attempt: this.attempt, delayMs });
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (!this.closed) this.dial();
    }, delayMs);
  }

  /** After (re)connecting: renew subscriptions first, so decisions reach them, then the rest. */
  private resume(): void {
    for (const sub of this.subs.values()) this.sendSubscribe(sub, sub.resumeFrom());
    for (const p of this.prompts.values()) this.sendPrompt(p);
    for (const r of this.inflight.values()) if (!r.sent) this.transmit(r);
  }

  private startHeartbeat(): void {
    const period = this.options.heartbeatMs ?? 15_000;
    this.stopHeartbeat();
    this.heartbeat = setInterval(
      () => {
        const ws = this.socket;
        if (!ws) return;
        const now = Date.now();
        if (now - this.lastReceived >= 2 * period) {
          // Dead peer or dead path: a half-open TCP connection never reports its close.
          if (ws.terminate) ws.terminate();
          else ws.close(4000, 'heartbeat timeout');
          this.dropped(ws, 4000, 'heartbeat timeout');
          return;
        }
        if (now - this.lastReceived >= period || now - this.lastSent >= period)
          this.request({ op: 'ping' }, 'reject').catch(() => {});
      },
      Math.max(10, Math.floor(period / 2)),
    );
    (this.heartbeat as { unref?: () => void }).unref?.();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  // -------------------------------------------------------------------------------------------
  // Requests
  // -------------------------------------------------------------------------------------------

  /** @internal */
  request(message: Outgoing, onDrop: OnDrop): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new BatonError('closed', 'the client is closed'));
      const id = `r${++this.nextId}`;
      const r: Inflight = { id, message, onDrop, sent: false, timer: null, resolve, reject };
      r.timer = setTimeout(
        () => this.settle(r, new BatonError('timeout', `no reply to ${message.op} in time`)),
        this.options.requestTimeoutMs ?? 30_000,
      );
      this.inflight.set(id, r);
      if (this.socket) this.transmit(r);
    });
  }

  private transmit(r: Inflight): void {
    const ws = this.socket;
    if (!ws || ws.readyState !== OPEN) return;
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
    ws.send(text);
    r.sent = true;
    this.lastSent = Date.now();
  }

  private settle(r: Inflight, outcome: BatonError | { result: unknown }): void {
    if (!this.inflight.delete(r.id)) return;
    if (r.timer) clearTimeout(r.timer);
    if (outcome instanceof BatonError) r.reject(outcome);
    else r.resolve(outcome.result);
  }

  private async command(message: Outgoing): Promise<CommandResult> {
    return this.result(CommandResult, await this.request(message, 'reject'));
  }

  private result<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new BatonError(
        'protocol',
        `unexpected reply: ${issue?.message}`,
        issue?.path.join('.'),
      );
    }
    return parsed.data;
  }

  // -------------------------------------------------------------------------------------------
  // Incoming messages
  // -------------------------------------------------------------------------------------------

  private receive(text: string): void {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      this.emit('error', new BatonError('protocol', 'the server sent a frame that is not JSON'));
      return;
    }
    const parsed = ServerMessage.safeParse(json);
    if (!parsed.success) {
      const future = unknownUpdate(json);
      if (future) return this.onUpdate(future);
      const issue = parsed.error.issues[0];
      this.emit(
        'error',
        new BatonError(
          'protocol',
          `invalid server message: ${issue?.message}`,
          issue?.path.join('.'),
        ),
      );
      return;
    }
    const m = parsed.data;
    switch (m.type) {
      case 'reply': {
        const r = this.inflight.get(m.id);
        if (!r) return;
        this.settle(r, m.ok ? { result: m.result } : BatonError.fromWire(m.error));
        return;
      }
      case 'snapshot':
        this.subs.get(m.task.taskId)?.snapshot(m.task, m.resync);
        return;
      case 'update':
        return this.onUpdate(m.update);
      case 'error':
        this.emit('error', BatonError.fromWire(m.error));
        return;
    }
  }

  /**
   * Updates are taken in groups (one stream entry's): nothing of a group is told or applied before
   * its last update arrives, so no listener and no view ever sees part of a group.
   */
  private onUpdate(update: Update): void {
    const sub = this.subs.get(update.taskId);
    for (const group of sub ? sub.receive(update) : [[update]]) {
      for (const u of group) {
        this.emit('update', u);
        if (u.type === 'prompt.decided') {
          const entry = this.prompts.get(promptKey({ ...u.data, taskId: u.taskId }));
          if (entry) this.decide(entry, { ...u.data, taskId: u.taskId });
        }
      }
      sub?.apply(group);
    }
  }

  // -------------------------------------------------------------------------------------------
  // Subscriptions and prompts
  // -------------------------------------------------------------------------------------------

  /** @internal */
  sendSubscribe(sub: SubscriptionImpl, afterSeq: number | undefined): void {
    sub.state = afterSeq === undefined && sub.view ? 'resyncing' : 'subscribing';
    // The server starts again after the view's seq, a group boundary: a group under way comes again.
    sub.dropPending();
    const message: Outgoing = {
      op: 'subscribe',
      taskId: sub.taskId,
      ...(sub.sessionId !== undefined ? { sessionId: sub.sessionId } : {}),
      ...(afterSeq !== undefined ? { afterSeq } : {}),
    };
    this.request(message, 'reject').then(
      (raw) => {
        if (this.subs.get(sub.taskId) !== sub) return;
        let result: SubscribeResult;
        try {
          result = this.result(SubscribeResult, raw);
        } catch (err) {
          this.emit('error', err as BatonError);
          return;
        }
        sub.confirmed(result);
      },
      (err: BatonError) => {
        if (this.subs.get(sub.taskId) !== sub) return;
        if (err.code === 'disconnected' || err.code === 'closed') return; // renewed on reconnect
        if (RETRYABLE.has(err.code)) {
          this.later(sub.retries++, () => {
            if (this.subs.get(sub.taskId) === sub && this.socket)
              this.sendSubscribe(sub, sub.resumeFrom());
          });
          return;
        }
        this.subs.delete(sub.taskId);
        sub.fail(err);
      },
    );
  }

  /**
   * The decision of a pending prompt comes as an update; should that never reach this connection
   * (say, the gateway that promised it died), asking again under the same key gets it.
   */
  private recheckLater(entry: PromptEntry): void {
    const base = this.options.pendingRecheckMs ?? 30_000;
    if (base <= 0) return;
    const delay = Math.min(base * 2 ** entry.rechecks++, 10 * base);
    const t = setTimeout(() => {
      if (!this.closed && this.socket && this.prompts.get(promptKey(entry.request)) === entry)
        this.sendPrompt(entry);
    }, delay);
    (t as { unref?: () => void }).unref?.();
  }

  /** Runs `fn` after a jittered backoff delay, unless the client is closed by then. */
  private later(attempt: number, fn: () => void): void {
    const t = setTimeout(
      () => {
        if (!this.closed) fn();
      },
      backoffDelay(attempt, this.options.backoff),
    );
    (t as { unref?: () => void }).unref?.();
  }

  private sendPrompt(entry: PromptEntry): void {
    if (!this.socket) return; // sent by resume() once connected
    const { taskId, sessionId, text, idempotencyKey, origin } = entry.request;
    this.request({ op: 'prompt', taskId, sessionId, text, idempotencyKey, origin }, 'reject').then(
      (raw) => {
        if (this.prompts.get(promptKey(entry.request)) !== entry) return;
        let result: PromptResult;
        try {
          result = this.result(PromptResult, raw);
        } catch (err) {
          this.rejectPrompt(entry, err as BatonError);
          return;
        }
        if (result.status === 'decided') return this.decide(entry, result);
        const first = entry.status !== 'pending';
        entry.status = 'pending';
        entry.wasPending = true;
        this.recheckLater(entry);
        if (!first) return;
        const pending = pendingOf(entry);
        for (const f of entry.onPending) f(pending);
        this.emit('prompt.pending', pending);
      },
      (err: BatonError) => {
        if (this.prompts.get(promptKey(entry.request)) !== entry) return;
        // Dropped before the reply: resume() sends it again under the same key.
        if (err.code === 'disconnected') return;
        // The same key again is safe: it never makes a second prompt.
        if (RETRYABLE.has(err.code) && entry.retries < MAX_PROMPT_RETRIES) {
          this.later(entry.retries++, () => {
            if (this.prompts.get(promptKey(entry.request)) === entry) this.sendPrompt(entry);
          });
          return;
        }
        this.rejectPrompt(entry, err);
      },
    );
  }

  private decide(
    entry: PromptEntry,
    d: {
      taskId: string;
      sessionId: string;
      idempotencyKey: string;
      promptId: string;
      decision: PromptOutcome;
    },
  ): void {
    this.prompts.delete(promptKey(entry.request));
    const decided: PromptDecision = {
      taskId: d.taskId,
      sessionId: d.sessionId,
      idempotencyKey: d.idempotencyKey,
      promptId: d.promptId,
      decision: d.decision,
      wasPending: entry.wasPending,
    };
    entry.resolve(decided);
    this.emit('prompt.decided', decided);
  }

  private rejectPrompt(entry: PromptEntry, error: BatonError): void {
    this.prompts.delete(promptKey(entry.request));
    entry.reject(error);
  }
}

class SubscriptionImpl implements Subscription {
  state: SubscriptionState = 'subscribing';
  /** Refusals in a row that are worth another try (rate limited, store unavailable). */
  retries = 0;
  /** The view is known to be wrong: the next subscribe asks for a snapshot, not a resume. */
  private needsSnapshot = false;
  view: TaskView | null = null;
  readonly sessionId: string | undefined;
  readonly ready: Promise<TaskView>;
  /** The group under way: applied once its last update is here. */
  private readonly groups = new GroupBuffer();
  /**
   * A session subscription's seq as the server confirmed it while a group was under way (the
   * task moved on in other sessions): taken once that group is applied.
   */
  private confirmedSeq = 0;
  private resolveReady!: (v: TaskView) => void;
  private rejectReady!: (e: BatonError) => void;
  private isReady = false;

  constructor(
    private readonly client: BatonClient,
    readonly taskId: string,
    private readonly options: SubscribeOptions,
  ) {
    this.sessionId = options.sessionId;
    this.ready = new Promise((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    // Unobserved refusals are reported through onError; do not make them unhandled rejections.
    this.ready.catch(() => {});
  }

  get seq(): number {
    return this.view?.seq ?? 0;
  }

  /** What to subscribe with: the last applied seq, or nothing when a snapshot is needed. */
  resumeFrom(): number | undefined {
    return this.view && !this.needsSnapshot ? this.view.seq : undefined;
  }

  unsubscribe(): Promise<void> {
    return this.client.unsubscribe(this.taskId);
  }

  snapshot(task: TaskView, resync: boolean): void {
    if (this.state === 'closed') return;
    // Updates after a snapshot start at its seq, a group boundary: a group under way comes again.
    this.dropPending();
    const local = this.view;
    // A resync, or a fresh snapshot we asked for, replaces the view; an older one does not.
    const replace = resync || this.state === 'resyncing' || !local || task.seq >= local.seq;
    if (!replace) return;
    const cause: ViewCause =
      local && (resync || this.state === 'resyncing') ? 'resync' : 'snapshot';
    this.view = task;
    this.needsSnapshot = false;
    this.options.onView?.(task, cause);
    if (cause === 'resync' || resync) this.options.onResync?.(task);
    this.markReady(task);
  }

  /** Forgets the group under way. */
  dropPending(): void {
    this.groups.clear();
    this.confirmedSeq = 0;
  }

  /** The last seq received: of the group under way, else of the view. */
  private received(view: TaskView): number {
    const pending = this.groups.pending;
    return pending.length > 0 ? pending[pending.length - 1]!.seq : view.seq;
  }

  /**
   * Takes one update of this task; returns the groups it completes. Duplicates are dropped here,
   * and a gap asks for what was missed (the group under way is then sent again).
   */
  receive(u: Update): Update[][] {
    const view = this.view;
    // Nothing to keep consistent yet (or any more): told as it comes, applied to nothing.
    if (this.state === 'closed' || !view) return [[u]];
    if (u.taskId !== view.taskId) return [];
    const last = this.received(view);
    if (u.seq <= last) return [];
    // A session subscription skips the task's other sessions' seqs by design; the server checks
    // the gaplessness of the task's sequence for it.
    if (u.seq > last + 1 && this.sessionId === undefined) {
      this.dropPending();
      // Missed updates: ask for them (or a resync snapshot) from the last applied seq.
      if (this.state !== 'subscribing') this.client.sendSubscribe(this, view.seq);
      return [];
    }
    return this.groups.push(u);
  }

  /** Applies one whole group to the view: one new view, one onView. */
  apply(group: readonly Update[]): void {
    if (this.state === 'closed' || !this.view) return;
    const before = this.view;
    let v = before;
    for (const u of group) {
      let r = stepUpdate(v, u);
      if (this.sessionId !== undefined && (r.kind === 'gap' || r.kind === 'duplicate')) {
        // Seqs of other sessions were skipped (and receive() dropped real duplicates).
        r = stepUpdate({ ...v, seq: u.seq - 1 }, u);
        if (r.kind === 'applied' && r.view.seq < v.seq)
          r = { ...r, view: { ...r.view, seq: v.seq } };
      }
      switch (r.kind) {
        case 'applied':
          v = r.view;
          continue;
        case 'duplicate':
        case 'other_task':
          continue;
        case 'gap':
          // Missed updates: ask for them (or a resync snapshot) from the last applied seq.
          this.dropPending();
          if (this.state !== 'subscribing') this.client.sendSubscribe(this, before.seq);
          return;
        case 'unknown_session':
          // The view itself is wrong: start over from a snapshot.
          this.dropPending();
          this.needsSnapshot = true;
          if (this.state !== 'resyncing') this.client.sendSubscribe(this, undefined);
          return;
      }
    }
    if (this.confirmedSeq > v.seq && this.groups.pending.length === 0) {
      v = { ...v, seq: this.confirmedSeq };
      this.confirmedSeq = 0;
    }
    if (v === before) return;
    this.view = v;
    for (const u of group) this.options.onUpdate?.(u, v);
    this.options.onView?.(v, 'update');
  }

  confirmed(result: SubscribeResult): void {
    if (this.state === 'closed') return;
    this.retries = 0;
    const view = this.view;
    if (view && result.seq > this.received(view)) {
      if (this.sessionId !== undefined) {
        // The task moved on in other sessions only; this session's view is current (once the
        // group under way, if any, is applied: until then a resume must start before it).
        if (this.groups.pending.length > 0) this.confirmedSeq = result.seq;
        else this.view = { ...view, seq: result.seq };
      } else {
        this.client.sendSubscribe(this, view.seq);
        return;
      }
    }
    this.state = 'live';
    if (this.view) this.markReady(this.view);
  }

  fail(error: BatonError): void {
    this.state = 'closed';
    this.rejectReady(error);
    this.options.onError?.(error);
  }

  end(): void {
    this.state = 'closed';
    if (!this.isReady) this.rejectReady(new BatonError('closed', 'unsubscribed'));
  }

  private markReady(view: TaskView): void {
    if (this.isReady) return;
    this.isReady = true;
    this.resolveReady(view);
  }
}

function promptKey(p: { taskId: string; sessionId: string; idempotencyKey: string }): string {
  return `${p.taskId}\u0000${p.sessionId}\u0000${p.idempotencyKey}`;
}

function pendingOf(p: PromptEntry): PendingPrompt {
  const { taskId, sessionId, idempotencyKey } = p.request;
  return { taskId, sessionId, idempotencyKey, status: p.status };
}

/** `ws` reports a refused upgrade as "Unexpected server response: 401"; browsers see only a close. */
function authFailure(
  code: number,
  reason: string,
  error: string,
): 'unauthorized' | 'forbidden' | null {
  const fromCode = AUTH_CLOSE_CODES[code];
  if (fromCode) return fromCode;
  // Redialling with the same token would only be refused again.
  if (code === 1008 && /token expired|unauthorized/i.test(reason)) return 'unauthorized';
  const status = /Unexpected server response: (\d{3})/.exec(error)?.[1];
  if (status === '401') return 'unauthorized';
  if (status === '403') return 'forbidden';
  return null;
}

const KNOWN_UPDATE_TYPES: ReadonlySet<string> = new Set(
  UPDATE_SCHEMAS.map((s) => s.shape.type.value),
);

/**
 * An update of a type this client does not know (a newer server's): kept only for its seq, as
 * AHP clients ignore unknown actions. A known type that fails validation is not this: it is an
 * error, and the gap it leaves makes the subscription resync.
 */
function unknownUpdate(json: unknown): Update | null {
  const m = json as {
    type?: unknown;
    update?: { taskId?: unknown; seq?: unknown; type?: unknown };
  };
  const u = m?.update;
  if (m?.type !== 'update' || !u) return null;
  if (typeof u.taskId !== 'string' || typeof u.type !== 'string') return null;
  if (KNOWN_UPDATE_TYPES.has(u.type)) return null;
  if (typeof u.seq !== 'number' || !Number.isInteger(u.seq) || u.seq < 1) return null;
  return u as Update;
}

function randomKey(): string {
  const c = (
    globalThis as {
      crypto?: { randomUUID?: () => string; getRandomValues?: (b: Uint8Array) => Uint8Array };
    }
  ).crypto;
  if (c?.randomUUID) return c.randomUUID();
  // randomUUID needs a secure context in browsers; getRandomValues does not.
  const b = new Uint8Array(16);
  if (c?.getRandomValues) c.getRandomValues(b);
  else for (let i = 0; i < 16; i++) b[i] = Math.floor(Math.random() * 256);
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
}
