// A small real WebSocket server that speaks Baton's client wire protocol for the cases the
// client's tests need. Behind it sits libs/activity's in-memory owner, so views, updates and
// decisions are the domain's own; the gateway's Redis and fan-out are what it leaves out.
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import {
  ClientMessage,
  SCHEMA_VERSION,
  type ServerMessage,
  type TaskView,
  type Update,
  type WireError,
} from '@baton/protocol';
import { taskView } from '@baton/activity';
import { Owner } from '@baton/testing';

export const TOKEN = 'good-token';

interface Conn {
  readonly ws: WebSocket;
  /** taskId → session filter (undefined = whole task). */
  readonly subs: Map<string, string | undefined>;
  muted: boolean;
}

interface Upgrade {
  readonly url: string;
  readonly authorization: string | undefined;
}

export class WireServer {
  readonly received: Array<Record<string, unknown>> = [];
  readonly owners = new Map<string, Owner>();
  private readonly conns = new Set<Conn>();
  /** Oldest seq still retained per task; older resumes get a resync snapshot. */
  readonly retainedFrom = new Map<string, number>();
  /** Prompt replies say `pending`; the decision goes out later as an update. */
  holdDecisions = false;
  /** Prompts are recorded but never answered (the connection will drop before the reply). */
  swallowPrompts = false;
  /** The next this-many requests are refused with rate_limited. */
  rateLimitNext = 0;
  /** New connections neither answer nor send (a dead path, for the heartbeat). */
  muteNewConnections = false;
  private published = new Map<string, number>();
  private heldPrompts: Array<{ conn: Conn; taskId: string; sessionId: string; key: string }> = [];

  private constructor(
    private readonly wss: WebSocketServer,
    readonly url: string,
    /** Every upgrade attempt, accepted or not. */
    readonly upgrades: Upgrade[],
  ) {
    wss.on('connection', (ws) => {
      const conn: Conn = { ws, subs: new Map(), muted: this.muteNewConnections };
      this.conns.add(conn);
      ws.on('close', () => this.conns.delete(conn));
      ws.on('message', (data) => this.onMessage(conn, String(data)));
    });
  }

  static async start(): Promise<WireServer> {
    const upgrades: Upgrade[] = [];
    const wss = new WebSocketServer({
      port: 0,
      host: '127.0.0.1',
      verifyClient: (info, cb) => {
        upgrades.push({ url: info.req.url ?? '', authorization: info.req.headers.authorization });
        const url = new URL(info.req.url ?? '/', 'http://x');
        const token =
          url.searchParams.get('token') ??
          info.req.headers.authorization?.replace(/^Bearer /, '') ??
          null;
        if (token !== TOKEN) return cb(false, 401, 'bad token');
        cb(true);
      },
    });
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    const { port } = wss.address() as AddressInfo;
    return new WireServer(wss, `ws://127.0.0.1:${port}/ws`, upgrades);
  }

  get connections(): number {
    return this.conns.size;
  }

  owner(taskId: string): Owner {
    let o = this.owners.get(taskId);
    if (!o) this.owners.set(taskId, (o = new Owner(taskId)));
    return o;
  }

  view(taskId: string): TaskView {
    return JSON.parse(JSON.stringify(taskView(this.owner(taskId).state))) as TaskView;
  }

  /** Drives the task's owner, then publishes the updates it folded to subscribers. */
  act(taskId: string, fn: (o: Owner) => void): void {
    fn(this.owner(taskId));
    this.publish(taskId);
  }

  /** Sends a raw update to every subscriber (for out-of-order and gap cases). */
  sendUpdate(update: Update): void {
    for (const c of this.conns)
      if (c.subs.has(update.taskId)) this.send(c, { v: 1, type: 'update', update });
  }

  /** Closes every connection with a close frame. */
  closeAll(code: number, reason: string): void {
    for (const c of this.conns) c.ws.close(code, reason);
  }

  /** Drops every connection without a closing handshake, as a crashed gateway would. */
  terminateAll(): void {
    for (const c of this.conns) c.ws.terminate();
  }

  /** Answers held prompts with their decisions, as updates on the connection that prompted. */
  releaseDecisions(): void {
    this.holdDecisions = false;
    const held = this.heldPrompts;
    this.heldPrompts = [];
    for (const h of held) {
      this.publish(h.taskId);
      const u = this.decisionUpdate(h.taskId, h.sessionId, h.key);
      if (u && !h.conn.subs.has(h.taskId))
        this.send(h.conn, { v: 1, type: 'update', update: { ...u, last: true } });
    }
  }

  async close(): Promise<void> {
    for (const c of this.conns) c.ws.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }

  private publish(taskId: string): void {
    const o = this.owner(taskId);
    const from = this.published.get(taskId) ?? 0;
    const fresh = o.updates.slice(from);
    for (const c of this.conns) {
      if (!c.subs.has(taskId)) continue;
      for (const u of visibleTo(fresh, c.subs.get(taskId)))
        this.send(c, { v: 1, type: 'update', update: u });
    }
    this.published.set(taskId, o.updates.length);
  }

  private send(c: Conn, m: ServerMessage): void {
    if (!c.muted) c.ws.send(JSON.stringify(m));
  }

  private reply(c: Conn, id: string, result: unknown): void {
    this.send(c, { v: SCHEMA_VERSION, type: 'reply', id, ok: true, result });
  }

  private fail(c: Conn, id: string, error: WireError): void {
    this.send(c, { v: SCHEMA_VERSION, type: 'reply', id, ok: false, error });
  }

