import {
  AHP_ROOT,
  AhpAuthenticateParams,
  AhpInitializeParams,
  AhpReconnectParams,
  BATON_META_KEY,
  chatReducer,
  negotiateAhpVersion,
  parseSessionUri,
  sessionReducer,
  type ChatState,
  type SessionState,
} from '@baton/ahp';
import { AuthError, allows, type Principal } from '../auth/auth';
import { NotFoundError } from '../tenancy';
import type { AhpConnection, Outgoing } from './ahp-connection';
import { channelLives, subscribe, unsubscribe, watchRoot, type Restored } from './channels';
import type { Envelope } from './host-log';
import { AUTH_RESOURCE, RpcError, params } from './rpc';
import { AHP_ERRORS } from '@baton/ahp';

/**
 * The AHP handshake: `initialize` (version negotiation, initial subscriptions), `reconnect`
 * (replay from the client's window, or snapshots) and the in-protocol `authenticate`.
 */

export const SERVER_INFO = { name: 'baton', version: '0.1.0' };

/**
 * initialize: version, then the initial subscriptions. Nothing of it stays when it fails: the
 * subscriptions it made are dropped and the connection is as before (a later initialize works).
 */
export async function initialize(conn: AhpConnection, raw: unknown): Promise<() => unknown> {
  if (conn.version || conn.handshaking) {
    throw new RpcError(AHP_ERRORS.InvalidRequest, 'already initialized', {
      code: 'invalid_message',
    });
  }
  const p = params(AhpInitializeParams, raw);
  const n = negotiateAhpVersion(p.protocolVersions);
  if (!n.ok) {
    if (n.code === AHP_ERRORS.UnsupportedProtocolVersion) {
      // The spec closes the connection after this error; let the reply go out first.
      setImmediate(() => conn.close(1008, 'unsupported protocol version'));
    }
    throw new RpcError(n.code, n.message, {
      code: 'invalid_message',
      ...(n.data as Record<string, unknown> | undefined),
    });
  }
  conn.handshaking = true;
  try {
    const seq = await conn.s.ahpLog.current();
    conn.seenSeq = Math.max(conn.seenSeq, seq);
    conn.clientId = p.clientId;
    // An unauthenticated client's window starts when it authenticates (it has no tenant yet).
    if (!conn.anonymous) await conn.s.ahpLog.begin(conn.principal.tenant, p.clientId, seq);
    const snapshots = await subscribeAll(conn, p.initialSubscriptions ?? [], true);
    conn.version = n.version;
    return () => ({
      protocolVersion: n.version,
      serverSeq: seq,
      serverInfo: SERVER_INFO,
      snapshots: snapshots.map((f) => f()),
      _meta: {
        [BATON_META_KEY]: {
          sessionChannel: 'ahp-session:/<taskId> (percent-encoded)',
          chatChannel: 'ahp-chat:/<taskId>/<sessionId> (each id percent-encoded)',
          ...(conn.anonymous
            ? { authenticate: { resource: AUTH_RESOURCE } }
            : { tenant: conn.principal.tenant }),
        },
      },
    });
  } catch (err) {
    dropAll(conn);
    conn.clientId = undefined;
    throw err;
  } finally {
    conn.handshaking = false;
  }
}

/**
 * reconnect, also as a connection's first message: the actions after `lastSeenServerSeq` when
 * the client's window is still held (by any gateway: it is in Redis) and has every channel it
 * names, snapshots when it is gone or lacks one, -32008 when the host does not know the client
 * (it falls back to initialize).
 */
export async function reconnect(conn: AhpConnection, raw: unknown): Promise<() => unknown> {
  if (conn.handshaking) {
    throw new RpcError(AHP_ERRORS.InvalidRequest, 'a handshake is under way', {
      code: 'invalid_message',
    });
  }
  const p = params(AhpReconnectParams, raw);
  conn.handshaking = true;
  try {
    const r = conn.anonymous
      ? ({ kind: 'unknown' } as const)
      : await conn.s.ahpLog.recover(conn.principal.tenant, p.clientId, p.lastSeenServerSeq);
    if (r.kind === 'unknown') {
      throw new RpcError(
        AHP_ERRORS.NotFound,
        `client ${p.clientId.slice(0, 200)} is not known here: initialize`,
        {
          code: 'not_found',
        },
      );
    }
    const seq = await conn.s.ahpLog.current();
    conn.seenSeq = Math.max(conn.seenSeq, seq);
    dropAll(conn);
    conn.clientId = p.clientId;
    const wanted = [...new Set(p.subscriptions)];
    // Each channel continues from what the client has: its snapshot with every action it was
    // sent on it folded in (the window holds both), and what that host knew.
    const restored: Record<string, Restored> = {};
    const stateless: string[] = [];
    if (r.kind === 'replay') {
      for (const c of wanted) {
        if (c === AHP_ROOT) continue;
        const st = rebuild(c, r.states, r.all);
        if (st) restored[c] = st;
        else stateless.push(c);
      }
    }
    // A live channel the window has no state of (the client re-initialized since it was given
    // it, on this socket or another) cannot be replayed: what the client holds of it is unknown
    // here. It is not `missing` either (clients drop those, and it lives): all get snapshots.
    let unknown = false;
    for (const c of stateless) if (!unknown) unknown = await channelLives(conn, c);
    if (r.kind === 'replay' && !unknown) {
      const resumable = wanted.filter((c) => c === AHP_ROOT || restored[c] !== undefined);
      const subscribed = await subscribeAll(conn, resumable, false, restored);
      const keep = new Set(
        resumable.filter((c) =>
          c === AHP_ROOT ? conn.root !== undefined || conn.rootPending : conn.chans.has(c),
        ),
      );
      // The reply carries all the client missed (the spec's MUST): what it was sent while away,
      // then what changed on each channel that it was never sent (it was not connected), as
      // envelopes numbered and recorded like any other.
      await settled(conn, wanted);
      const caughtUp: Outgoing[] = [];
      for (const c of wanted) {
        const sub = conn.chans.get(c);
        const moved = sub?.catchUp?.() ?? [];
        if (sub?.kind === 'chat') caughtUp.push(...conn.chatItems(c, sub.mirror, moved));
        else caughtUp.push(...moved.map((action) => ({ channel: c, action })));
      }
      const actions = [
        ...r.envelopes.filter((e) => keep.has(e.channel)),
        ...(await conn.sequenceForReply(caughtUp)),
      ];
      // Only what cannot be resumed: gone (deleted) or no longer the client's to read.
      const missing = wanted.filter((c) => !keep.has(c));
      conn.version ??= '1.0.0';
      return () => {
        for (const f of subscribed) f();
        return { type: 'replay', actions, missing };
      };
    }
    await conn.s.ahpLog.begin(conn.principal.tenant, p.clientId, seq);
    const snapshots = await subscribeAll(conn, wanted, false);
    conn.version ??= '1.0.0';
    return () => ({ type: 'snapshot', snapshots: snapshots.map((f) => f()) });
  } catch (err) {
    if (!conn.version) dropAll(conn);
    throw err;
  } finally {
    conn.handshaking = false;
  }
}

