import {
  AHP_ERRORS,
  AHP_ROOT,
  AhpDispatchParams,
  AhpListSessionsParams,
  AhpPingParams,
  AhpSubscribeParams,
  AhpUnsubscribeParams,
  JsonRpcId,
  type ChatAction,
  type ChatMirror,
} from '@baton/ahp';
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import type { Authenticator, Principal } from '../auth/auth';
import { toWireError } from '../errors';
import type { Subscription } from '../subscriptions/subscription';
import { NotFoundError } from '../tenancy';
import { Connection, SLOW_CONSUMER_CLOSE } from '../ws/connection';
import { readJson } from '../ws/frames';
import type { Services } from '../ws/client-connection';
import { jsonParts } from '../ws/shared-json';
import {
  listSessions,
  subscribe,
  unsubscribe,
  type ChatSub,
  type RootWatch,
  type SessionSub,
} from './channels';
import { dispatch, echoKeyOf, isRootConfig } from './dispatch';
import { authenticate, initialize, reconnect } from './handshake';
import type { Envelope } from './host-log';
import {
  CODE_OF,
  PROTECTED_RESOURCE,
  RpcError,
  answerableId,
  authRequired,
  params,
  rpcIdOf,
  shared,
} from './rpc';

const AUTH_GRACE_MS = 30_000;
/** What an unauthenticated connection may do besides authenticating. */
const BEFORE_AUTH = new Set([
  'ping',
  'initialize',
  'reconnect',
  'authenticate',
  'subscribe',
  'unsubscribe',
]);

/** AHP 1.0.0 commands Baton does not serve: answered -32601 whatever the state of the connection. */
const SPEC_METHODS = new Set([
  'authenticate',
  'ping',
  'initialize',
  'reconnect',
  'subscribe',
  'unsubscribe',
  'listSessions',
  'dispatchAction',
]);

/**
 * One /ahp client: an AHP 1.0.0 host over Baton's state (docs/ahp-channel.md). `ahp-root://`
 * lists the tenant's tasks as AHP sessions (`ahp-session:/<taskId>`), whose chats are Baton's
 * sessions (`ahp-chat:/<taskId>/<sessionId>`); `serverSeq` is the host's, kept in Redis.
 *
 * This file is the transport (framing, replies in order, sequenced sends); the handshake
 * (handshake.ts), the channels (channels.ts) and dispatchAction (dispatch.ts) are functions of
 * the connection, so its state is public to them and nothing is allocated per part.
 */
export class AhpConnection extends Connection {
  version: string | undefined;
  /** A handshake (initialize or reconnect) is under way: a second one is refused. */
  handshaking = false;
  clientId: string | undefined;
  root: RootWatch | undefined;
  readonly chans = new Map<string, ChatSub | SessionSub>();
  ops: Promise<unknown> = Promise.resolve();
  replies: Promise<unknown> = Promise.resolve();
  /** Envelopes go out in the order their serverSeqs were reserved. */
  sending: Promise<unknown> = Promise.resolve();
  /** The highest serverSeq this connection has seen the host at. */
  seenSeq = 0;
  /** The tenant whose connection place an in-protocol authentication took (given back at close). */
  place: string | undefined;
  /** The listSessions cursors this connection was given: cursor → the last task id of its page. */
  readonly cursors = new Map<string, string>();
  /** Dispatched turns waiting for their echo: channel + turn id → origin. */
  readonly echoes = new Map<string, { clientId: string; clientSeq: number }>();

  constructor(
    ws: WebSocket,
    socket: Socket,
    principal: Principal,
    readonly s: Services,
    readonly auth: Authenticator,
    /** Opened without a token: nothing but the handshake and `authenticate` until it authenticates. */
    public anonymous: boolean,
  ) {
    super(ws, socket, s.hub.writes, principal, 'ahp', s.opts, s.metrics, s.log, s.limits);
    if (anonymous) {
      this.authTimer = setTimeout(
        () => this.close(1008, `authenticate within ${AUTH_GRACE_MS / 1000} s`),
        AUTH_GRACE_MS,
      );
      this.authTimer.unref();
    }
  }

