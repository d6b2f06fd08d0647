import {
  AHP_ERRORS,
  AHP_ROOT,
  ChatMirror,
  SessionMirror,
  parseChatUri,
  parseSessionUri,
  rootState,
  sessionSummary,
  sessionUri,
  type ChatAction,
  type ChatState,
  type Message,
  type SessionState,
} from '@baton/ahp';
import { randomBytes } from 'node:crypto';
import { endsGroup, type Update } from '@baton/protocol';
import type { StoredTranscriptEvent } from '@baton/store';
import { allows } from '../auth/auth';
import { Subscription } from '../subscriptions/subscription';
import { NotFoundError, clientTaskId } from '../tenancy';
import { jsonParts } from '../ws/shared-json';
import type { AhpConnection } from './ahp-connection';
import { PROTECTED_RESOURCE, RpcError, authRequired, notFound, requireRead, shared } from './rpc';

/**
 * The AHP host's channels: the root (the tenant's tasks as sessions), a session (a task's chat
 * catalog) and a chat (a Baton session), each a subscription kept in step with Baton's updates.
 */

export interface ChatSub {
  kind: 'chat';
  sub: Subscription;
  mirror: ChatMirror;
  stop: () => void;
  /** A restored channel (reconnect): takes what moved it since the client's state, so far. */
  catchUp?: () => ChatAction[];
}
export interface SessionSub {
  kind: 'session';
  mirror: SessionMirror;
  stop: () => void;
  catchUp?: () => ChatAction[];
}

/** What a root subscriber was told of each of its tenant's sessions (by task id): their status. */
export interface RootWatch {
  stop: () => void;
  known: Map<string, number | undefined>;
  /** Tasks to look at again, with the update seq their view must have reached. */
  pending: Map<string, number>;
  timer: NodeJS.Timeout | undefined;
}

/** What a reconnect continues a channel from. */
export interface Restored {
  state: ChatState | SessionState;
  knowledge?: string;
}

/** Above this, a message's text is left out of the snapshot a replay window keeps. */
export const ELIDE_TEXT = 4_096;

/** How soon a chat waiting for the transcript (a turn's prompt or end) looks again. */
const TRANSCRIPT_RECHECK_MS = 250;

/**
 * The snapshot a client was given, as its replay window keeps it: large message texts left out
 * (a window is written per subscription; the texts are Baton's prompts). A reconnect that
 * rebuilds from it differs from the client only in those texts, and the only thing the host
 * compares texts for is the queue: it re-sends such a queued message whole (an upsert of what
 * the client has), never anything the client does not have.
 */
