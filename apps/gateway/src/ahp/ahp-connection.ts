import { ChatMirror } from '@baton/activity';
import {
  AHP_ERRORS,
  AhpInitializeParams,
  AhpPingParams,
  AhpReconnectParams,
  AhpSubscribeParams,
  AhpUnsubscribeParams,
  JsonRpcId,
  endsGroup,
  negotiateAhpVersion,
  parseChatUri,
  type AhpAction,
  type AhpSnapshot,
  type ErrorCode,
  type Update,
} from '@baton/protocol';
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import type { z } from 'zod';
import { allows, type Principal } from '../auth/auth';
import { toWireError } from '../errors';
import { Subscription } from '../subscriptions/subscription';
import { NotFoundError } from '../tenancy';
import { Connection, SLOW_CONSUMER_CLOSE } from '../ws/connection';
import { readJson } from '../ws/frames';
import { jsonParts } from '../ws/shared-json';
import type { Services } from '../ws/client-connection';

/** A JSON-RPC error, with Baton's wire error code in `data.code`. */
class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}

const CODE_OF: Partial<Record<ErrorCode, number>> = {
  invalid_message: AHP_ERRORS.InvalidParams,
  message_too_large: AHP_ERRORS.MessageTooLarge,
  rate_limited: AHP_ERRORS.RateLimited,
  too_many_subscriptions: AHP_ERRORS.TooManySubscriptions,
  unauthorized: AHP_ERRORS.AuthRequired,
  forbidden: AHP_ERRORS.PermissionDenied,
  not_found: AHP_ERRORS.NotFound,
  unavailable: AHP_ERRORS.Unavailable,
  internal: AHP_ERRORS.InternalError,
};

const SERVER_INFO = { name: 'baton', version: '0.1.0' };

interface ChatSubscription {
  sub: Subscription;
  mirror: ChatMirror;
  stop: () => void;
}

function params<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const i = r.error.issues[0]!;
  const path = ['params', ...i.path.map(String)].join('.');
  throw new RpcError(AHP_ERRORS.InvalidParams, `${path}: ${i.message}`, {
    code: 'invalid_message',
    path,
  });
}

/**
 * One /ahp client: the AHP chat channel over JSON-RPC 2.0. A chat is a Baton session,
 * `ahp-chat:/<taskId>/<sessionId>`; its state carries `backgroundWork`, and `action`
 * notifications follow with a `serverSeq` that grows by one per action on this connection.
 */
export class AhpConnection extends Connection {
  private version: string | undefined;
  private serverSeq = 0;
  private readonly chats = new Map<string, ChatSubscription>();
  private ops: Promise<unknown> = Promise.resolve();

  constructor(
    ws: WebSocket,
    socket: Socket,
    principal: Principal,
    private readonly s: Services,
  ) {
    super(ws, socket, s.hub.writes, principal, 'ahp', s.opts, s.metrics, s.log, s.limits);
  }