  authTimer: NodeJS.Timeout | undefined;
  /** The root was subscribed before `authenticate`: its notifications start with the tenant. */
  rootPending = false;

  /** A frame of the client's: to its gateway's router (ahp.gateway.ts), which answers it. */
  handleFrame(data: string | Buffer): void {
    const route = this.s.routes.get('/ahp', 'rpc');
    if (!route) this.internalError();
    else void route(new AhpFrame(this, data));
  }

  /** Answers one JSON-RPC frame: rate limit, framing, then its method. */
  handleRpc(data: string | Buffer): void {
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
    const id = hasId ? answerableId(msg.id) : null;
    if (msg.jsonrpc !== '2.0') return this.invalid(id, 'jsonrpc: must be "2.0"');
    if (hasId && !idOk) {
      return this.invalid(
        id,
        typeof msg.id === 'string'
          ? 'id: at most 200 characters'
          : 'id: must be a string, an integer or null',
      );
    }
    if (typeof msg.method !== 'string' || msg.method.length === 0 || msg.method.length > 200) {
      return this.invalid(id, 'method: must be a non-empty string');
    }
    const method = msg.method;
    this.s.metrics.messages.inc({ endpoint: 'ahp', type: method.slice(0, 40) });
    if (!hasId) {
      // A notification is never answered (JSON-RPC 2.0), not even with an error.
      if (!this.version) return;
      // Unauthenticated, only root/configChanged is answered (VS Code sends it as it connects).
      if (this.anonymous && !isRootConfig(msg.params)) return;
      if (method === 'unsubscribe') {
        const p = AhpUnsubscribeParams.safeParse(msg.params);
        if (p.success) void this.serial(async () => unsubscribe(this, p.data.channel));
      } else if (method === 'dispatchAction') {
        const p = AhpDispatchParams.safeParse(msg.params);
        if (p.success) {
          dispatch(this, p.data).catch((err: unknown) =>
            this.s.log.warn({ err }, 'AHP dispatchAction failed'),
          );
        }
      }
      return;
    }
    const result = this.request(method, msg.params);
    // Handled below, once the answers before it are out: never an unhandled rejection meanwhile.
    result.catch(() => undefined);
    // Answers go out in the order the requests came (a quick one does not overtake a slow one).
    this.replies = this.replies.then(() =>
      result
        .then(
          // The result is built at the moment it is sent: snapshots in it take what arrived until
          // then, and the actions of their chats start flowing only after it.
          (build) => this.sendParts(jsonParts({ jsonrpc: '2.0', id, result: build() }, shared)),
          (err: unknown) => {
            if (err instanceof RpcError) {
              this.error(id, err.code, { message: err.message, ...err.data });
            } else if (err instanceof NotFoundError) {
              this.error(id, AHP_ERRORS.NotFound, { message: err.message, code: 'not_found' });
            } else {
              const { error, internal } = toWireError(err);
              if (internal) this.s.log.error({ err, method }, 'AHP request failed');
              this.error(id, CODE_OF[error.code] ?? AHP_ERRORS.InternalError, { ...error });
            }
          },
        )
        .catch((err: unknown) => this.s.log.error({ err, method }, 'AHP reply failed')),
    );
  }

  internalError(): void {
    this.error(null, AHP_ERRORS.InternalError, { message: 'internal error', code: 'internal' });
  }

  invalid(id: JsonRpcId | null, message: string): void {
    this.s.metrics.messages.inc({ endpoint: 'ahp', type: 'invalid' });
    this.error(id, AHP_ERRORS.InvalidRequest, { message, code: 'invalid_message' });
  }

  error(
    id: JsonRpcId | null,
    code: number,
    detail: { message: string; code?: string; [k: string]: unknown },
  ): void {
    const { message, ...data } = detail;
    // AuthRequired names what to authenticate for, as the spec types it: data.resources.
    if (code === AHP_ERRORS.AuthRequired && data.resources === undefined) {
      data.resources = [PROTECTED_RESOURCE];
    }
    this.s.metrics.errors.inc({ code: String(data.code ?? code) });
    this.send({
      jsonrpc: '2.0',
      id,
      error: { code, message, ...(Object.keys(data).length > 0 ? { data } : {}) },
    });
  }