/** How long a reconnect waits at most for its chats' turns to be read from the transcript. */
const SETTLE_MS = 2_000;
const SETTLE_STEP_MS = 50;

/**
 * Waits (a bounded while) until no restored chat waits for the transcript: a turn that started or
 * ended while the client was away is then in its catch-up whole, not sent after the reply.
 */
async function settled(conn: AhpConnection, channels: readonly string[]): Promise<void> {
  const waiting = () =>
    channels.some((c) => {
      const sub = conn.chans.get(c);
      return sub?.kind === 'chat' && sub.catchUp !== undefined && sub.mirror.waitingForTranscript;
    });
  for (let waited = 0; waiting() && waited < SETTLE_MS; waited += SETTLE_STEP_MS) {
    await new Promise((r) => setTimeout(r, SETTLE_STEP_MS));
  }
}

/**
 * AHP's in-protocol `authenticate`, for clients that cannot put a token on the upgrade: a Baton
 * client token for the gateway's resource gives the connection its tenant and scopes (and its
 * expiry). A connection may authenticate again to renew its token, for the same tenant only.
 */
export async function authenticate(conn: AhpConnection, raw: unknown): Promise<() => unknown> {
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
    principal = await conn.auth.verify(p.token);
  } catch (err) {
    if (!(err instanceof AuthError)) throw err;
    throw new RpcError(AHP_ERRORS.AuthRequired, err.message, {
      code: 'unauthorized',
      resource: AUTH_RESOURCE,
    });
  }
  if (!conn.anonymous) {
    if (principal.tenant !== conn.principal.tenant) {
      throw new RpcError(AHP_ERRORS.PermissionDenied, 'a connection keeps its tenant', {
        code: 'forbidden',
      });
    }
    conn.reauthenticate(principal);
    return () => ({});
  }
  // The connection now counts against its tenant's connections on this gateway.
  if (!conn.s.limits.openConnection(principal.tenant)) {
    throw new RpcError(
      AHP_ERRORS.TooManySubscriptions,
      `the tenant holds ${conn.s.limits.maxConnections} connections on this gateway ` +
        '(GATEWAY_MAX_CONNECTIONS_PER_TENANT); close one first',
      { code: 'too_many_connections' },
    );
  }
  conn.place = principal.tenant;
  conn.anonymous = false;
  clearTimeout(conn.authTimer);
  conn.reauthenticate(principal);
  if (conn.version && conn.clientId) {
    await conn.s.ahpLog.begin(principal.tenant, conn.clientId, await conn.s.ahpLog.current());
  }
  if (conn.rootPending && allows(principal, 'read')) await watchRoot(conn);
  return () => ({});
}

/**
 * Subscribes to each channel; channels that do not exist (or are another tenant's) are left
 * out. Any other failure undoes them all.
 */
export async function subscribeAll(
  conn: AhpConnection,
  channels: readonly string[],
  strict: boolean,
  restored?: Record<string, Restored>,
): Promise<(() => { resource: string; state: unknown; fromSeq: number })[]> {
  const out: (() => { resource: string; state: unknown; fromSeq: number })[] = [];
  for (const channel of channels) {
    try {
      out.push(await conn.serial(() => subscribe(conn, channel, restored?.[channel])));
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

export function dropAll(conn: AhpConnection): void {
  for (const c of [...conn.chans.keys()]) unsubscribe(conn, c);
  unsubscribe(conn, AHP_ROOT);
}

/**
 * The state a client has of `channel`: the snapshot it was given with every action it was sent on
 * the channel since folded in (rejected ones are not applied), through AHP's reducers.
 */
export function rebuild(
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
