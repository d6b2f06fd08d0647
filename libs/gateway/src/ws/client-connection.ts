import {
  SCHEMA_VERSION,
  type ClientMessage,
  type SubscribeResult,
  type TaskView,
  type WireError,
} from '@baton/protocol';
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import type { Principal } from '../auth/auth';
import type { Commands } from '../commands/commands';
import { WireFailure } from '../errors';
import type { Logger } from '../logger';
import type { TranscriptTail } from '../ahp/transcript-tail';
import type { GatewayMetrics } from '../metrics/metrics';
import type { ResolvedOptions } from '../options';
import {
  BehindError,
  Subscription,
  type SubscriptionHooks,
  type SubscriptionSink,
} from '../subscriptions/subscription';
import type { UpdateFrame, UpdateHub } from '../updates/update-hub';
import type { Tenancy } from '../tenancy';
import type { TranscriptHub } from '../transcripts/transcript-hub';
import {
  TranscriptSubscription,
  type TranscriptHooks,
} from '../transcripts/transcript-subscription';
import type { EventStore } from '@baton/store';
import { Connection } from './connection';
import { TenantCountedMap } from './tenant-limits';
import { idOf, parseMessage, readJson } from './frames';
import type { TenantLimits } from './tenant-limits';
import type { HostLog } from '../ahp/host-log';
import type { Routes } from './ws-adapter';

/** What a connection handler needs from the process. */
export interface Services {
  opts: ResolvedOptions;
  hub: UpdateHub;
  store: EventStore;
  /** The tails of the transcripts /ws clients follow. */
  transcripts: TranscriptHub;
  tenancy: Tenancy;
  commands: Commands;
  /** Starts the execution that resumes a parked session when a prompt comes for it. */
  metrics: GatewayMetrics;
  log: Logger;
  limits: TenantLimits;
  /** The /ahp host's serverSeq and replay windows (libs/gateway/src/ahp). */
  ahpLog: HostLog;
  /** The /ahp host's shared per-task transcript tails (libs/gateway/src/ahp/transcript-tail.ts). */
  ahpTranscripts: TranscriptTail;
  /** The gateways' message handlers, as Nest built them (ws-adapter.ts). */
  routes: Routes;
}

/**
 * One /ws client: Baton's own protocol (libs/protocol wire.ts). It is its subscriptions' sink
 * itself (no object per connection for it).
 */
export class ClientConnection extends Connection implements SubscriptionSink {
  /** subscribe and unsubscribe run one at a time, in the order they came (none: all done). */
  private ops: Promise<void> | undefined;

  constructor(
    ws: WebSocket,
    socket: Socket,
    principal: Principal,
    readonly s: Services,
  ) {
    super(ws, socket, s.hub.writes, principal, 'ws', s.opts, s.metrics, s.log, s.limits);
  }

  handleFrame(data: string | Buffer): void {
    if (!this.admit()) {
      const j = readJson(data, this.opts.maxMessageBytes);
      // Through the gateway like any message, so that it is answered in the order it came.
      const route = this.s.routes.get('/ws', RATE_LIMITED);
      if (route) void route(new WsRequest(this, j.ok ? j.value : undefined, true));
      return;
    }
    const j = readJson(data, this.opts.maxMessageBytes);
    if (!j.ok) {
      this.s.metrics.messages.inc({ endpoint: 'ws', type: 'invalid' });
      this.fail(undefined, j.error);
      return;
    }
    // The handler of the message's op validates it (a pipe) and answers it; an op with no
    // handler is refused here, the way validation says why.
    const op = opOf(j.value);
    const route = op === undefined ? undefined : this.s.routes.get('/ws', op);
    if (!route) {
      this.s.metrics.messages.inc({ endpoint: 'ws', type: 'invalid' });
      const parsed = parseMessage(j.value);
      this.fail(
        parsed.ok ? parsed.message.id : parsed.id,
        parsed.ok ? { code: 'internal', message: 'internal error' } : parsed.error,
      );
      return;
    }
    void route(new WsRequest(this, j.value));
  }

  /** {@link SubscriptionSink}: the view as one Buffer per version, shared by its subscribers. */
  snapshot(view: TaskView, resync: boolean): boolean {
    // Every subscriber it goes to is of one tenant: it carries the client's task id, not the key.
    const frame = this.s.hub.snapshotFrame(view, resync);
    if (!this.writable(frame.length)) return false;
    this.sendFrame(frame, frame.length);
    return true;
  }