  serial<T>(op: () => Promise<T>): Promise<T> {
    const next = this.ops.then(op);
    this.ops = next.catch(() => undefined);
    return next;
  }

  async request(method: string, raw: unknown): Promise<() => unknown> {
    if (!SPEC_METHODS.has(method)) {
      throw new RpcError(AHP_ERRORS.MethodNotFound, `method not found: ${method.slice(0, 100)}`, {
        code: 'invalid_message',
      });
    }
    if (this.anonymous && !BEFORE_AUTH.has(method)) throw authRequired();
    if (method === 'ping') {
      params(AhpPingParams, raw);
      return () => ({});
    }
    if (method === 'authenticate') return authenticate(this, raw);
    if (method === 'initialize') return initialize(this, raw);
    if (method === 'reconnect') return reconnect(this, raw);
    if (!this.version) {
      throw new RpcError(AHP_ERRORS.InvalidRequest, `call initialize before ${method}`, {
        code: 'invalid_message',
      });
    }
    switch (method) {
      case 'subscribe': {
        const p = params(AhpSubscribeParams, raw);
        const snapshot = await this.serial(() => subscribe(this, p.channel));
        return () => ({ snapshot: snapshot() });
      }
      case 'unsubscribe': {
        const p = params(AhpUnsubscribeParams, raw);
        await this.serial(async () => unsubscribe(this, p.channel));
        return () => ({});
      }
      case 'listSessions': {
        const p = params(AhpListSessionsParams, raw);
        const r = await listSessions(this, p.cursor, p.limit ?? 100);
        return () => r;
      }
      case 'dispatchAction': {
        await dispatch(this, params(AhpDispatchParams, raw));
        return () => ({});
      }
      default:
        throw new RpcError(AHP_ERRORS.MethodNotFound, `method not found: ${method}`, {
          code: 'invalid_message',
        });
    }
  }

  protected override onDispose(): void {
    clearTimeout(this.authTimer);
    if (this.place !== undefined) this.s.limits.closeConnection(this.place);
    this.place = undefined;
    unsubscribe(this, AHP_ROOT);
    for (const [channel, c] of [...this.chans])
      if (c.kind === 'session') unsubscribe(this, channel);
  }

  override releaseSubscription(sub: Subscription): void {
    sub.close();
    for (const c of this.chans.values()) if (c.kind === 'chat' && c.sub === sub) c.stop();
  }

  emitSession(channel: string, actions: ChatAction[]): void {
    this.send_(() => actions.map((action) => ({ channel, action })));
  }

  record(
    envelopes: Buffer[],
    lastSeq: number,
    states: Record<string, string | Buffer>,
  ): Promise<void> {
    if (!this.clientId || this.anonymous) return Promise.resolve();
    return this.s.ahpLog
      .record(this.principal.tenant, this.clientId, envelopes, lastSeq, states)
      .catch((err: unknown) => {
        this.s.log.warn({ err }, 'AHP replay window not recorded');
      });
  }

  /**
   * Sends envelopes in order, each with the next serverSeq of the host (reserved in Redis, so
   * it only grows across gateways), after recording them in the client's replay window.
   */
  send_(build: () => Outgoing[]): void {
    const next = this.sending.then(async () => {
      const seq = await this.sequence(build());
      if (!seq) return;
      const frames = seq.bodies.map((b) => Buffer.concat([FRAME_HEAD, b, FRAME_TAIL]));
      const bytes = frames.reduce((n, f) => n + f.length, 0);
      if (!this.writable(bytes)) {
        // What the client has is no longer known here: it reconnects (its window holds the rest).
        this.close(SLOW_CONSUMER_CLOSE, 'slow consumer: no room for its actions');
        return;
      }
      for (const f of frames) this.sendFrame(f, f.length);
    });
    this.sending = next.catch((err: unknown) => {
      this.s.log.warn({ err }, 'AHP actions not sent');
      this.close(1011, 'actions could not be sequenced');
    });
  }

