import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import { FLUSH_AT, type WriteBatch } from '../updates/write-batch';
import type { Principal } from '../auth/auth';
import type { Logger } from '../logger';
import type { Endpoint, GatewayMetrics } from '../metrics/metrics';
import type { ResolvedOptions } from '../options';
import type { Subscription } from '../subscriptions/subscription';
import { RateLimiter } from './frames';

const OPEN = 1;
const DRAIN_CHECK_MS = 25;

/**
 * What every client connection (/ws and /ahp) shares: bounded sending with a slow-consumer
 * protocol, rate limiting, heartbeats, idle timeout, token expiry and its subscriptions.
 */
export abstract class Connection {
  readonly subs = new Map<string, Subscription>();
  /** Last sign of life (any frame, a pong). */
  lastSeen = Date.now();
  /** Last client message. */
  lastActivity = Date.now();
  lastPing = Date.now();
  private readonly limiter: RateLimiter;
  private behindSince: number | undefined;
  private drainTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** The write batch the socket is corked in, what it was given in it, and when writable() looked. */
  private corkEpoch = -1;
  private checkedEpoch = -1;
  private batchBytes = 0;

  constructor(
    readonly ws: WebSocket,
    /** The TCP socket under `ws` (the upgrade request's), corked while a batch is fanned out. */
    private readonly socket: Socket,
    private readonly writes: WriteBatch,
    readonly principal: Principal,
    readonly endpoint: Endpoint,
    protected readonly opts: ResolvedOptions,
    protected readonly metrics: GatewayMetrics,
    protected readonly log: Logger,
  ) {
    this.limiter = new RateLimiter(opts.maxMessagesPerSecond);
    ws.on('pong', () => (this.lastSeen = Date.now()));
    if (principal.expiresAt !== undefined) {
      const ms = principal.expiresAt * 1000 - Date.now();
      // setTimeout holds 2^31-1 ms at most; a token valid for longer is re-checked at the heartbeat.
      if (ms < 2 ** 31 - 1) {
        this.expiryTimer = setTimeout(() => this.close(1008, 'token expired'), Math.max(0, ms));
        this.expiryTimer.unref();
      }
    }
    metrics.connections.inc({ endpoint });
  }

  /** A frame arrived: counts it against the rate limit; false when over. */
  admit(): boolean {
    const now = Date.now();
    this.lastSeen = now;
    this.lastActivity = now;
    return this.limiter.take(now);
  }

  sendText(text: string): void {
    if (this.closed || this.ws.readyState !== OPEN) return;
    // Replies still go out while updates are held back; a client that reads nothing at all while
    // it keeps sending is cut off rather than allowed to grow the buffer without bound.
    if (this.ws.bufferedAmount > this.opts.maxBufferedBytes * 4) {
      this.close(1008, 'too slow: not reading what it is sent');
      return;
    }
    this.ws.send(text);
  }

  send(message: object): void {
    this.sendText(JSON.stringify(message));
  }

  /** An update's frame, after {@link writable} said yes (so no second look at the buffer). */
  sendFrame(text: string): void {
    if (this.closed || this.ws.readyState !== OPEN) return;
    const w = this.writes;
    if (!w.active) {
      this.ws.send(text);
      return;
    }
    if (this.corkEpoch !== w.epoch) {
      this.corkEpoch = w.epoch;
      this.batchBytes = 0;
      w.cork(this.socket);
    }
    this.ws.send(text);
    this.batchBytes += text.length;
    if (this.batchBytes > FLUSH_AT) {
      // Corking must never hide a backlog: flush now, and let writable() look again.
      this.socket.uncork();
      this.socket.cork();
      this.batchBytes = 0;
      this.checkedEpoch = -1;
    }
  }

  /** Room for updates? Past the bound the connection falls behind and its subscriptions wait. */
  writable(): boolean {
    if (this.behindSince !== undefined) return false;
    // Within a batch the buffer grows only by what the batch gives it, and past FLUSH_AT it is
    // looked at again: once per batch is enough.
    const w = this.writes;
    if (w.active && this.checkedEpoch === w.epoch) return true;
    if (this.ws.bufferedAmount <= this.opts.maxBufferedBytes) {
      if (w.active) this.checkedEpoch = w.epoch;
      return true;
    }
    this.fallBehind();
    return false;
  }

  private fallBehind() {
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
      return;
    }
    if (Date.now() - this.behindSince! > this.opts.heartbeatMs * 2) {
      this.close(1008, 'too slow: fell behind and did not catch up');
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
      this.subs.size === 0 &&
      now - this.lastActivity > this.opts.idleTimeoutMs
    ) {
      this.close(1000, 'idle timeout');
      return;
    }
    if (this.principal.expiresAt !== undefined && now >= this.principal.expiresAt * 1000) {
      this.close(1008, 'token expired');
      return;
    }
    if (now - this.lastPing >= this.opts.heartbeatMs) {
      this.lastPing = now;
      if (this.ws.readyState === OPEN) this.ws.ping();
    }
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.ws.close(code, reason);
    this.dispose();
  }

  /** The socket is gone (or going): stop everything that would still send to it. */
  dispose(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.drainTimer);
    clearTimeout(this.expiryTimer);
    for (const sub of this.subs.values()) this.releaseSubscription(sub);
    this.subs.clear();
    this.metrics.connections.dec({ endpoint: this.endpoint });
    this.onDispose();
  }

  get isClosed(): boolean {
    return this.closed;
  }

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
