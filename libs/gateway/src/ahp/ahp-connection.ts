import {
  AHP_ERRORS,
  AHP_ROOT,
  AhpAuthenticateParams,
  AhpDispatchParams,
  AhpDispatchedMessage,
  AhpInitializeParams,
  AhpListSessionsParams,
  AhpPingParams,
  AhpReconnectParams,
  AhpSubscribeParams,
  AhpToolCallConfirmed,
  AhpUnsubscribeParams,
  BATON_META_KEY,
  CLIENT_DISPATCHABLE,
  ChatMirror,
  JsonRpcId,
  SessionMirror,
  chatReducer,
  confirmationKind,
  message,
  negotiateAhpVersion,
  parseChatUri,
  parseSessionUri,
  rootState,
  sessionReducer,
  sessionSummary,
  sessionUri,
  type ChatAction,
  type ChatState,
  type Message,
  type SessionState,
  type ToolCallPart,
} from '@baton/ahp';
import { endsGroup, type ErrorCode, type PermissionSettled, type Update } from '@baton/protocol';
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import type { z } from 'zod';
import type { Authenticator } from '../auth/auth';
import { AuthError, allows, type Principal } from '../auth/auth';
import { toWireError } from '../errors';
import { Subscription } from '../subscriptions/subscription';
import { NotFoundError, clientTaskId } from '../tenancy';
import { Connection, SLOW_CONSUMER_CLOSE } from '../ws/connection';
import { readJson } from '../ws/frames';
import type { Services } from '../ws/client-connection';
import type { Envelope } from './host-log';
import { jsonParts } from '../ws/shared-json';

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

/**
 * The protected resource an AHP client authenticates for (`authenticate { resource, token }`) when
 * it could not put a token on the upgrade: Baton's gateway, with a Baton client token.
 */
export const AUTH_RESOURCE = 'urn:baton:gateway';
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

const notFound = (channel: string) =>
  new RpcError(AHP_ERRORS.NotFound, `channel not found: ${channel.slice(0, 200)}`, {
    code: 'not_found',
  });

/** How a settled request ended, in words (a second answer's rejection says it). */
function settledWords(s: PermissionSettled | undefined): string {
  if (!s) return '';
  const by = s.by ? ` by ${s.by === 'person' ? 'a person' : s.by.replace('_', ' ')}` : '';
  return s.outcome === 'selected' ? ` with option ${s.optionId ?? '?'}${by}` : ` (cancelled${by})`;
}

interface ChatSub {
  kind: 'chat';
  sub: Subscription;
  mirror: ChatMirror;
  stop: () => void;
}
interface SessionSub {
  kind: 'session';
  mirror: SessionMirror;
  stop: () => void;
}

/** What a root subscriber was told of each of its tenant's sessions (by task id): their status. */
interface RootWatch {
  stop: () => void;
  known: Map<string, number | undefined>;
  /** Tasks to look at again, with the update seq their view must have reached. */
  pending: Map<string, number>;
  timer: NodeJS.Timeout | undefined;
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
 * One /ahp client: an AHP 1.0.0 host over Baton's state (docs/ahp-channel.md). `ahp-root://`
 * lists the tenant's tasks as AHP sessions (`ahp-session:/<taskId>`), whose chats are Baton's
 * sessions (`ahp-chat:/<taskId>/<sessionId>`); `serverSeq` is the host's, kept in Redis.
 */
export class AhpConnection extends Connection {
  private version: string | undefined;
  /** A handshake (initialize or reconnect) is under way: a second one is refused. */
  private handshaking = false;
  private clientId: string | undefined;
  private root: RootWatch | undefined;
  private readonly chans = new Map<string, ChatSub | SessionSub>();
  private ops: Promise<unknown> = Promise.resolve();
  private replies: Promise<unknown> = Promise.resolve();
  /** Envelopes go out in the order their serverSeqs were reserved. */
  private sending: Promise<unknown> = Promise.resolve();
  /** The highest serverSeq this connection has seen the host at. */
  private seenSeq = 0;
  /** The tenant whose connection place an in-protocol authentication took (given back at close). */
  private place: string | undefined;
  /** Dispatched turns waiting for their echo: channel + turn id → origin. */
  private readonly echoes = new Map<string, { clientId: string; clientSeq: number }>();