  /** {@link SubscriptionSink}: an update, as the hub encoded it once for every subscriber. */
  update(frame: UpdateFrame): void {
    this.sendFrame(frame.payload, frame.bytes);
  }

  internalError(): void {
    this.fail(undefined, { code: 'internal', message: 'internal error' });
  }

  reply(id: string, result: unknown): void {
    const text = JSON.stringify({ v: SCHEMA_VERSION, type: 'reply', id, ok: true, result });
    // A large reply (queue.list) that does not fit is refused rather than the connection closed.
    if (!this.roomForReply(Buffer.byteLength(text))) {
      this.fail(id, { code: 'unavailable', message: this.behindMessage() });
      return;
    }
    this.sendText(text);
  }

  fail(id: string | undefined, error: WireError): void {
    this.s.metrics.errors.inc({ code: error.code });
    this.send(
      id === undefined
        ? { v: SCHEMA_VERSION, type: 'error', error }
        : { v: SCHEMA_VERSION, type: 'reply', id, ok: false, error },
    );
  }

  serial(op: () => Promise<void>): Promise<void> {
    const next = (this.ops ?? Promise.resolve()).then(op);
    const done = next.then(settled, settled);
    // An idle connection keeps no settled chain.
    void done.then(() => {
      if (this.ops === done) this.ops = undefined;
    });
    this.ops = done;
    return next;
  }

  async subscribe(msg: Extract<ClientMessage, { op: 'subscribe' }>, key: string): Promise<void> {
    const old = this.subs.get(msg.taskId);
    if (old) this.unsubscribe(msg.taskId, old);
    const over = this.tenantLimitMessage(msg.taskId);
    if (over) throw new WireFailure('too_many_subscriptions', over);
    // The sink and the hooks are shared (per connection, per process): no closure here may
    // outlive the request, or it would keep this call's context (the message and all) per
    // subscription for as long as it lives.
    const sub = new Subscription(key, msg.sessionId, this.s.hub, this, hooksOf(this.s));
    this.subs.set(msg.taskId, sub);
    this.s.hub.follow(key, sub);
    try {
      await sub.start(msg.afterSeq, (r) => {
        const result: SubscribeResult = {
          taskId: msg.taskId,
          ...(msg.sessionId !== undefined ? { sessionId: msg.sessionId } : {}),
          ...r,
        };
        this.reply(msg.id, result);
      });
    } catch (err) {
      this.unsubscribe(msg.taskId, sub);
      if (err instanceof BehindError) throw new WireFailure('unavailable', this.behindMessage());
      throw err;
    }
  }

  /** `taskId` is the client's id: subscriptions of a connection are all of its tenant. */
  unsubscribe(taskId: string, sub: Subscription): void {
    this.releaseSubscription(sub);
    if (this.subs.get(taskId) === sub) this.subs.delete(taskId);
  }

  protected releaseSubscription(sub: Subscription): void {
    sub.close();
    this.s.hub.unfollow(sub.taskId, sub);
  }

  /** Subscriptions of both kinds, which the connection's limits count together. */
  get allSubscriptions(): number {
    return this.subs.size + (TRANSCRIPTS.get(this)?.size ?? 0);
  }

  protected override get subscriptionCount(): number {
    return this.allSubscriptions;
  }

  hasTranscript(taskId: string, sessionId: string): boolean {
    return TRANSCRIPTS.get(this)?.has(transcriptKey(taskId, sessionId)) ?? false;
  }