  handleFrame(data: string | Buffer): void {
    if (!this.admit()) {
      const j = readJson(data, this.opts.maxMessageBytes);
      this.error(j.ok ? rpcIdOf(j.value) : null, AHP_ERRORS.RateLimited, {
        message: `more than ${this.opts.maxMessagesPerSecond} messages per second; slow down`,
        code: 'rate_limited',
      });
      return;
    }
    const j = readJson(data, this.opts.maxMessageBytes);
    if (!j.ok) {
      this.s.metrics.messages.inc({ endpoint: 'ahp', type: 'invalid' });
      const code =
        j.error.code === 'message_too_large'
          ? AHP_ERRORS.MessageTooLarge
          : j.error.message.startsWith('not JSON')
            ? AHP_ERRORS.ParseError
            : AHP_ERRORS.InvalidRequest;
      this.error(null, code, { message: j.error.message, code: j.error.code });
      return;
    }
    const m = j.value;
    if (Array.isArray(m)) {
      this.invalid(null, 'batch requests are not supported: one message per frame');
      return;
    }
    if (typeof m !== 'object' || m === null) {
      this.invalid(null, 'expected a JSON-RPC 2.0 request object');
      return;
    }
    const msg = m as Record<string, unknown>;
    const hasId = 'id' in msg;
    const idOk = msg.id === null || JsonRpcId.safeParse(msg.id).success;
    const id = hasId && idOk ? (msg.id as JsonRpcId | null) : null;
    if (msg.jsonrpc !== '2.0') return this.invalid(id, 'jsonrpc: must be "2.0"');
    if (hasId && !idOk) return this.invalid(null, 'id: must be a string, an integer or null');
    if (typeof msg.method !== 'string' || msg.method.length === 0 || msg.method.length > 200) {
      return this.invalid(id, 'method: must be a non-empty string');
    }
    const method = msg.method;
    this.s.metrics.messages.inc({ endpoint: 'ahp', type: method.slice(0, 40) });
    if (!hasId) {
      // A notification is never answered (JSON-RPC 2.0), not even with an error.
      if (method === 'unsubscribe') {
        const p = AhpUnsubscribeParams.safeParse(msg.params);
        if (p.success) void this.serial(async () => this.unsubscribe(p.data.channel));
      }
      return;
    }
    this.request(method, msg.params).then(
      // The result is built at the moment it is sent: snapshots in it take what arrived until
      // then, and the actions of their chats start flowing only after it.
      // A chat's queue (the bulk of a snapshot) is serialized once per version, not per reply.
      (result) =>
        this.sendParts(jsonParts({ jsonrpc: '2.0', id, result: result() }, (k) => k === 'queue')),
      (err: unknown) => {
        if (err instanceof RpcError) {
          this.error(id, err.code, { message: err.message, ...err.data });
        } else if (err instanceof NotFoundError) {
          this.error(id, AHP_ERRORS.NotFound, { message: err.message, code: 'not_found' });
        } else {
          const { error, internal } = toWireError(err);
          if (internal) this.s.log.error({ err, method }, 'AHP request failed');
          this.error(id, CODE_OF[error.code] ?? AHP_ERRORS.InternalError, {
            ...error,
          });
        }
      },
    );
  }

  internalError(): void {
    this.error(null, AHP_ERRORS.InternalError, { message: 'internal error', code: 'internal' });
  }

  private invalid(id: JsonRpcId | null, message: string): void {
    this.s.metrics.messages.inc({ endpoint: 'ahp', type: 'invalid' });
    this.error(id, AHP_ERRORS.InvalidRequest, { message, code: 'invalid_message' });
  }

  private error(
    id: JsonRpcId | null,
    code: number,
    detail: { message: string; code?: string; [k: string]: unknown },
  ): void {
    const { message, ...data } = detail;
    this.s.metrics.errors.inc({ code: String(data.code ?? code) });
    this.send({
      jsonrpc: '2.0',
      id,
      error: { code, message, ...(Object.keys(data).length > 0 ? { data } : {}) },
    });
  }

  private serial<T>(op: () => Promise<T>): Promise<T> {
    const next = this.ops.then(op);
    this.ops = next.catch(() => undefined);
    return next;
  }