  /**
   * Envelopes that travel inside a reply rather than as `action` notifications (reconnect's
   * replay): numbered and recorded in the client's window in turn with every other send, so a
   * later action always carries a higher serverSeq. A failure fails the reply.
   */
  sequenceForReply(items: Outgoing[]): Promise<Envelope[]> {
    const next = this.sending.then(async () => (await this.sequence(items))?.envelopes ?? []);
    this.sending = next.catch(() => undefined);
    return next;
  }

  /**
   * Gives items the host's next serverSeqs and records them in the client's window: recorded
   * before sent, so what a client has is always in its window. A failure (Redis) is the
   * caller's: the connection closes, or the reply fails, and the client reconnects.
   */
  private async sequence(
    items: Outgoing[],
  ): Promise<{ envelopes: Envelope[]; bodies: Buffer[] } | undefined> {
    if (items.length === 0) return undefined;
    const first = await this.s.ahpLog.reserve(items.length);
    const envelopes: Envelope[] = items.map((it, i) => ({
      channel: it.channel,
      action: it.action,
      serverSeq: first + i,
      ...(it.origin ? { origin: it.origin } : {}),
      ...(it.rejectionReason !== undefined ? { rejectionReason: it.rejectionReason } : {}),
    }));
    const states: Record<string, string> = {};
    for (const it of items) if (it.state) states[it.state[0]] = it.state[1];
    // A large queued message is the same object for every subscriber: serialized once.
    const bodies = envelopes.map((e) => toBuffer(jsonParts(e, shared)));
    if (this.clientId && !this.anonymous) {
      await this.s.ahpLog.record(
        this.principal.tenant,
        this.clientId,
        bodies,
        envelopes.at(-1)!.serverSeq,
        states,
      );
    }
    this.seenSeq = Math.max(this.seenSeq, first + items.length - 1);
    return { envelopes, bodies };
  }

  /** Sends a chat's actions (already folded into its mirror); a dispatched turn's start is its echo. */
  emit(channel: string, mirror: ChatMirror, actions: ChatAction[]): void {
    if (actions.length === 0) return;
    const items = this.chatItems(channel, mirror, actions);
    this.send_(() => items);
  }

  /**
   * A chat's actions as they are sequenced: each with the dispatched action it answers (its
   * origin), the last with what the host knows of the chat after them (for a reconnect).
   */
  chatItems(channel: string, mirror: ChatMirror, actions: ChatAction[]): Outgoing[] {
    if (actions.length === 0) return [];
    const knowledge = mirror.knowledge();
    // Which dispatched action each answers, decided now (as the mirror moves), not when sent.
    return actions.map((action, i) => {
      const k = echoKeyOf(channel, action);
      const origin = k === undefined ? undefined : this.echoes.get(k);
      if (k !== undefined) this.echoes.delete(k);
      return {
        channel,
        action,
        ...(origin ? { origin } : {}),
        ...(i === actions.length - 1
          ? { state: [`${channel}#k`, knowledge] as [string, string] }
          : {}),
      };
    });
  }

  reject(
    channel: string,
    action: ChatAction,
    origin: NonNullable<Envelope['origin']>,
    reason: string,
  ): void {
    this.send_(() => [{ channel, action, origin, rejectionReason: reason }]);
  }
}

/** An envelope before it is sequenced; `state` is what the client's window keeps beside it. */
export interface Outgoing {
  channel: string;
  action: ChatAction;
  origin?: Envelope['origin'];
  rejectionReason?: string;
  state?: [string, string];
}

const toBuffer = (parts: (string | Buffer)[]): Buffer =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
const FRAME_HEAD = Buffer.from('{"jsonrpc":"2.0","method":"action","params":');
const FRAME_TAIL = Buffer.from('}');

/** An /ahp frame on its way through the gateway's router. */
export class AhpFrame {
  constructor(
    readonly conn: AhpConnection,
    readonly data: string | Buffer,
  ) {}
}
