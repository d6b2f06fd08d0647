import type { Socket } from 'node:net';
import { WebSocket, type RawData } from 'ws';
import { FLUSH_AT, type WriteBatch } from '../updates/write-batch';
import type { Principal } from '../auth/auth';
import type { Logger } from '../logger';
import type { Endpoint, GatewayMetrics } from '../metrics/metrics';
import type { ResolvedOptions } from '../options';
import type { Subscription } from '../subscriptions/subscription';
import { takeToken, type TokenBucket } from './frames';
import { TenantCountedMap, type TenantLimits } from './tenant-limits';

const OPEN = 1;
const TEXT = { binary: false } as const;
const DRAIN_CHECK_MS = 25;
/** Close code of a connection that does not read what it is sent (4000-4999: the application's). */
export const SLOW_CONSUMER_CLOSE = 4008;
/**
 * Room past GATEWAY_MAX_BUFFERED_BYTES for small replies (errors, pongs, command results) of a
 * connection that has fallen behind, so that it is answered while it drains; when even this is
 * full the connection is closed.
 */
export const REPLY_HEADROOM = 64 * 1024;
/**
 * The peer's close handshake is not waited for longer than this: the socket is destroyed. A slow
 * consumer is not reading anyway, and what it still buffers is the memory to free; any other
 * peer gets time to read its close code (idle timeout, token expired) on a loaded machine.
 */
export const CLOSE_GRACE_MS = { slowConsumer: 1_000, other: 10_000 } as const;

/** What an adapter does on its sockets' events: one object per adapter, shared by its sockets. */
export interface SocketEvents {
  message(c: Connection, data: RawData, isBinary: boolean): void;
  /** ws emits it once, when the socket has closed. */
  close(c: Connection, ws: GatewaySocket): void;
  error(c: Connection, err: Error): void;
}

/**
 * The gateway's WebSocket, which ws makes for each upgrade (its `WebSocket` option). It holds its
 * connection and its tenant place, and hands ws's events to its adapter's functions, shared by
 * every socket, instead of listeners: an emitter's listeners live in a dictionary of each socket
 * (~100 bytes for four), and a WeakMap from socket to connection would cost an entry more: both
 * on an idle connection's heap. Events of a socket with no connection yet go to listeners as usual.
 */
export class GatewaySocket extends WebSocket {
  connection: Connection | undefined;
  events: SocketEvents | undefined;
  /** The tenant whose connection place the socket holds (given back at its close). */
  place: string | undefined;

  override emit(event: string | symbol, ...args: unknown[]): boolean {
    const c = this.connection;
    const on = this.events;
    if (c === undefined || on === undefined) return super.emit(event, ...args);
    switch (event) {
      case 'message':
        on.message(c, args[0] as RawData, args[1] as boolean);
        return true;
      case 'pong':
        c.lastSeen = Date.now();
        return true;
      case 'close':
        on.close(c, this);
        return true;
      case 'error':
        on.error(c, args[0] as Error);
        return true;
      default:
        return super.emit(event, ...args);
    }
  }
}

/**
 * What every client connection (/ws and /ahp) shares: bounded sending with a slow-consumer
 * protocol, rate limiting, heartbeats, idle timeout, token expiry and its subscriptions.
 */
export abstract class Connection implements TokenBucket {
  /** Subscriptions by key (task id on /ws, channel on /ahp), counted against the tenant. */
  readonly subs: Map<string, Subscription>;
  /** Last sign of life (any frame, a pong). */
  lastSeen = Date.now();
  /** Last client message. */
  lastActivity = Date.now();
  lastPing = Date.now();
  /** The rate limit's token bucket (GATEWAY_MAX_MESSAGES_PER_SECOND), held in place. */
  tokens: number;
  tokensAt = Date.now();
  private behindSince: number | undefined;
  private drainTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** The write batch the socket is corked in, what it was given in it, and when writable() looked. */
  private corkEpoch = -1;
  private checkedEpoch = -1;
  private batchBytes = 0;
  /** Unsent bytes at the batch's look at the buffer, plus what the batch has sent since. */
  private knownBuffered = 0;

  constructor(
    readonly ws: WebSocket,
    /** The TCP socket under `ws` (the upgrade request's), corked while a batch is fanned out. */
    private readonly socket: Socket,
    private readonly writes: WriteBatch,
    private principal_: Principal,
    readonly endpoint: Endpoint,
    protected readonly opts: ResolvedOptions,
    protected readonly metrics: GatewayMetrics,
    protected readonly log: Logger,
    protected readonly limits?: TenantLimits,
  ) {
    this.subs = new TenantCountedMap<Subscription>(limits, principal_.tenant);
    this.tokens = opts.maxMessagesPerSecond;
    metrics.connections.inc({ endpoint });
  }

  get principal(): Principal {
    return this.principal_;
  }

  /**
   * The connection now acts for `p` (AHP's in-protocol `authenticate`): its tenant may change
   * only while it holds no subscription; the token's expiry closes it from now on.
   */
  reauthenticate(p: Principal): void {
    if (p.tenant !== this.principal_.tenant)
      (this.subs as TenantCountedMap<Subscription>).retenant(p.tenant);
    this.principal_ = p;
  }

