import { backoffDelay, type BackoffOptions } from '@baton/backoff';
import type { Emit } from './emitter';
import { BatonError } from './errors';
import { defaultWebSocket, OPEN, type WebSocketConstructor, type WebSocketLike } from './socket';

export interface ConnectionOptions {
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
  /** Retry when the very first connection fails (default false: `connect` rejects). */
  readonly retryInitialConnect?: boolean;
}

export interface ConnectionEvents extends Record<string, unknown> {
  open: { reconnected: boolean };
  close: { code: number; reason: string; willReconnect: boolean };
  reconnecting: { attempt: number; delayMs: number };
  /** Errors not tied to one request: unsolicited server errors, protocol violations, auth. */
  error: BatonError;
}

/** What the connection asks of the client around it. */
export interface ConnectionHooks {
  /** Open again (or for the first time), once `open` is told: renew what was under way. */
  resume(): void;
  /** A text frame from the server. */
  message(text: string): void;
  /** The socket is gone: what was sent on it learns so before anything else happens. */
  lost(): void;
  /** Nothing was heard or sent for a heartbeat period: send a ping. */
  heartbeat(): void;
  /** The connection cannot go on (a refused token, a failed first attempt): close the client. */
  end(): void;
}

const AUTH_CLOSE_CODES: Record<number, 'unauthorized' | 'forbidden'> = {
  4401: 'unauthorized',
  4403: 'forbidden',
};

/**
 * The socket under a client: dials with the token, redials with backoff when the connection drops
 * (never after a refused token), and keeps a heartbeat so that a dead path is noticed.
 */
export class Connection {
  private ctor: WebSocketConstructor | null = null;
  private ctorIsWs = false;
  private url = '';
  private token = '';
  private socket: WebSocketLike | null = null;
  private dialing: WebSocketLike | null = null;
  private everOpened = false;
  private shut = true;
  private attempt = 0;
  private lastError = '';
  private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  private heartbeat: ReturnType<typeof setInterval> | null = null;
  private lastReceived = 0;
  private lastSent = 0;
  private firstOpen: { resolve(): void; reject(e: BatonError): void } | null = null;

  constructor(
    private readonly options: ConnectionOptions,
    private readonly emit: Emit<ConnectionEvents>,
    private readonly hooks: ConnectionHooks,
  ) {}

  /** True while a connection is open. */
  get open(): boolean {
    return this.socket !== null;
  }

  /** True once closed for good (and before the first `connect`). */
  get closed(): boolean {
    return this.shut;
  }

  /** Closed, with no socket left open or dialing. */
  get idle(): boolean {
    return this.shut && !this.socket && !this.dialing;
  }

  /** An open socket can take a message now. */
  get writable(): boolean {
    return this.socket !== null && this.socket.readyState === OPEN;
  }

  send(text: string): void {
    this.socket!.send(text);
    this.lastSent = Date.now();
  }

  async connect(url: string, token: string): Promise<void> {
    if (!this.shut) throw new Error('BatonClient: already connected or connecting');
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
    this.shut = false;
    this.everOpened = false;
    this.attempt = 0;
    return new Promise<void>((resolve, reject) => {
      this.firstOpen = { resolve, reject };
      this.dial();
    });
  }

  /** The first half of closing: closed from now on, no redial and no heartbeat. */
  halt(): void {
    this.shut = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    this.stopHeartbeat();
  }

  /** The second half: a `connect` under way rejects with `error`; the sockets are closed. */
  async hangUp(error: BatonError): Promise<void> {
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
  }

  /** Runs `fn` after a jittered backoff delay, unless the client is closed by then. */
  later(attempt: number, fn: () => void): void {
    const t = setTimeout(
      () => {
        if (!this.shut) fn();
      },
      backoffDelay(attempt, this.options.backoff),
    );
    (t as { unref?: () => void }).unref?.();
  }

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
      this.hooks.resume();
    };
    ws.onmessage = (ev) => {
      if (this.socket !== ws) return;
      this.lastReceived = Date.now();
      this.hooks.message(typeof ev.data === 'string' ? ev.data : String(ev.data));
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
    this.hooks.lost();
    if (this.shut) return;

    const auth = authFailure(code, reason, this.lastError);
    if (auth) {
      const error = new BatonError(
        auth,
        `the server refused the token: ${reason || this.lastError || code}`,
      );
      this.firstOpen?.reject(error);
      this.firstOpen = null;
      this.emit('error', error);
      this.hooks.end();
      return;
    }
    if (!this.everOpened && !this.options.retryInitialConnect) {
      const error = new BatonError(
        'unavailable',
        `cannot connect to ${this.url}: ${this.lastError || reason || `close code ${code}`}`,
      );
      this.firstOpen?.reject(error);
      this.firstOpen = null;
      this.hooks.end();
      return;
    }
    const delayMs = backoffDelay(this.attempt++, this.options.backoff);
    this.emit('close', { code, reason, willReconnect: true });
    this.emit('reconnecting', { attempt: this.attempt, delayMs });
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (!this.shut) this.dial();
    }, delayMs);
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
          this.hooks.heartbeat();
      },
      Math.max(10, Math.floor(period / 2)),
    );
    (this.heartbeat as { unref?: () => void }).unref?.();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }
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