  private async request(method: string, raw: unknown): Promise<() => unknown> {
    if (method === 'ping') {
      params(AhpPingParams, raw);
      return () => ({});
    }
    if (method === 'initialize') {
      if (this.version) throw new RpcError(AHP_ERRORS.InvalidRequest, 'already initialized');
      const p = params(AhpInitializeParams, raw);
      const n = negotiateAhpVersion(p.protocolVersions);
      if (!n.ok) {
        if (n.code === AHP_ERRORS.UnsupportedProtocolVersion) {
          // The spec closes the connection after this error; let the reply go out first.
          setImmediate(() => this.close(1008, 'unsupported protocol version'));
        }
        throw new RpcError(n.code, n.message, {
          code: 'invalid_message',
          ...(n.data as Record<string, unknown> | undefined),
        });
      }
      this.version = n.version;
      const snapshots: (() => AhpSnapshot)[] = [];
      for (const channel of p.initialSubscriptions ?? []) {
        try {
          snapshots.push(await this.serial(() => this.subscribe(channel)));
        } catch (err) {
          // A chat of a task the tenant does not have is left out, as on reconnect.
          if (!(err instanceof NotFoundError)) throw err;
        }
      }
      return () => ({
        protocolVersion: n.version,
        serverSeq: this.serverSeq,
        serverInfo: SERVER_INFO,
        snapshots: snapshots.map((f) => f()),
        _meta: {
          'x-baton': {
            chatChannel: 'ahp-chat:/<taskId>/<sessionId> (each id percent-encoded)',
            tenant: this.principal.tenant,
          },
        },
      });
    }
    if (!this.version) {
      throw new RpcError(
        AHP_ERRORS.InvalidRequest,
        `call initialize before ${method.slice(0, 100)}`,
        {
          code: 'invalid_message',
        },
      );
    }
    switch (method) {
      case 'subscribe': {
        const p = params(AhpSubscribeParams, raw);
        const snapshot = await this.serial(() => this.subscribe(p.channel));
        return () => ({ snapshot: snapshot() });
      }
      case 'unsubscribe': {
        const p = params(AhpUnsubscribeParams, raw);
        await this.serial(async () => this.unsubscribe(p.channel));
        return () => ({});
      }
      case 'reconnect': {
        // No replay buffer is kept (any gateway may take the reconnect): always fresh snapshots.
        const p = params(AhpReconnectParams, raw);
        const snapshots: (() => AhpSnapshot)[] = [];
        for (const channel of p.subscriptions) {
          try {
            snapshots.push(await this.serial(() => this.subscribe(channel)));
          } catch (err) {
            if (!(err instanceof RpcError || err instanceof NotFoundError)) throw err;
          }
        }
        return () => ({ type: 'snapshot', snapshots: snapshots.map((f) => f()) });
      }
      default:
        throw new RpcError(AHP_ERRORS.MethodNotFound, `method not found: ${method.slice(0, 100)}`, {
          code: 'invalid_message',
        });
    }
  }