  /** A frame arrived: counts it against the rate limit; false when over. */
  admit(): boolean {
    const now = Date.now();
    this.lastSeen = now;
    this.lastActivity = now;
    return takeToken(this, this.opts.maxMessagesPerSecond, now);
  }

  /**
   * A reply or an error: it goes out within GATEWAY_MAX_BUFFERED_BYTES, or, when small, within
   * REPLY_HEADROOM past it (the connection then falls behind). A client that reads nothing at all
   * while it keeps sending is closed (4008) rather than allowed to grow the buffer.
   */
  sendText(text: string): void {
    this.sendParts([text]);
  }

  /**
   * {@link sendText} for a message in parts (see jsonParts): sent as fragments of one message,
   * so that a shared Buffer among them is neither copied nor re-serialized per socket.
   */
  sendParts(parts: (string | Buffer)[]): void {
    if (this.closed || this.ws.readyState !== OPEN) return;
    let bytes = 0;
    for (const p of parts) bytes += typeof p === 'string' ? Buffer.byteLength(p) : p.length;
    const buffered = this.ws.bufferedAmount;
    const max = this.opts.maxBufferedBytes;
    if (buffered === 0 || buffered + bytes <= max) {
      this.write(parts);
      return;
    }
    if (bytes <= REPLY_HEADROOM && buffered + bytes <= max + REPLY_HEADROOM) {
      this.write(parts);
      this.fallBehind();
      return;
    }
    this.close(
      SLOW_CONSUMER_CLOSE,
      `slow consumer: ${buffered} bytes unsent, more than GATEWAY_MAX_BUFFERED_BYTES (${max})`,
    );
  }

  send(message: object): void {
    this.sendText(JSON.stringify(message));
  }

  /** Whether a reply of `bytes` would go out now ({@link sendParts} closes the connection if not). */
  protected roomForReply(bytes: number): boolean {
    const buffered = this.ws.bufferedAmount;
    const max = this.opts.maxBufferedBytes;
    return (
      buffered === 0 ||
      buffered + bytes <= max ||
      (bytes <= REPLY_HEADROOM && buffered + bytes <= max + REPLY_HEADROOM)
    );
  }

  private write(parts: (string | Buffer)[]): void {
    if (parts.length === 1) {
      this.ws.send(parts[0]!, TEXT);
      return;
    }
    const last = parts.length - 1;
    parts.forEach((p, i) => this.ws.send(p, { binary: false, fin: i === last }));
  }

  /**
   * An update's (or a snapshot's) frame of `bytes` bytes, after {@link writable} said yes for it
   * (so no second look at the buffer). A shared Buffer is sent as it is, not copied per socket.
   */
  sendFrame(data: string | Buffer, bytes: number): void {
    if (this.closed || this.ws.readyState !== OPEN) return;
    const w = this.writes;
    // A text message, also when it is a (shared) Buffer: ws would make a Buffer a binary one.
    if (!w.active) {
      this.ws.send(data, TEXT);
      return;
    }
    if (this.corkEpoch !== w.epoch) {
      this.corkEpoch = w.epoch;
      this.batchBytes = 0;
      w.cork(this.socket);
    }
    this.ws.send(data, TEXT);
    this.batchBytes += bytes;
    if (this.checkedEpoch === w.epoch) this.knownBuffered += bytes;
    if (this.batchBytes > FLUSH_AT) {
      // Corking must never hide a backlog: flush now, and let writable() look again.
      this.socket.uncork();
      this.socket.cork();
      this.batchBytes = 0;
      this.checkedEpoch = -1;
    }
  }

  /**
   * Room for a frame of `bytes`? Unsent bytes never pass GATEWAY_MAX_BUFFERED_BYTES (but a frame
   * larger than the bound alone goes out when nothing is unsent). Without room the connection
   * falls behind: its subscriptions wait, and resync once it has drained.
   */
  writable(bytes: number): boolean {
    if (this.behindSince !== undefined || this.closed) return false;
    // Within a batch the buffer grows only by what the batch gives it, and past FLUSH_AT it is
    // looked at again: once per batch is enough.
    const w = this.writes;
    let buffered: number;
    if (w.active && this.checkedEpoch === w.epoch) buffered = this.knownBuffered;
    else {
      buffered = this.ws.bufferedAmount;
      if (w.active) {
        this.checkedEpoch = w.epoch;
        this.knownBuffered = buffered;
      }
    }
    if (buffered === 0 || buffered + bytes <= this.opts.maxBufferedBytes) return true;
    this.fallBehind();
    return false;
  }

  /** Whether the connection has fallen behind (its updates held back until it drains). */
  get behind(): boolean {
    return this.behindSince !== undefined;
  }

  /**
   * Null when a subscription under the new `key` fits the tenant's limit on this gateway (check
   * it with no await before adding it); otherwise why not.
   */
  tenantLimitMessage(key: string): string | null {
    if (!this.limits || this.subs.has(key) || this.limits.maySubscribe(this.principal.tenant)) {
      return null;
    }
    return (
      `the tenant holds ${this.limits.maxSubscriptions} subscriptions on this gateway ` +
      '(GATEWAY_MAX_SUBSCRIPTIONS_PER_TENANT); unsubscribe first'
    );
  }