  private onMessage(c: Conn, text: string): void {
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return this.send(c, {
        v: 1,
        type: 'error',
        error: { code: 'invalid_message', message: 'not JSON' },
      });
    }
    this.received.push(json);
    if (c.muted) return;
    const parsed = ClientMessage.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const id = typeof json.id === 'string' ? json.id : null;
      const error: WireError = {
        code: 'invalid_message',
        message: issue.message,
        path: issue.path.join('.'),
      };
      return id ? this.fail(c, id, error) : this.send(c, { v: 1, type: 'error', error });
    }
    const m = parsed.data;
    if (this.rateLimitNext > 0) {
      this.rateLimitNext--;
      return this.fail(c, m.id, { code: 'rate_limited', message: 'slow down' });
    }
    switch (m.op) {
      case 'ping':
        return this.reply(c, m.id, { pong: true });
      case 'subscribe':
        return this.subscribe(c, m.id, m.taskId, m.sessionId, m.afterSeq);
      case 'unsubscribe':
        c.subs.delete(m.taskId);
        return this.reply(c, m.id, { taskId: m.taskId, subscribed: false });
      case 'prompt': {
        if (m.taskId === 'forbidden')
          return this.fail(c, m.id, { code: 'forbidden', message: 'not your tenant' });
        if (this.swallowPrompts) return;
        const o = this.owner(m.taskId);
        o.command(m.sessionId, 'prompt.submit', {
          promptId: `p-${o.entries.length}`,
          idempotencyKey: m.idempotencyKey,
          text: m.text,
          origin: m.origin,
        });
        const held = this.holdDecisions;
        // Publish to subscribers first: the decision is in the stream before the reply.
        if (!held) this.publish(m.taskId);
        const u = this.decisionUpdate(m.taskId, m.sessionId, m.idempotencyKey);
        if (held || !u) {
          this.heldPrompts.push({
            conn: c,
            taskId: m.taskId,
            sessionId: m.sessionId,
            key: m.idempotencyKey,
          });
          return this.reply(c, m.id, {
            status: 'pending',
            taskId: m.taskId,
            sessionId: m.sessionId,
            idempotencyKey: m.idempotencyKey,
          });
        }
        return this.reply(c, m.id, { status: 'decided', taskId: m.taskId, ...u.data });
      }
      case 'queue.list': {
        const s = this.view(m.taskId).sessions.find((x) => x.sessionId === m.sessionId);
        if (!s) return this.fail(c, m.id, { code: 'not_found', message: 'no such session' });
        return this.reply(c, m.id, { taskId: m.taskId, ...s.queue, sessionId: m.sessionId });
      }
      case 'queue.cancel':
      case 'queue.send_now':
      case 'queue.auto_run':
      case 'session.cancel': {
        const o = this.owner(m.taskId);
        const type = m.op === 'queue.auto_run' ? 'queue.set_auto_run' : (m.op as 'queue.cancel');
        const data =
          m.op === 'queue.auto_run'
            ? { enabled: m.enabled }
            : m.op === 'session.cancel'
              ? {}
              : { promptId: (m as { promptId: string }).promptId };
        const commandId = o.command(m.sessionId, type, data as { promptId: string });
        this.publish(m.taskId);
        const failed = o.updates.find(
          (u) => u.type === 'command.failed' && u.data.commandId === commandId,
        );
        return this.reply(
          c,
          m.id,
          failed && failed.type === 'command.failed'
            ? {
                status: 'failed',
                commandId,
                reason: failed.data.reason,
                message: failed.data.message,
              }
            : { status: 'done', commandId },
        );
      }
    }
  }

  private subscribe(c: Conn, id: string, taskId: string, sessionId?: string, afterSeq?: number) {
    const o = this.owner(taskId);
    this.publish(taskId);
    c.subs.set(taskId, sessionId);
    const seq = o.state.seq;
    const snapshot = (resync: boolean) => {
      const view = this.view(taskId);
      const task = sessionId
        ? { ...view, sessions: view.sessions.filter((s) => s.sessionId === sessionId) }
        : view;
      this.send(c, { v: 1, type: 'snapshot', resync, task });
    };
    const answerWithSnapshot = (mode: 'snapshot' | 'resync') => {
      snapshot(mode === 'resync');
      return this.reply(c, id, { taskId, mode, seq, ...(sessionId ? { sessionId } : {}) });
    };
    if (afterSeq === undefined) return answerWithSnapshot('snapshot');
    if (afterSeq + 1 < (this.retainedFrom.get(taskId) ?? 1)) return answerWithSnapshot('resync');
    for (const u of visibleTo(
      o.updates.filter((x) => x.seq > afterSeq),
      sessionId,
    ))
      this.send(c, { v: 1, type: 'update', update: u });
    this.reply(c, id, { taskId, mode: 'resumed', seq, ...(sessionId ? { sessionId } : {}) });
  }

  private decisionUpdate(taskId: string, sessionId: string, key: string) {
    const u = this.owner(taskId).updates.findLast(
      (x) =>
        x.type === 'prompt.decided' &&
        x.data.sessionId === sessionId &&
        x.data.idempotencyKey === key,
    );
    return u?.type === 'prompt.decided' ? u : undefined;
  }
}

function touches(u: Update, sessionId: string): boolean {
  return !('sessionId' in u.data) || u.data.sessionId === sessionId;
}

/**
 * What a subscription is sent of whole groups of updates: with a session filter, the updates of
 * that session and the task, the last one sent of each group marked `last` (as the gateway does).
 */
export function visibleTo(updates: readonly Update[], sessionId: string | undefined): Update[] {
  if (sessionId === undefined) return [...updates];
  const out: Update[] = [];
  updates.forEach((u, i) => {
    if (!touches(u, sessionId)) return;
    // The group's updates are consecutive and name one entry.
    const more = updates.slice(i + 1).some((x) => x.entry === u.entry && touches(x, sessionId));
    out.push(u.last === false && !more ? { ...u, last: true } : u);
  });
  return out;
}