  /**
   * Subscribes to a chat and returns the builder of its snapshot, to be called synchronously as
   * the reply carrying it is sent: until then updates only move the mirror, after it every update
   * is an action with a serverSeq above the snapshot's fromSeq.
   */
  private async subscribe(channel: string): Promise<() => AhpSnapshot> {
    const ref = parseChatUri(channel);
    if (!ref) {
      if (channel.startsWith('ahp-chat:')) {
        throw new RpcError(
          AHP_ERRORS.InvalidParams,
          'params.channel: a Baton chat is ahp-chat:/<taskId>/<sessionId>, each id percent-encoded',
          { code: 'invalid_message', path: 'params.channel' },
        );
      }
      throw new RpcError(AHP_ERRORS.NotFound, `channel not found: ${channel.slice(0, 200)}`, {
        code: 'not_found',
      });
    }
    if (!allows(this.principal, 'read')) {
      throw new RpcError(AHP_ERRORS.PermissionDenied, "the token's scope does not include read", {
        code: 'forbidden',
      });
    }
    // A snapshot is what its reply would carry: not while the client has not read what it has.
    if (this.behind) {
      throw new RpcError(AHP_ERRORS.Unavailable, this.behindMessage(), { code: 'unavailable' });
    }
    if (!this.chats.has(channel) && this.chats.size >= this.opts.maxSubscriptions) {
      throw new RpcError(
        AHP_ERRORS.TooManySubscriptions,
        `a connection may hold ${this.opts.maxSubscriptions} subscriptions; unsubscribe first`,
        { code: 'too_many_subscriptions' },
      );
    }
    // A chat of a task the tenant never wrote to is not found, whoever else has that task id;
    // subscribing never claims nor writes.
    const key = await this.s.tenancy.existing(this.principal.tenant, ref.taskId);
    this.unsubscribe(channel);
    const over = this.tenantLimitMessage(channel);
    if (over) {
      throw new RpcError(AHP_ERRORS.TooManySubscriptions, over, {
        code: 'too_many_subscriptions',
      });
    }
    const mirror = new ChatMirror(ref.taskId, ref.sessionId);
    let ready = false;
    /**
     * The updates of the group under way: one entry's updates move the mirror together and go out
     * as consecutive actions, so the mirror (and a snapshot of it) is always at a group boundary.
     */
    let group: Update[] = [];
    const frames = (actions: AhpAction[]) =>
      actions.map((action) =>
        JSON.stringify({
          jsonrpc: '2.0',
          method: 'action',
          params: { channel, action, serverSeq: ++this.serverSeq },
        }),
      );
    // Updates: room was checked for the update (an action is about as large).
    const emit = (actions: AhpAction[]) => {
      for (const f of frames(actions)) this.sendFrame(f, Buffer.byteLength(f));
    };
    const sub = new Subscription(
      key,
      ref.sessionId,
      this.s.hub,
      {
        writable: (bytes) => this.writable(bytes),
        snapshot: (view, resync) => {
          const session = view.sessions.find((x) => x.sessionId === ref.sessionId);
          // Before the client has its snapshot, the mirror simply becomes the view; after, the
          // client is brought to the view with AHP actions (reconcile, as AHP asks of hosts).
          group = [];
          if (!(ready && resync)) {
            mirror.reset(session);
            return true;
          }
          const out = frames(mirror.reconcile(session));
          const bytes = out.reduce((n, f) => n + Buffer.byteLength(f), 0);
          if (!this.writable(bytes)) {
            // The mirror has moved on: what the client has is no longer known. It reconnects.
            this.close(SLOW_CONSUMER_CLOSE, 'slow consumer: no room for its resync');
            return false;
          }
          for (const f of out) this.sendFrame(f, Buffer.byteLength(f));
          return true;
        },
        update: (frame) => {
          group.push(frame.update);
          if (!endsGroup(frame.update)) return;
          const updates = group;
          group = [];
          const actions = updates.flatMap((u) => mirror.apply(u));
          if (ready) emit(actions);
        },
      },
      {
        onResync: (reason) => this.s.metrics.resyncs.inc({ reason }),
        onError: (err) => this.s.log.warn({ err, channel }, 'AHP subscription catch-up failed'),
        onDelivered: () => this.s.metrics.delivered++,
      },
    );
    const stop = this.s.hub.listen(key, (frame) => sub.offer(frame));
    this.chats.set(channel, { sub, mirror, stop });
    this.subs.set(channel, sub);
    try {
      await sub.start(undefined, () => undefined);
    } catch (err) {
      this.unsubscribe(channel);
      throw err;
    }
    // The snapshot goes out in the reply: without room for it, the connection falls behind and
    // the subscribe is refused (its queue is serialized once per version, so this costs little).
    const parts = jsonParts(mirror.state(''), (k) => k === 'queue');
    const bytes = parts.reduce<number>(
      (n, p) => n + (typeof p === 'string' ? Buffer.byteLength(p) : p.length),
      0,
    );
    if (!this.writable(bytes)) {
      this.unsubscribe(channel);
      throw new RpcError(AHP_ERRORS.Unavailable, this.behindMessage(), { code: 'unavailable' });
    }
    return () => {
      ready = true;
      return {
        resource: channel,
        state: mirror.state(new Date().toISOString()),
        fromSeq: this.serverSeq,
      };
    };
  }

  private unsubscribe(channel: string): void {
    const c = this.chats.get(channel);
    if (!c) return;
    this.releaseSubscription(c.sub);
    this.chats.delete(channel);
    this.subs.delete(channel);
  }

  protected releaseSubscription(sub: Subscription): void {
    sub.close();
    for (const c of this.chats.values()) if (c.sub === sub) c.stop();
  }
}

function rpcIdOf(v: unknown): JsonRpcId | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const id = (v as { id?: unknown }).id;
  return JsonRpcId.safeParse(id).success ? (id as JsonRpcId) : null;
}