export function snapshotRecord(fromSeq: number, state: unknown): string {
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

/** listSessions: the tenant's tasks as AHP session summaries, by task id, `cursor`-paginated. */
export async function listSessions(conn: AhpConnection, cursor: string | undefined, limit: number) {
  if (!allows(conn.principal, 'read')) {
    throw new RpcError(AHP_ERRORS.PermissionDenied, "the token's scope does not include read", {
      code: 'forbidden',
    });
  }
  let after: string | undefined;
  if (cursor !== undefined) {
    after = conn.cursors.get(cursor);
    // The spec's cursors are opaque and live as long as the connection that was given them; one
    // this connection was never given is refused (InvalidParams), not read as an empty page.
    if (after === undefined) {
      throw new RpcError(
        AHP_ERRORS.InvalidParams,
        'params.cursor: not a cursor this connection was given (list again without one)',
        { code: 'invalid_message', path: 'params.cursor' },
      );
    }
  }
  const all = await conn.s.tenancy.tasks(conn.principal.tenant);
  const from = after === undefined ? 0 : all.findIndex((t) => t > after);
  const page = from < 0 ? [] : all.slice(from, from + limit);
  const now = new Date().toISOString();
  const items = [];
  for (const taskId of page) {
    const view = await conn.s.hub.view(conn.s.tenancy.key(conn.principal.tenant, taskId));
    if (view.status === 'deleted') continue;
    items.push(sessionSummary(taskId, view, now));
  }
  const last = page.at(-1);
  const more = last !== undefined && from + limit < all.length;
  return { items, ...(more ? { nextCursor: issueCursor(conn, last) } : {}) };
}

/** How many cursors a connection keeps: a client pages through one listing at a time. */
const MAX_CURSORS = 64;

/** A new opaque cursor for the page after task `last`, valid on this connection. */
function issueCursor(conn: AhpConnection, last: string): string {
  const token = randomBytes(12).toString('base64url');
  conn.cursors.set(token, last);
  if (conn.cursors.size > MAX_CURSORS) conn.cursors.delete(conn.cursors.keys().next().value!);
  return token;
}

/**
 * Subscribes to a channel and returns the builder of its snapshot, to be called synchronously
 * as the reply carrying it is sent: until then changes only move the mirror, after it every
 * change is an action with a serverSeq above the snapshot's fromSeq. A channel that does not
 * exist is -32008 before anything is read or written.
 */
export async function subscribe(
  conn: AhpConnection,
  channel: string,
  restored?: Restored,
): Promise<() => { resource: string; state: unknown; fromSeq: number }> {
  if (channel === AHP_ROOT) {
    if (conn.anonymous) {
      // Only the agents, each naming what to authenticate for; the tenant's notifications
      // start once the client has authenticated.
      conn.rootPending = true;
      const base = rootState(conn.s.opts.profiles);
      const state = {
        agents: base.agents.map((a) => ({ ...a, protectedResources: [PROTECTED_RESOURCE] })),
      };
      return () => ({ resource: AHP_ROOT, state, fromSeq: conn.seenSeq });
    }
    requireRead(conn.principal);
    if (!conn.root) await watchRoot(conn);
    const state = rootState(conn.s.opts.profiles);
    return () => ({ resource: AHP_ROOT, state, fromSeq: conn.seenSeq });
  }
  if (conn.anonymous) throw authRequired();
  const sessionTask = parseSessionUri(channel);
  if (sessionTask !== null) {
    return subscribeSession(
      conn,
      channel,
      sessionTask,
      restored?.state as SessionState | undefined,
    );
  }
  const ref = parseChatUri(channel);
  if (!ref) throw notFound(channel);
  requireRead(conn.principal);
  // A snapshot is what its reply would carry: not while the client has not read what it has.
  if (conn.behind) {
    throw new RpcError(AHP_ERRORS.Unavailable, conn.behindMessage(), { code: 'unavailable' });
  }
  if (!conn.chans.has(channel) && conn.chans.size >= conn.s.opts.maxSubscriptions) {
    throw new RpcError(
      AHP_ERRORS.TooManySubscriptions,
      `a connection may hold ${conn.s.opts.maxSubscriptions} subscriptions; unsubscribe first`,
      { code: 'too_many_subscriptions' },
    );
  }
  // A chat of a task the tenant never wrote to is not found, whoever else has that task id;
  // subscribing never claims nor writes.
  const key = await conn.s.tenancy.existing(conn.principal.tenant, ref.taskId);
  const over = conn.tenantLimitMessage(channel);
  if (over) {
    throw new RpcError(AHP_ERRORS.TooManySubscriptions, over, {
      code: 'too_many_subscriptions',
    });
  }
  const view = await conn.s.hub.view(key);
  if (!view.sessions.some((x) => x.sessionId === ref.sessionId)) throw notFound(channel);
  unsubscribe(conn, channel);
  const mirror = new ChatMirror(ref.taskId, ref.sessionId, new Date().toISOString());
  if (restored) mirror.restore(restored.state as ChatState, restored.knowledge);
  let ready = false;
  /** A restored chat's client has the restored state: what moved it since is sent after the reply. */
  const held: ChatAction[] = [];
  let group: Update[] = [];
  const sub = new Subscription(
    key,
    ref.sessionId,
    conn.s.hub,
    {
      writable: (bytes) => conn.writable(bytes),
      snapshot: (v) => {
        const session = v.sessions.find((x) => x.sessionId === ref.sessionId);
        group = [];
        // Before the client has its snapshot, the mirror silently becomes the view; after,
        // the client is brought to it with AHP actions (reconcile, as AHP asks of hosts).
        out(mirror.sync(session, new Date().toISOString()));
        return true;
      },
      update: (frame) => {
        group.push(frame.update);
        if (!endsGroup(frame.update)) return;
        const updates = group;
        group = [];
        out(mirror.applyGroup(updates, new Date().toISOString()));
      },
    },
    {
      onResync: (reason) => conn.s.metrics.resyncs.inc({ reason }),
      onError: (err) => conn.s.log.warn({ err, channel }, 'AHP subscription catch-up failed'),
      onDelivered: () => conn.s.metrics.delivered++,
    },
  );
  const stopUpdates = conn.s.hub.listen(key, (frame) => sub.offer(frame));
  let stopTranscript: (() => void) | undefined;
  let recheck: NodeJS.Timeout | undefined;
  let gone = false;
  const stop = () => {
    gone = true;
    stopUpdates();
    stopTranscript?.();
    clearTimeout(recheck);
  };
  conn.chans.set(channel, {
    kind: 'chat',
    sub,
    mirror,
    stop,
    ...(restored ? { catchUp: () => held.splice(0) } : {}),
  });
  conn.subs.set(channel, sub);
  // The conversation is the session's transcript: a turn waits for it (see ChatMirror).
  mirror.followTranscript();
  const out = (actions: ChatAction[]) => {
    if (ready) conn.emit(channel, mirror, actions);
    else if (restored) held.push(...actions);
    if (mirror.waitingForTranscript && !recheck && !gone) {
      recheck = setTimeout(() => {
        recheck = undefined;
        if (!gone) out(mirror.recheck(new Date().toISOString()));
      }, TRANSCRIPT_RECHECK_MS);
      recheck.unref();
    }
  };
  try {
    await sub.start(undefined, () => undefined);
    // Listening before catching up: what is appended meanwhile waits, then goes after it
    // (the mirror takes each event once, by its stream id).
    let caught = false;
    const early: StoredTranscriptEvent[] = [];
    stopTranscript = await conn.s.ahpTranscripts.listen(key, (items) => {
      const mine = items.filter((e) => e.sessionId === ref.sessionId);
      if (!caught) early.push(...mine);
      else if (mine.length > 0) out(mirror.applyTranscript(mine, new Date().toISOString()));
    });
    if (gone) stopTranscript();
    await conn.s.ahpTranscripts.catchUp(key, ref.sessionId, (items) =>
      out(mirror.applyTranscript(items, new Date().toISOString())),
    );
    caught = true;
    if (early.length > 0) out(mirror.applyTranscript(early.splice(0), new Date().toISOString()));
    // Turns that ended before this subscription: in the snapshot, with their content.
    mirror.seedHistory(new Date().toISOString(), !restored);
    out(mirror.recheck(new Date().toISOString()));
  } catch (err) {
    unsubscribe(conn, channel);
    throw err;
  }
  if (restored) {
    // A reconnect: the client has the restored state; what changed since is the reply's
    // (catchUp), and what changes after that goes out as actions once the reply is out.
    return () => {
      ready = true;
      conn.emit(channel, mirror, held.splice(0));
      return { resource: channel, state: mirror.state(), fromSeq: conn.seenSeq };
    };
  }
  const bytes = jsonParts(mirror.state(), shared).reduce(
    (n, p) => n + (typeof p === 'string' ? Buffer.byteLength(p) : p.length),
    0,
  );
  if (!conn.writable(bytes)) {
    unsubscribe(conn, channel);
    throw new RpcError(AHP_ERRORS.Unavailable, conn.behindMessage(), { code: 'unavailable' });
  }
  return () => {
    ready = true;
    // The client's window starts from this state (a reconnect elsewhere continues from it).
    const fromSeq = conn.seenSeq;
    void conn.record([], 0, { [channel]: snapshotRecord(fromSeq, mirror.ahp) });
    return { resource: channel, state: mirror.state(), fromSeq };
  };
}

/**
 * Whether `channel` is a session or chat the connection may subscribe to now: the tenant's, not
 * deleted, readable. Nothing is subscribed, read into a mirror, or written.
 */
export async function channelLives(conn: AhpConnection, channel: string): Promise<boolean> {
  if (conn.anonymous || !allows(conn.principal, 'read')) return false;
  const sessionTask = parseSessionUri(channel);
  const ref = sessionTask === null ? parseChatUri(channel) : null;
  const taskId = sessionTask ?? ref?.taskId;
  if (taskId === undefined) return false;
  try {
    const view = await conn.s.hub.view(
      await conn.s.tenancy.existing(conn.principal.tenant, taskId),
    );
    if (ref) return view.sessions.some((x) => x.sessionId === ref.sessionId);
    return view.status !== 'deleted';
  } catch (err) {
    if (err instanceof NotFoundError) return false;
    throw err;
  }
}

export function unsubscribe(conn: AhpConnection, channel: string): void {
  if (channel === AHP_ROOT) {
    conn.rootPending = false;
    if (conn.root) {
      conn.root.stop();
      clearTimeout(conn.root.timer);
      conn.root = undefined;
    }
    return;
  }
  const c = conn.chans.get(channel);
  if (!c) return;
  conn.chans.delete(channel);
  if (c.kind === 'chat') {
    conn.releaseSubscription(c.sub);
    conn.subs.delete(channel);
  } else c.stop();
}

/**
 * An AHP session (a Baton task): its chat catalog, kept in step with Baton's sessions by
 * session/chatAdded, chatRemoved, chatUpdated and defaultChatChanged actions.
 */
export async function subscribeSession(
  conn: AhpConnection,
  channel: string,
  taskId: string,
  restored: SessionState | undefined,
): Promise<() => { resource: string; state: unknown; fromSeq: number }> {
  requireRead(conn.principal);
  const key = await conn.s.tenancy.existing(conn.principal.tenant, taskId);
  const view = await conn.s.hub.view(key);
  if (view.status === 'deleted') throw notFound(channel);
  unsubscribe(conn, channel);
  const mirror = new SessionMirror(taskId, view, new Date().toISOString(), restored);
  /** A restored session's client has the restored state: what moved it since is held for the reply. */
  const held: ChatAction[] = restored ? mirror.sync(view, new Date().toISOString()) : [];
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
        if (conn.chans.get(channel)?.kind !== 'session') return;
        const v = await conn.s.hub.view(key);
        const actions = mirror.sync(v, new Date().toISOString());
        if (ready) {
          if (actions.length > 0) conn.emitSession(channel, actions);
        } else if (restored) held.push(...actions);
        // The update can come before the view that has it is stored: look again shortly.
        if (v.seq < wantSeq && attempt < 100) {
          setTimeout(() => refresh(attempt + 1), 20).unref();
        }
      })
      .catch((err: unknown) => conn.s.log.warn({ err, channel }, 'AHP session refresh failed'));
  };
  const stop = conn.s.hub.listen(key, (frame) => {
    wantSeq = Math.max(wantSeq, frame.update.seq);
    if (endsGroup(frame.update)) refresh();
  });
  conn.chans.set(channel, {
    kind: 'session',
    mirror,
    stop,
    ...(restored ? { catchUp: () => held.splice(0) } : {}),
  });
  return () => {
    ready = true;
    const fromSeq = conn.seenSeq;
    if (held.length > 0) conn.emitSession(channel, held.splice(0));
    if (!restored) void conn.record([], 0, { [channel]: snapshotRecord(fromSeq, mirror.state) });
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
export async function watchRoot(conn: AhpConnection): Promise<void> {
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
    conn.send({ jsonrpc: '2.0', method, params: { channel: AHP_ROOT, ...params } });
  const flush = async () => {
    const ids = [...w.pending];
    w.pending.clear();
    let again = false;
    for (const [taskId, seq] of ids) {
      if (conn.root !== w) return;
      const view = await conn.s.hub.view(conn.s.tenancy.key(conn.principal.tenant, taskId));
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
          changes: { status: summary.status, modifiedAt: summary.modifiedAt },
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
        .catch((err: unknown) => conn.s.log.warn({ err }, 'AHP root notification failed'));
    }, 20);
  };
  // Listening before the tenant's list is read: a task that appears meanwhile is not missed.
  w.stop = conn.s.hub.listenTenant(conn.principal.tenant, (frame) => {
    const u = frame.update;
    if (!endsGroup(u) && u.type !== 'task.status') return;
    const t = clientTaskId(u.taskId);
    w.pending.set(t, Math.max(u.seq, w.pending.get(t) ?? 0));
    schedule();
  });
  conn.root = w;
  try {
    // Every shard's tail placed (or found unreachable) before the list: nothing falls between.
    await conn.s.hub.everyShardReady();
    for (const t of await conn.s.tenancy.tasks(conn.principal.tenant)) w.known.set(t, undefined);
  } catch (err) {
    unsubscribe(conn, AHP_ROOT);
    throw err;
  }
  loaded = true;
  if (w.pending.size > 0) schedule();
}