  constructor(
    ws: WebSocket,
    socket: Socket,
    principal: Principal,
    private readonly s: Services,
    private readonly auth: Authenticator,
    /** Opened without a token: nothing but the handshake and `authenticate` until it authenticates. */
    private anonymous: boolean,
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

  private authTimer: NodeJS.Timeout | undefined;
  /** The root was subscribed before `authenticate`: its notifications start with the tenant. */
  private rootPending = false;

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
      if (!this.version) return;
      // Unauthenticated, only root/configChanged is answered (VS Code sends it as it connects).
      if (this.anonymous && !isRootConfig(msg.params)) return;
      if (method === 'unsubscribe') {
        const p = AhpUnsubscribeParams.safeParse(msg.params);
        if (p.success) void this.serial(async () => this.unsubscribe(p.data.channel));
      } else if (method === 'dispatchAction') {
        const p = AhpDispatchParams.safeParse(msg.params);
        if (p.success) {
          this.dispatch(p.data).catch((err: unknown) =>
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
    if (!SPEC_METHODS.has(method)) {
      throw new RpcError(AHP_ERRORS.MethodNotFound, `method not found: ${method.slice(0, 100)}`, {
        code: 'invalid_message',
      });
    }
    if (this.anonymous && !BEFORE_AUTH.has(method)) throw this.authRequired();
    if (method === 'ping') {
      params(AhpPingParams, raw);
      return () => ({});
    }
    if (method === 'authenticate') return this.authenticate(raw);
    if (method === 'initialize') return this.initialize(raw);
    if (method === 'reconnect') return this.reconnect(raw);
    if (!this.version) {
      throw new RpcError(AHP_ERRORS.InvalidRequest, `call initialize before ${method}`, {
        code: 'invalid_message',
      });
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
      case 'listSessions': {
        const p = params(AhpListSessionsParams, raw);
        const r = await this.listSessions(p.cursor, p.limit ?? 100);
        return () => r;
      }
      case 'dispatchAction': {
        await this.dispatch(params(AhpDispatchParams, raw));
        return () => ({});
      }
      default:
        throw new RpcError(AHP_ERRORS.MethodNotFound, `method not found: ${method}`, {
          code: 'invalid_message',
        });
    }
  }

  /**
   * initialize: version, then the initial subscriptions. Nothing of it stays when it fails: the
   * subscriptions it made are dropped and the connection is as before (a later initialize works).
   */
  private async initialize(raw: unknown): Promise<() => unknown> {
    if (this.version || this.handshaking) {
      throw new RpcError(AHP_ERRORS.InvalidRequest, 'already initialized', {
        code: 'invalid_message',
      });
    }
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
    this.handshaking = true;
    try {
      const seq = await this.s.ahpLog.current();
      this.seenSeq = Math.max(this.seenSeq, seq);
      this.clientId = p.clientId;
      // An unauthenticated client's window starts when it authenticates (it has no tenant yet).
      if (!this.anonymous) await this.s.ahpLog.begin(this.principal.tenant, p.clientId, seq);
      const snapshots = await this.subscribeAll(p.initialSubscriptions ?? [], true);
      this.version = n.version;
      return () => ({
        protocolVersion: n.version,
        serverSeq: seq,
        serverInfo: SERVER_INFO,
        snapshots: snapshots.map((f) => f()),
        _meta: {
          [BATON_META_KEY]: {
            sessionChannel: 'ahp-session:/<taskId> (percent-encoded)',
            chatChannel: 'ahp-chat:/<taskId>/<sessionId> (each id percent-encoded)',
            ...(this.anonymous
              ? { authenticate: { resource: AUTH_RESOURCE } }
              : { tenant: this.principal.tenant }),
          },
        },
      });
    } catch (err) {
      this.dropAll();
      this.clientId = undefined;
      throw err;
    } finally {
      this.handshaking = false;
    }
  }

  /**
   * reconnect, also as a connection's first message: the actions after `lastSeenServerSeq` when
   * the client's window is still held (by any gateway: it is in Redis), snapshots when it is gone,
   * -32008 when the host does not know the client (it falls back to initialize).
   */
  private async reconnect(raw: unknown): Promise<() => unknown> {
    if (this.handshaking) {
      throw new RpcError(AHP_ERRORS.InvalidRequest, 'a handshake is under way', {
        code: 'invalid_message',
      });
    }
    const p = params(AhpReconnectParams, raw);
    this.handshaking = true;
    try {
      const r = this.anonymous
        ? ({ kind: 'unknown' } as const)
        : await this.s.ahpLog.recover(this.principal.tenant, p.clientId, p.lastSeenServerSeq);
      if (r.kind === 'unknown') {
        throw new RpcError(
          AHP_ERRORS.NotFound,
          `client ${p.clientId.slice(0, 200)} is not known here: initialize`,
          {
            code: 'not_found',
          },
        );
      }
      const seq = await this.s.ahpLog.current();
      this.seenSeq = Math.max(this.seenSeq, seq);
      this.dropAll();
      this.clientId = p.clientId;
      const wanted = [...new Set(p.subscriptions)];
      if (r.kind === 'replay') {
        // Each channel continues from what the client has: its snapshot with every action it
        // was sent on it folded in (the window holds both), and what that host knew.
        const missing: string[] = [];
        const ok: string[] = [];
        const restored: Record<string, Restored> = {};
        for (const c of wanted) {
          const st = c === AHP_ROOT ? undefined : rebuild(c, r.states, r.all);
          if (c === AHP_ROOT) ok.push(c);
          else if (st) {
            ok.push(c);
            restored[c] = st;
          } else missing.push(c);
        }
        const subscribed = await this.subscribeAll(ok, false, restored);
        const keep = new Set(
          ok.filter((c) =>
            c === AHP_ROOT ? this.root !== undefined || this.rootPending : this.chans.has(c),
          ),
        );
        const actions = r.envelopes.filter((e) => keep.has(e.channel));
        for (const c of ok) if (!keep.has(c)) missing.push(c);
        this.version ??= '1.0.0';
        return () => {
          for (const f of subscribed) f();
          return { type: 'replay', actions, missing };
        };
      }
      await this.s.ahpLog.begin(this.principal.tenant, p.clientId, seq);
      const snapshots = await this.subscribeAll(wanted, false);
      this.version ??= '1.0.0';
      return () => ({ type: 'snapshot', snapshots: snapshots.map((f) => f()) });
    } catch (err) {
      if (!this.version) this.dropAll();
      throw err;
    } finally {
      this.handshaking = false;
    }
  }

  private authRequired(): RpcError {
    return new RpcError(
      AHP_ERRORS.AuthRequired,
      `authenticate first: authenticate { resource: "${AUTH_RESOURCE}", token } with a Baton client token`,
      { code: 'unauthorized', resource: AUTH_RESOURCE },
    );
  }

  /**
   * AHP's in-protocol `authenticate`, for clients that cannot put a token on the upgrade: a Baton
   * client token for the gateway's resource gives the connection its tenant and scopes (and its
   * expiry). A connection may authenticate again to renew its token, for the same tenant only.
   */
  private async authenticate(raw: unknown): Promise<() => unknown> {
    const p = params(AhpAuthenticateParams, raw);
    if (p.resource !== AUTH_RESOURCE) {
      throw new RpcError(
        AHP_ERRORS.InvalidParams,
        `params.resource: this host protects "${AUTH_RESOURCE}" only`,
        { code: 'invalid_message', path: 'params.resource' },
      );
    }
    let principal: Principal;
    try {
      principal = await this.auth.verify(p.token);
    } catch (err) {
      if (!(err instanceof AuthError)) throw err;
      throw new RpcError(AHP_ERRORS.AuthRequired, err.message, {
        code: 'unauthorized',
        resource: AUTH_RESOURCE,
      });
    }
    if (!this.anonymous) {
      if (principal.tenant !== this.principal.tenant) {
        throw new RpcError(AHP_ERRORS.PermissionDenied, 'a connection keeps its tenant', {
          code: 'forbidden',
        });
      }
      this.reauthenticate(principal);
      return () => ({});
    }
    // The connection now counts against its tenant's connections on this gateway.
    if (!this.s.limits.openConnection(principal.tenant)) {
      throw new RpcError(
        AHP_ERRORS.TooManySubscriptions,
        `the tenant holds ${this.s.limits.maxConnections} connections on this gateway ` +
          '(GATEWAY_MAX_CONNECTIONS_PER_TENANT); close one first',
        { code: 'too_many_connections' },
      );
    }
    this.place = principal.tenant;
    this.anonymous = false;
    clearTimeout(this.authTimer);
    this.reauthenticate(principal);
    if (this.version && this.clientId) {
      await this.s.ahpLog.begin(principal.tenant, this.clientId, await this.s.ahpLog.current());
    }
    if (this.rootPending && allows(principal, 'read')) await this.watchRoot();
    return () => ({});
  }

  /**
   * Subscribes to each channel; channels that do not exist (or are another tenant's) are left
   * out. Any other failure undoes them all.
   */
  private async subscribeAll(
    channels: readonly string[],
    strict: boolean,
    restored?: Record<string, Restored>,
  ): Promise<(() => { resource: string; state: unknown; fromSeq: number })[]> {
    const out: (() => { resource: string; state: unknown; fromSeq: number })[] = [];
    for (const channel of channels) {
      try {
        out.push(await this.serial(() => this.subscribe(channel, restored?.[channel])));
      } catch (err) {
        const absent =
          err instanceof NotFoundError ||
          (err instanceof RpcError &&
            (err.code === AHP_ERRORS.NotFound ||
              err.code === AHP_ERRORS.AuthRequired ||
              (!strict && err.code === AHP_ERRORS.InvalidParams)));
        if (!absent) throw err;
      }
    }
    return out;
  }

  private dropAll(): void {
    for (const c of [...this.chans.keys()]) this.unsubscribe(c);
    this.unsubscribe(AHP_ROOT);
  }

  /** listSessions: the tenant's tasks as AHP session summaries, by task id, `cursor`-paginated. */
  private async listSessions(cursor: string | undefined, limit: number) {
    if (!allows(this.principal, 'read')) {
      throw new RpcError(AHP_ERRORS.PermissionDenied, "the token's scope does not include read", {
        code: 'forbidden',
      });
    }
    const all = await this.s.tenancy.tasks(this.principal.tenant);
    const after = cursor ? Buffer.from(cursor, 'base64url').toString() : undefined;
    const from = after === undefined ? 0 : all.findIndex((t) => t > after);
    const page = from < 0 ? [] : all.slice(from, from + limit);
    const now = new Date().toISOString();
    const items = [];
    for (const taskId of page) {
      const view = await this.s.hub.view(this.s.tenancy.key(this.principal.tenant, taskId));
      if (view.status === 'deleted') continue;
      items.push(sessionSummary(taskId, view, now));
    }
    const last = page.at(-1);
    const more = last !== undefined && from + limit < all.length;
    return {
      items,
      ...(more ? { nextCursor: Buffer.from(last).toString('base64url') } : {}),
    };
  }

  private requireRead(): void {
    if (!allows(this.principal, 'read')) {
      throw new RpcError(AHP_ERRORS.PermissionDenied, "the token's scope does not include read", {
        code: 'forbidden',
      });
    }
  }

  /**
   * Subscribes to a channel and returns the builder of its snapshot, to be called synchronously
   * as the reply carrying it is sent: until then changes only move the mirror, after it every
   * change is an action with a serverSeq above the snapshot's fromSeq. A channel that does not
   * exist is -32008 before anything is read or written.
   */
  private async subscribe(
    channel: string,
    restored?: Restored,
  ): Promise<() => { resource: string; state: unknown; fromSeq: number }> {
    if (channel === AHP_ROOT) {
      if (this.anonymous) {
        // Only the agents, each naming what to authenticate for; the tenant's notifications
        // start once the client has authenticated.
        this.rootPending = true;
        const base = rootState(this.s.opts.profiles);
        const state = {
          agents: base.agents.map((a) => ({
            ...a,
            protectedResources: [
              {
                resource: AUTH_RESOURCE,
                resource_name: 'Baton',
                bearer_methods_supported: ['header'],
              },
            ],
          })),
        };
        return () => ({ resource: AHP_ROOT, state, fromSeq: this.seenSeq });
      }
      this.requireRead();
      if (!this.root) await this.watchRoot();
      const state = rootState(this.s.opts.profiles);
      return () => ({ resource: AHP_ROOT, state, fromSeq: this.seenSeq });
    }
    if (this.anonymous) throw this.authRequired();
    const sessionTask = parseSessionUri(channel);
    if (sessionTask !== null) {
      return this.subscribeSession(
        channel,
        sessionTask,
        restored?.state as SessionState | undefined,
      );
    }
    const ref = parseChatUri(channel);
    if (!ref) throw notFound(channel);
    this.requireRead();
    // A snapshot is what its reply would carry: not while the client has not read what it has.
    if (this.behind) {
      throw new RpcError(AHP_ERRORS.Unavailable, this.behindMessage(), { code: 'unavailable' });
    }
    if (!this.chans.has(channel) && this.chans.size >= this.opts.maxSubscriptions) {
      throw new RpcError(
        AHP_ERRORS.TooManySubscriptions,
        `a connection may hold ${this.opts.maxSubscriptions} subscriptions; unsubscribe first`,
        { code: 'too_many_subscriptions' },
      );
    }
    // A chat of a task the tenant never wrote to is not found, whoever else has that task id;
    // subscribing never claims nor writes.
    const key = await this.s.tenancy.existing(this.principal.tenant, ref.taskId);
    const over = this.tenantLimitMessage(channel);
    if (over) {
      throw new RpcError(AHP_ERRORS.TooManySubscriptions, over, {
        code: 'too_many_subscriptions',
      });
    }
    const view = await this.s.hub.view(key);
    if (!view.sessions.some((x) => x.sessionId === ref.sessionId)) throw notFound(channel);
    this.unsubscribe(channel);
    const mirror = new ChatMirror(ref.taskId, ref.sessionId, new Date().toISOString());
    if (restored) mirror.restore(restored.state as ChatState, restored.knowledge);
    let ready = false;
    /** A restored chat's client has the restored state: what moved it since is sent after the reply. */
    const held: ChatAction[] = [];
    let group: Update[] = [];
    const sub = new Subscription(
      key,
      ref.sessionId,
      this.s.hub,
      {
        writable: (bytes) => this.writable(bytes),
        snapshot: (v) => {
          const session = v.sessions.find((x) => x.sessionId === ref.sessionId);
          group = [];
          // Before the client has its snapshot, the mirror silently becomes the view; after,
          // the client is brought to it with AHP actions (reconcile, as AHP asks of hosts).
          const actions = mirror.sync(session, new Date().toISOString());
          if (ready) this.emit(channel, mirror, actions);
          else if (restored) held.push(...actions);
          return true;
        },
        update: (frame) => {
          group.push(frame.update);
          if (!endsGroup(frame.update)) return;
          const updates = group;
          group = [];
          const actions = mirror.applyGroup(updates, new Date().toISOString());
          if (ready) this.emit(channel, mirror, actions);
          else if (restored) held.push(...actions);
        },
      },
      {
        onResync: (reason) => this.s.metrics.resyncs.inc({ reason }),
        onError: (err) => this.s.log.warn({ err, channel }, 'AHP subscription catch-up failed'),
        onDelivered: () => this.s.metrics.delivered++,
      },
    );
    const stop = this.s.hub.listen(key, (frame) => sub.offer(frame));
    this.chans.set(channel, { kind: 'chat', sub, mirror, stop });
    this.subs.set(channel, sub);
    try {
      await sub.start(undefined, () => undefined);
    } catch (err) {
      this.unsubscribe(channel);
      throw err;
    }
    if (restored) {
      // A reconnect: the client has the restored state; what changed since goes out as actions.
      return () => {
        ready = true;
        this.emit(channel, mirror, held.splice(0));
        return { resource: channel, state: mirror.state(), fromSeq: this.seenSeq };
      };
    }
    const bytes = jsonParts(mirror.state(), shared).reduce(
      (n, p) => n + (typeof p === 'string' ? Buffer.byteLength(p) : p.length),
      0,
    );
    if (!this.writable(bytes)) {
      this.unsubscribe(channel);
      throw new RpcError(AHP_ERRORS.Unavailable, this.behindMessage(), { code: 'unavailable' });
    }
    return () => {
      ready = true;
      // The client's window starts from this state (a reconnect elsewhere continues from it).
      const fromSeq = this.seenSeq;
      void this.record([], 0, { [channel]: snapshotRecord(fromSeq, mirror.ahp) });
      return { resource: channel, state: mirror.state(), fromSeq };
    };
  }

  private unsubscribe(channel: string): void {
    if (channel === AHP_ROOT) {
      this.rootPending = false;
      if (this.root) {
        this.root.stop();
        clearTimeout(this.root.timer);
        this.root = undefined;
      }
      return;
    }
    const c = this.chans.get(channel);
    if (!c) return;
    this.chans.delete(channel);
    if (c.kind === 'chat') {
      this.releaseSubscription(c.sub);
      this.subs.delete(channel);
    } else c.stop();
  }

  protected override onDispose(): void {
    clearTimeout(this.authTimer);
    if (this.place !== undefined) this.s.limits.closeConnection(this.place);
    this.place = undefined;
    this.unsubscribe(AHP_ROOT);
    for (const [channel, c] of [...this.chans]) if (c.kind === 'session') this.unsubscribe(channel);
  }

  protected releaseSubscription(sub: Subscription): void {
    sub.close();
    for (const c of this.chans.values()) if (c.kind === 'chat' && c.sub === sub) c.stop();
  }

  /**
   * An AHP session (a Baton task): its chat catalog, kept in step with Baton's sessions by
   * session/chatAdded, chatRemoved, chatUpdated and defaultChatChanged actions.
   */
  private async subscribeSession(
    channel: string,
    taskId: string,
    restored: SessionState | undefined,
  ): Promise<() => { resource: string; state: unknown; fromSeq: number }> {
    this.requireRead();
    const key = await this.s.tenancy.existing(this.principal.tenant, taskId);
    const view = await this.s.hub.view(key);
    if (view.status === 'deleted') throw notFound(channel);
    this.unsubscribe(channel);
    const mirror = new SessionMirror(taskId, view, new Date().toISOString(), restored);
    let ready = false;
    let chain: Promise<unknown> = Promise.resolve();
    let queued = false;
    /** The task's updates seen so far: a view older than that is read again. */
    let wantSeq = 0;
    const refresh = (attempt = 0) => {
      if (queued) return;
      queued = true;
      chain = chain
        .then(async () => {
          queued = false;
          if (this.chans.get(channel)?.kind !== 'session') return;
          const v = await this.s.hub.view(key);
          const actions = mirror.sync(v, new Date().toISOString());
          if (ready && actions.length > 0) this.emitSession(channel, actions);
          // The update can come before the view that has it is stored: look again shortly.
          if (v.seq < wantSeq && attempt < 100) {
            setTimeout(() => refresh(attempt + 1), 20).unref();
          }
        })
        .catch((err: unknown) => this.s.log.warn({ err, channel }, 'AHP session refresh failed'));
    };
    const stop = this.s.hub.listen(key, (frame) => {
      wantSeq = Math.max(wantSeq, frame.update.seq);
      if (endsGroup(frame.update)) refresh();
    });
    this.chans.set(channel, { kind: 'session', mirror, stop });
    return () => {
      ready = true;
      const fromSeq = this.seenSeq;
      if (!restored) void this.record([], 0, { [channel]: snapshotRecord(fromSeq, mirror.state) });
      // Whatever changed since the view was read (before the listener, or while the client was
      // away) follows the reply as actions: the view is read again once it is out.
      refresh();
      return { resource: channel, state: mirror.state, fromSeq };
    };
  }

  /**
   * The root channel's notifications (ephemeral, unsequenced, as the spec has them):
   * root/sessionAdded when a task of the tenant appears, root/sessionRemoved when it is deleted,
   * root/sessionSummaryChanged when its status changes.
   */
  private async watchRoot(): Promise<void> {
    const w: RootWatch = {
      stop: () => undefined,
      known: new Map(),
      pending: new Map(),
      timer: undefined,
    };
    let loaded = false;
    let flushing: Promise<void> = Promise.resolve();
    const retries = new Map<string, number>();
    const notify = (method: string, params: Record<string, unknown>) =>
      this.send({ jsonrpc: '2.0', method, params: { channel: AHP_ROOT, ...params } });
    const flush = async () => {
      const ids = [...w.pending];
      w.pending.clear();
      let again = false;
      for (const [taskId, seq] of ids) {
        if (this.root !== w) return;
        const view = await this.s.hub.view(this.s.tenancy.key(this.principal.tenant, taskId));
        // The update can come before the view that has it is stored: look again shortly.
        const tries = (retries.get(taskId) ?? 0) + 1;
        if (view.seq < seq && tries <= 100) {
          retries.set(taskId, tries);
          w.pending.set(taskId, Math.max(seq, w.pending.get(taskId) ?? 0));
          again = true;
        } else retries.delete(taskId);
        const now = new Date().toISOString();
        if (view.status === 'deleted') {
          if (w.known.delete(taskId)) {
            notify('root/sessionRemoved', { session: sessionUri(taskId) });
          }
          continue;
        }
        const summary = sessionSummary(taskId, view, now);
        if (!w.known.has(taskId)) notify('root/sessionAdded', { summary });
        else if (w.known.get(taskId) !== summary.status) {
          notify('root/sessionSummaryChanged', {
            session: summary.resource,
            changes: { status: summary.status, modifiedAt: now },
          });
        }
        w.known.set(taskId, summary.status);
      }
      if (again) schedule();
    };
    // One flush at a time, in order; a few ms of updates go together.
    const schedule = () => {
      if (!loaded || w.timer) return;
      w.timer = setTimeout(() => {
        w.timer = undefined;
        flushing = flushing
          .then(flush)
          .catch((err: unknown) => this.s.log.warn({ err }, 'AHP root notification failed'));
      }, 20);
    };
    // Listening before the tenant's list is read: a task that appears meanwhile is not missed.
    w.stop = this.s.hub.listenTenant(this.principal.tenant, (frame) => {
      const u = frame.update;
      if (!endsGroup(u) && u.type !== 'task.status') return;
      const t = clientTaskId(u.taskId);
      w.pending.set(t, Math.max(u.seq, w.pending.get(t) ?? 0));
      schedule();
    });
    this.root = w;
    try {
      for (const t of await this.s.tenancy.tasks(this.principal.tenant)) w.known.set(t, undefined);
    } catch (err) {
      this.unsubscribe(AHP_ROOT);
      throw err;
    }
    loaded = true;
    if (w.pending.size > 0) schedule();
  }

  private emitSession(channel: string, actions: ChatAction[]): void {
    this.send_(() => actions.map((action) => ({ channel, action })));
  }

  private record(
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
  private send_(
    build: () => {
      channel: string;
      action: ChatAction;
      origin?: Envelope['origin'];
      rejectionReason?: string;
      state?: [string, string];
    }[],
  ): void {
    const next = this.sending.then(async () => {
      const items = build();
      if (items.length === 0) return;
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
      // Recorded before sent: what a client has is always in its window. A failure (Redis) closes
      // the connection instead: the client reconnects, and gets what it missed from the view.
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
      const frames = bodies.map((b) => Buffer.concat([FRAME_HEAD, b, FRAME_TAIL]));
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

  /** Sends a chat's actions (already folded into its mirror); a dispatched turn's start is its echo. */
  private emit(channel: string, mirror: ChatMirror, actions: ChatAction[]): void {
    if (actions.length === 0) return;
    const knowledge = mirror.knowledge();
    // Which dispatched action each answers, decided now (as the mirror moves), not when sent.
    const items = actions.map((action, i) => {
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
    this.send_(() => items);
  }

  private reject(
    channel: string,
    action: ChatAction,
    origin: NonNullable<Envelope['origin']>,
    reason: string,
  ): void {
    this.send_(() => [{ channel, action, origin, rejectionReason: reason }]);
  }

  /**
   * dispatchAction: a client's action, answered the spec's way — echoed (with its origin) when
   * Baton takes it, echoed with a `rejectionReason` when it does not. A user message is a Baton
   * prompt submission under the turn's (or queued message's) id as idempotency key, through
   * admission.
   */
  private async dispatch(p: AhpDispatchParams): Promise<void> {
    const clientId = this.clientId ?? 'unknown';
    const origin = { clientId, clientSeq: p.clientSeq };
    const action = p.action as ChatAction;
    if (p.channel === AHP_ROOT) {
      // The spec's root reducer ignores a config change for a host that publishes no config
      // schema (Baton's RootState has no `config`): accepted — echoed — and changes nothing.
      if (action.type === 'root/configChanged')
        this.send_(() => [{ channel: AHP_ROOT, action, origin }]);
      else {
        this.reject(
          p.channel,
          action,
          origin,
          `${action.type.slice(0, 200)} is not a client-dispatchable root action`,
        );
      }
      return;
    }
    const c = this.chans.get(p.channel);
    if (c?.kind === 'session') {
      this.reject(p.channel, action, origin, sessionActionRefusal(action.type));
      return;
    }
    if (!c) {
      this.reject(p.channel, action, origin, 'not subscribed to this channel');
      return;
    }
    if (!CLIENT_DISPATCHABLE.has(action.type)) {
      this.reject(
        p.channel,
        action,
        origin,
        `${action.type.slice(0, 200)} is not a client-dispatchable action`,
      );
      return;
    }
    if (!allows(this.principal, 'prompt')) {
      this.reject(p.channel, action, origin, "the token's scope does not include prompt");
      return;
    }
    const { mirror } = c;
    const key = this.s.tenancy.key(this.principal.tenant, mirror.taskId);
    try {
      switch (action.type) {
        case 'chat/turnStarted':
        case 'chat/pendingMessageSet': {
          const isTurn = action.type === 'chat/turnStarted';
          const id = isTurn ? action.turnId : action.id;
          const msg = AhpDispatchedMessage.safeParse(action.message);
          if (typeof id !== 'string' || id.length === 0 || id.length > 200 || !msg.success) {
            this.reject(
              p.channel,
              action,
              origin,
              'malformed action: needs an id and a message { text }',
            );
            return;
          }
          const steering = !isTurn && action.kind === 'steering';
          if (!isTurn && !steering && action.kind !== 'queued') {
            this.reject(p.channel, action, origin, 'kind: must be "steering" or "queued"');
            return;
          }
          const m: Message = { ...message(msg.data.text), ...(msg.data as object) } as Message;
          mirror.remember(id, m);
          const echoKey = `${p.channel}\nturn:${id}`;
          if (isTurn) this.echoes.set(echoKey, origin);
          await this.s.tenancy.write(this.principal.tenant, mirror.taskId);
          const decide = (d: Decision) => {
            if (steering) {
              this.answerSteering(p.channel, mirror, action, origin, id, d);
              return;
            }
            if (d.outcome === 'admitted' && d.mode === 'steer') {
              // Steered into the turn that runs: no turn of its own starts.
              this.echoes.delete(echoKey);
              const running = mirror.ahp.activeTurn?.id;
              this.reject(
                p.channel,
                action,
                origin,
                `steered into the running turn${running ? ` ${running}` : ''}`,
              );
              return;
            }
            if (d.outcome === 'admitted') {
              if (!isTurn) {
                this.echoQueued(p.channel, mirror, action, origin, id);
                return;
              }
              // A turn this client already has (a pending action re-sent after a reconnect: the
              // idempotency key made no second prompt): answered now, its start is not sent again.
              const s0 = mirror.ahp;
              const had = s0.activeTurn?.id === id || s0.turns.some((t) => t.id === id);
              if (had && this.echoes.get(echoKey) === origin) {
                this.echoes.delete(echoKey);
                this.reject(p.channel, action, origin, `already started as turn ${id}`);
              }
              return;
            }
            if (d.outcome === 'queued') {
              if (isTurn) {
                this.echoes.delete(echoKey);
                this.reject(
                  p.channel,
                  action,
                  origin,
                  `queued (${d.reason ?? 'busy'}): it is in queuedMessages as ${id}`,
                );
              } else this.echoQueued(p.channel, mirror, action, origin, id);
              return;
            }
            this.echoes.delete(echoKey);
            this.reject(
              p.channel,
              action,
              origin,
              `${d.outcome}: ${d.message ?? d.reason ?? ''}`.trim(),
            );
          };
          const r = await this.s.commands.prompt(
            {
              taskId: key,
              sessionId: mirror.sessionId,
              text: msg.data.text,
              idempotencyKey: id,
              origin: 'human',
            },
            (late) => decide(late.data.decision as Decision),
          );
          if (r.status === 'decided') decide(r.decision as Decision);
          return;
        }
        case 'chat/turnCancelled': {
          const gen = mirror.runningGeneration;
          if (mirror.ahp.activeTurn?.id !== action.turnId || gen === null) {
            this.reject(p.channel, action, origin, 'no such active turn');
            return;
          }
          // The echo is the turn's end, whichever way Baton ends it.
          const k = `${p.channel}\ncancel:${String(action.turnId)}`;
          this.echoes.set(k, origin);
          const r = await this.s.commands.command(key, mirror.sessionId, {
            type: 'session.cancel',
            observedGeneration: gen,
          });
          if (r.status === 'failed') this.echoes.delete(k);
          // A refusal is answered now.
          if (r.status === 'failed')
            this.reject(p.channel, action, origin, `${r.reason}: ${r.message}`);
          return;
        }
        case 'chat/pendingMessageRemoved': {
          if (action.kind === 'steering') {
            this.reject(
              p.channel,
              action,
              origin,
              mirror.ahp.steeringMessage?.id === action.id
                ? 'Baton has delivered this steering message into the running turn: it cannot be withdrawn (cancel the turn instead)'
                : 'no such steering message',
            );
            return;
          }
          const promptId =
            action.kind === 'queued' && typeof action.id === 'string'
              ? mirror.promptIdOf(action.id)
              : undefined;
          if (!promptId) {
            this.reject(p.channel, action, origin, 'no such queued message');
            return;
          }
          // The echo is its removal from queuedMessages.
          const k = `${p.channel}\nremove:${String(action.id)}`;
          this.echoes.set(k, origin);
          const r = await this.s.commands.command(key, mirror.sessionId, {
            type: 'queue.cancel',
            promptId,
          });
          if (r.status === 'failed') this.echoes.delete(k);
          if (r.status === 'failed')
            this.reject(p.channel, action, origin, `${r.reason}: ${r.message}`);
          return;
        }
        case 'chat/toolCallConfirmed': {
          await this.confirmToolCall(p.channel, mirror, key, action, origin);
          return;
        }
        case 'chat/queuedMessagesReordered': {
          // Baton's queue runs in the order prompts came: it has no reorder (queue.send_now runs
          // one prompt now, cancelling the turn; not a reorder). An order that is already Baton's
          // changes nothing, and is echoed; any other is rejected.
          const have = mirror.ahp;
          const ids = (q: ChatState) => (q.queuedMessages ?? []).map((m) => m.id);
          if (JSON.stringify(ids(chatReducer(have, action))) === JSON.stringify(ids(have))) {
            this.send_(() => [{ channel: p.channel, action, origin }]);
          } else {
            this.reject(
              p.channel,
              action,
              origin,
              "Baton's queue keeps the order prompts were submitted in: it cannot be reordered (remove a queued message and send it again to move it last)",
            );
          }
          return;
        }
        default:
          this.reject(p.channel, action, origin, `${action.type} is not supported by this host`);
      }
    } catch (err) {
      const { error } = toWireError(err);
      this.reject(p.channel, action, origin, `${error.code}: ${error.message}`);
    }
  }

  /**
   * A client's answer to a tool call awaiting confirmation — Baton's open permission request of
   * the same id — is a `permission.respond` with the option it chose (`selectedOptionId`, else the
   * agent's allow-once / reject-once option for an approval / a denial). Its echo is the tool
   * call leaving pending-confirmation as Baton settled it; a second answer, or one to a request
   * already settled (answered elsewhere, timed out, cancelled), is rejected saying how it ended.
   */
  private async confirmToolCall(
    channel: string,
    mirror: ChatMirror,
    key: string,
    action: ChatAction,
    origin: NonNullable<Envelope['origin']>,
  ): Promise<void> {
    const parsed = AhpToolCallConfirmed.safeParse(action);
    if (!parsed.success) {
      const i = parsed.error.issues[0];
      const where = i?.path.length ? `${i.path.join('.')}: ` : '';
      this.reject(channel, action, origin, `malformed action: ${where}${i?.message ?? ''}`);
      return;
    }
    const a = parsed.data;
    const turn = mirror.ahp.activeTurn;
    const tc =
      turn?.id === a.turnId
        ? turn.responseParts
            .map((p) => (p as Partial<ToolCallPart>).toolCall)
            .find((t) => t?.toolCallId === a.toolCallId)
        : undefined;
    if (!tc) {
      this.reject(channel, action, origin, 'no such tool call in the active turn');
      return;
    }
    const request = mirror.permissionOf(a.toolCallId);
    if (tc.status !== 'pending-confirmation' || !request) {
      const how = settledWords(mirror.settledOf(a.toolCallId));
      this.reject(
        channel,
        action,
        origin,
        `permission_answered: the request was already settled${how}; this answer changes nothing (the tool call is ${tc.status})`,
      );
      return;
    }
    if (a.editedToolInput !== undefined) {
      this.reject(
        channel,
        action,
        origin,
        "Baton cannot edit the agent's tool input (the tool call is not editable)",
      );
      return;
    }
    const want = a.approved ? 'approve' : 'deny';
    let option = request.options.find((o) => o.optionId === a.selectedOptionId);
    if (a.selectedOptionId !== undefined) {
      if (!option) {
        this.reject(
          channel,
          action,
          origin,
          `unknown_option: the agent offered ${request.options.map((o) => o.optionId).join(', ')}`,
        );
        return;
      }
      if (confirmationKind(option.kind) !== want) {
        this.reject(
          channel,
          action,
          origin,
          `option ${option.optionId} is not an ${a.approved ? 'approval' : 'denial'}`,
        );
        return;
      }
    } else {
      const once = a.approved ? 'allow_once' : 'reject_once';
      option =
        request.options.find((o) => o.kind === once) ??
        request.options.find((o) => confirmationKind(o.kind) === want);
      if (!option) {
        this.reject(
          channel,
          action,
          origin,
          `the agent offered no option to ${a.approved ? 'allow' : 'reject'} this`,
        );
        return;
      }
    }
    // The echo is the tool call leaving pending-confirmation (the mirror moves on Baton's update).
    const k = `${channel}\nconfirm:${a.toolCallId}`;
    this.echoes.set(k, origin);
    const subject = this.principal.subject;
    const r = await this.s.commands.command(key, mirror.sessionId, {
      type: 'permission.respond',
      requestId: request.requestId,
      optionId: option.optionId,
      ...(subject !== undefined ? { subject: subject.slice(0, 200) } : {}),
    });
    // Refused (answered meanwhile, say): rejected, unless the settling already went as its echo.
    if (r.status === 'failed' && this.echoes.get(k) === origin) {
      this.echoes.delete(k);
      this.reject(channel, action, origin, `${r.reason}: ${r.message}`);
    }
  }

  /**
   * A dispatched steering message, by Baton's decision on its prompt: admitted as a steer → the
   * echo (it is the chat's steeringMessage until the turn it steers ends); admitted as a turn of
   * its own (nothing was running) → rejected, the turn starts; queued → rejected, it is in
   * queuedMessages; refused → rejected with the refusal.
   */
  private answerSteering(
    channel: string,
    mirror: ChatMirror,
    action: ChatAction,
    origin: NonNullable<Envelope['origin']>,
    id: string,
    d: Decision,
  ): void {
    if (d.outcome === 'admitted' && d.mode === 'steer' && d.admissionGeneration !== undefined) {
      const s = mirror.ahp;
      if (s.activeTurn?.id === id || s.turns.some((t) => t.id === id)) {
        this.reject(channel, action, origin, `delivered, and carried on as turn ${id}`);
        return;
      }
      mirror.noteSteer(id, d.admissionGeneration);
      mirror.fold(action);
      this.send_(() => [{ channel, action, origin }]);
      return;
    }
    if (d.outcome === 'admitted') {
      this.reject(channel, action, origin, `nothing to steer: started as turn ${id}`);
      return;
    }
    if (d.outcome === 'queued') {
      this.reject(
        channel,
        action,
        origin,
        `queued (${d.reason ?? 'busy'}): the agent takes no steering now; it is in queuedMessages as ${id}`,
      );
      return;
    }
    this.reject(channel, action, origin, `${d.outcome}: ${d.message ?? d.reason ?? ''}`.trim());
  }

  /** A queued message Baton took: echoed and folded, unless its turn already started. */
  private echoQueued(
    channel: string,
    mirror: ChatMirror,
    action: ChatAction,
    origin: NonNullable<Envelope['origin']>,
    id: string,
  ): void {
    const s = mirror.ahp;
    if (s.activeTurn?.id === id || s.turns.some((t) => t.id === id)) {
      this.reject(channel, action, origin, `started as turn ${id}`);
      return;
    }
    mirror.fold(action);
    this.send_(() => [{ channel, action, origin }]);
  }
}

/** A dispatchAction's params carry root/configChanged on the root channel. */
function isRootConfig(params: unknown): boolean {
  const p = params as { channel?: unknown; action?: { type?: unknown } } | null | undefined;
  return p?.channel === AHP_ROOT && p.action?.type === 'root/configChanged';
}

/**
 * Why a client-dispatchable session action is refused: Baton's session (a task) has no client
 * tools, customizations, read or archive flags a client could set.
 */
function sessionActionRefusal(type: string): string {
  switch (type) {
    case 'session/activeClientSet':
    case 'session/activeClientRemoved':
      return 'Baton runs agents with their own tools: client tools and customizations are not offered to them (activeClients stays empty)';
    case 'session/isReadChanged':
    case 'session/isArchivedChanged':
      return `${type} is not supported by this host (archive a task with Baton's own API)`;
    default:
      return `${type.slice(0, 200)} is not supported on a session channel by this host`;
  }
}

/** Baton's decision on a dispatched prompt (PromptOutcome, read loosely). */
interface Decision {
  outcome: string;
  message?: string;
  reason?: string;
  mode?: string;
  admissionGeneration?: number;
}

/** Large values serialized once and shared by every message that carries them (a prompt's text). */
const shared = (key: string) => key === 'message';

/** What a reconnect continues a channel from. */
interface Restored {
  state: ChatState | SessionState;
  knowledge?: string;
}

/** Above this, a message's text is left out of the snapshot a replay window keeps. */
const ELIDE_TEXT = 4_096;

/**
 * The snapshot a client was given, as its replay window keeps it: large message texts left out
 * (a window is written per subscription; the texts are Baton's prompts). A reconnect that
 * rebuilds from it differs from the client only in those texts, and the only thing the host
 * compares texts for is the queue: it re-sends such a queued message whole (an upsert of what
 * the client has), never anything the client does not have.
 */
function snapshotRecord(fromSeq: number, state: unknown): string {
  return JSON.stringify({ fromSeq, state }, (key, v: unknown) =>
    key === 'message' &&
    typeof v === 'object' &&
    v !== null &&
    typeof (v as Message).text === 'string' &&
    (v as Message).text.length > ELIDE_TEXT
      ? { ...(v as Message), text: '' }
      : v,
  );
}

const toBuffer = (parts: (string | Buffer)[]): Buffer =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
const FRAME_HEAD = Buffer.from('{"jsonrpc":"2.0","method":"action","params":');
const FRAME_TAIL = Buffer.from('}');

/**
 * The state a client has of `channel`: the snapshot it was given with every action it was sent on
 * the channel since folded in (rejected ones are not applied), through AHP's reducers.
 */
function rebuild(
  channel: string,
  states: Record<string, string>,
  all: readonly Envelope[],
): Restored | undefined {
  const raw = states[channel];
  if (!raw) return undefined;
  const snap = JSON.parse(raw) as { fromSeq: number; state: ChatState | SessionState };
  const isSession = parseSessionUri(channel) !== null;
  let state = snap.state;
  for (const e of all) {
    if (e.channel !== channel || e.serverSeq <= snap.fromSeq || e.rejectionReason !== undefined) {
      continue;
    }
    state = isSession
      ? sessionReducer(state as SessionState, e.action)
      : chatReducer(state as ChatState, e.action);
  }
  const knowledge = states[`${channel}#k`];
  return { state, ...(knowledge ? { knowledge } : {}) };
}

/** Which dispatched action an action the host sends answers (its echo), by channel and id. */
function echoKeyOf(channel: string, a: ChatAction): string | undefined {
  switch (a.type) {
    case 'chat/turnStarted':
      return `${channel}\nturn:${String(a.turnId)}`;
    case 'chat/turnComplete':
    case 'chat/turnCancelled':
    case 'chat/error':
      return `${channel}\ncancel:${String(a.turnId)}`;
    case 'chat/pendingMessageRemoved':
      return `${channel}\nremove:${String(a.id)}`;
    case 'chat/toolCallConfirmed':
      return `${channel}\nconfirm:${String(a.toolCallId)}`;
    default:
      return undefined;
  }
}

function rpcIdOf(v: unknown): JsonRpcId | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const id = (v as { id?: unknown }).id;
  return JsonRpcId.safeParse(id).success ? (id as JsonRpcId) : null;
}