  /** Why a request that would send much is refused while the connection is behind. */
  behindMessage(): string {
    return (
      `slow consumer: ${this.ws.bufferedAmount} bytes unsent, more than ` +
      `GATEWAY_MAX_BUFFERED_BYTES (${this.opts.maxBufferedBytes}); read them, then try again`
    );
  }

  private fallBehind() {
    if (this.behindSince !== undefined || this.closed) return;
    this.behindSince = Date.now();
    this.log.debug(
      { endpoint: this.endpoint, tenant: this.principal.tenant },
      'client fell behind',
    );
    this.drainTimer = setInterval(() => this.checkDrained(), DRAIN_CHECK_MS);
  }

  private checkDrained() {
    if (this.closed) return;
    if (this.ws.bufferedAmount <= this.opts.maxBufferedBytes / 2) {
      clearInterval(this.drainTimer);
      this.drainTimer = undefined;
      this.behindSince = undefined;
      for (const sub of this.subs.values()) sub.resyncAfterBehind();
      this.onDrained();
      return;
    }
    if (Date.now() - this.behindSince! > this.opts.heartbeatMs * 2) {
      this.close(
        SLOW_CONSUMER_CLOSE,
        `slow consumer: did not read what it was sent within ${this.opts.heartbeatMs * 2} ms`,
      );
    }
  }

  /** Heartbeat tick: ping, and close what is silent, idle or expired. */
  tick(now: number): void {
    if (this.closed) return;
    if (now - this.lastSeen > this.opts.heartbeatMs * 2) {
      this.log.debug({ endpoint: this.endpoint }, 'closing a silent connection');
      this.ws.terminate();
      return;
    }
    if (
      this.opts.idleTimeoutMs > 0 &&
      this.subscriptionCount === 0 &&
      now - this.lastActivity > this.opts.idleTimeoutMs
    ) {
      this.close(1000, 'idle timeout');
      return;
    }
    // Expiry is checked here (at most a second late: the registry ticks at least every second),
    // not by a timer per connection, which cost each idle connection ~250 bytes.
    if (this.principal.expiresAt !== undefined && now >= this.principal.expiresAt * 1000) {
      this.close(1008, 'token expired');
      return;
    }
    if (now - this.lastPing >= this.opts.heartbeatMs) {
      this.lastPing = now;
      if (this.ws.readyState === OPEN) this.ws.ping();
    }
  }

  /**
   * Sends the close frame and frees everything at once; the socket (and what it still buffers)
   * is destroyed after CLOSE_GRACE_MS at the latest, whether or not the peer answers the close.
   */
  close(code: number, reason: string): void {
    if (this.closed) return;
    if (code === SLOW_CONSUMER_CLOSE) {
      this.metrics.errors.inc({ code: 'slow_consumer' });
      this.log.info({ endpoint: this.endpoint, tenant: this.principal.tenant }, reason);
    }
    this.ws.close(code, reason);
    const ws = this.ws;
    const grace = code === SLOW_CONSUMER_CLOSE ? CLOSE_GRACE_MS.slowConsumer : CLOSE_GRACE_MS.other;
    setTimeout(() => ws.terminate(), grace).unref();
    this.dispose();
  }

  /** The socket is gone (or going): stop everything that would still send to it. */
  dispose(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.drainTimer);
    for (const sub of this.subs.values()) this.releaseSubscription(sub);
    this.subs.clear();
    this.metrics.connections.dec({ endpoint: this.endpoint });
    this.onDispose();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Every subscription the connection holds (an idle one holds none). */
  protected get subscriptionCount(): number {
    return this.subs.size;
  }

  /** The connection drained after falling behind (its subscriptions resync). */
  protected onDrained(): void {}

  /** A frame of the client's, as it came (text as a string, binary as a Buffer). */
  abstract handleFrame(data: string | Buffer): void;
  /** Handling a frame failed on our side: the client is told, without details. */
  abstract internalError(): void;
  /** Stops a subscription and whatever fed it. */
  protected abstract releaseSubscription(sub: Subscription): void;
  protected onDispose(): void {}
}

/** Every open connection of the process, and the one timer that keeps them honest. */
export class ConnectionRegistry {
  private readonly all = new Set<Connection>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly heartbeatMs: number) {}

  add(c: Connection): void {
    this.all.add(c);
    if (!this.timer) {
      const every = Math.max(50, Math.min(this.heartbeatMs, 1_000));
      this.timer = setInterval(() => {
        const now = Date.now();
        for (const conn of this.all) conn.tick(now);
      }, every);
      this.timer.unref();
    }
  }

  remove(c: Connection): void {
    this.all.delete(c);
  }

  get size(): number {
    return this.all.size;
  }

  closeAll(code: number, reason: string): void {
    clearInterval(this.timer);
    this.timer = undefined;
    for (const c of this.all) c.close(code, reason);
    this.all.clear();
  }
}