  /**
   * Subscribes to a session's transcript under the task `key` (the tenant's): the reply with the
   * cursor it starts after, then the events. Replaces a subscription to the same session.
   */
  async subscribeTranscript(
    msg: Extract<ClientMessage, { op: 'transcript.subscribe' }>,
    key: string,
  ): Promise<void> {
    const k = transcriptKey(msg.taskId, msg.sessionId);
    let subs = TRANSCRIPTS.get(this);
    if (!subs)
      TRANSCRIPTS.set(this, (subs = new TenantCountedMap(this.limits, this.principal.tenant)));
    const old = subs.get(k);
    if (old) {
      old.close();
      subs.delete(k);
    }
    // The old one is given back first: replacing is not one more.
    if (this.limits && !this.limits.maySubscribe(this.principal.tenant)) {
      if (subs.size === 0) TRANSCRIPTS.delete(this);
      throw new WireFailure(
        'too_many_subscriptions',
        `the tenant holds ${this.limits.maxSubscriptions} subscriptions on this gateway ` +
          '(GATEWAY_MAX_SUBSCRIPTIONS_PER_TENANT); unsubscribe first',
      );
    }
    const sub = new TranscriptSubscription(
      key,
      msg.taskId,
      msg.sessionId,
      msg.after,
      this.s.store,
      this.s.transcripts,
      this,
      transcriptHooksOf(this.s),
    );
    subs.set(k, sub);
    try {
      await sub.start((cursor) =>
        this.reply(msg.id, {
          taskId: msg.taskId,
          sessionId: msg.sessionId,
          subscribed: true,
          cursor,
        }),
      );
    } catch (err) {
      this.unsubscribeTranscript(msg.taskId, msg.sessionId);
      throw err;
    }
  }

  unsubscribeTranscript(taskId: string, sessionId: string): void {
    const k = transcriptKey(taskId, sessionId);
    const subs = TRANSCRIPTS.get(this);
    const sub = subs?.get(k);
    if (!subs || !sub) return;
    sub.close();
    subs.delete(k);
    if (subs.size === 0) TRANSCRIPTS.delete(this);
  }

  protected override onDrained(): void {
    const subs = TRANSCRIPTS.get(this);
    if (subs) for (const sub of subs.values()) sub.resyncAfterBehind();
  }

  protected override onDispose(): void {
    const subs = TRANSCRIPTS.get(this);
    if (!subs) return;
    for (const sub of subs.values()) sub.close();
    subs.clear();
    TRANSCRIPTS.delete(this);
  }
}

/** A transcript subscription's key: JSON keeps any two ids apart. */
function transcriptKey(taskId: string, sessionId: string): string {
  return JSON.stringify([taskId, sessionId]);
}

const transcriptHooksByProcess = new WeakMap<Services, TranscriptHooks>();

function transcriptHooksOf(s: Services): TranscriptHooks {
  let hooks = transcriptHooksByProcess.get(s);
  if (!hooks) {
    hooks = {
      onResync: () => s.metrics.resyncs.inc({ reason: 'slow_consumer' }),
      onError: (err, taskId) => s.log.warn({ err, taskId }, 'transcript catch-up failed'),
    };
    transcriptHooksByProcess.set(s, hooks);
  }
  return hooks;
}

function settled(): void {}

/**
 * Each connection's transcript subscriptions by session, made at its first: a connection that
 * holds none (most do) has no field, no map, nothing for them.
 */
const TRANSCRIPTS = new WeakMap<ClientConnection, TenantCountedMap<TranscriptSubscription>>();

const hooksByProcess = new WeakMap<Services, SubscriptionHooks>();

/** The /ws subscriptions' hooks: metrics and logs of the process, one object for all. */
function hooksOf(s: Services): SubscriptionHooks {
  let hooks = hooksByProcess.get(s);
  if (!hooks) {
    hooks = {
      onResync: (reason) => s.metrics.resyncs.inc({ reason }),
      onError: (err, taskId) => s.log.warn({ err, taskId }, 'subscription catch-up failed'),
      onDelivered: () => s.metrics.delivered++,
    };
    hooksByProcess.set(s, hooks);
  }
  return hooks;
}

/** The /ws gateway's handler of a message over the rate limit. */
export const RATE_LIMITED = '\u0000rate_limited';

/** A /ws message on its way through its handler: its connection, and the message once valid. */
export class WsRequest {
  /** The message, once its handler's pipe has validated it. */
  msg: ClientMessage | undefined;
  constructor(
    readonly conn: ClientConnection,
    readonly raw: unknown,
    /** Over the rate limit: answered so, not read. */
    readonly limited = false,
  ) {}

  /** The request's id: the valid message's, or what the raw one carries. */
  get id(): string | undefined {
    return this.msg?.id ?? idOf(this.raw);
  }
}

function opOf(v: unknown): string | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const op = (v as { op?: unknown }).op;
  return typeof op === 'string' ? op : undefined;
}
