import { splitTaskKey, type TaskView, type Update } from '@baton/protocol';
import { backoffDelay } from '@baton/backoff';
import {
  decodeStoredUpdate,
  isUnavailableError,
  type EventStore,
  type UpdateStreamItem,
  type StreamTail,
} from '@baton/store';
import type { Logger } from '../logger';
import { clientUpdate } from '../tenancy';
import { ViewCache } from './view-cache';
import { WriteBatch } from './write-batch';

/** Past this size an update's frame goes to every socket as one shared Buffer, not a copy each. */
const SHARE_AT = 16 * 1024;

/**
 * One update as it travels to subscribers; its wire frame is serialized once for all of them.
 * `update` is as published, under the task key.
 */
export class UpdateFrame {
  private text: string | undefined;
  private size: number | undefined;
  private buffer: Buffer | undefined;
  /** The session the update is about; undefined for task-level updates. */
  readonly sessionId: string | undefined;
  constructor(readonly update: Update) {
    this.sessionId = 'sessionId' in update.data ? update.data.sessionId : undefined;
  }
  /**
   * The `update` server message as sent on /ws, serialized once for every subscriber (all of one
   * tenant: the task key names the tenant), under the client's task id. A string, not a Buffer:
   * ws frames a small string into one write, a Buffer into two (writev).
   */
  get wire(): string {
    return (this.text ??= `{"v":1,"type":"update","update":${JSON.stringify(clientUpdate(this.update))}}`);
  }

  /** The wire frame's size in bytes (what it adds to a socket's buffer). */
  get bytes(): number {
    return (this.size ??= Buffer.byteLength(this.wire));
  }

  /** What a /ws socket is given: the string, or past SHARE_AT one Buffer for every socket. */
  get payload(): string | Buffer {
    if (this.bytes < SHARE_AT) return this.wire;
    return (this.buffer ??= Buffer.from(this.wire));
  }
}

export type UpdateListener = (frame: UpdateFrame) => void;
/** A listener that is an object: held as itself, with no function made for it. */
export interface UpdateFollower {
  offer(frame: UpdateFrame): void;
  /** What the follower was sent may no longer be the task's history: start again from its view. */
  rewritten(): void;
}

type XEntry = [string, string[]];

function field(fields: string[], name: string): string | undefined {
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

/** How far back a resume may look in a shard's update stream before it settles for a snapshot. */
const MAX_SCAN = 50_000;
/** The first page of that look back, in entries; each next one is four times larger. */
const FIRST_PAGE = 8;

/** The hub answers nothing until its tail follows every shard: a client retries, as for Redis. */
class HubNotStarted extends Error {
  override readonly name = 'HubNotStarted';
  constructor() {
    // Worded as the store's own unavailability, so every surface answers `unavailable`.
    super('Connection is closed: the update tail waits for Redis');
  }
}

export function emptyView(taskId: string): TaskView {
  return {
    taskId,
    seq: 0,
    status: 'active',
    activity: { foregroundActivity: null, activeSubagentCount: 0 },
    sessions: [],
  };
}

/**
 * The gateway's one tail over the update streams of every shard, fanned out to listeners by task.
 * Tailing all shards keeps a subscription's start simple and race-free: the tail covers every
 * update published after the gateway started, whatever its clients watch.
 */
export class UpdateHub {
  private readonly listeners = new Map<string, Set<UpdateListener | UpdateFollower>>();
  /**
   * The last seq seen of each followed task. A task's seqs only grow (the owner writes each once,
   * with the seq Redis keeps, in one call), so one that does not was published again after Redis
   * lost writes: what followers were sent is no longer the task's history.
   */
  private readonly seen = new Map<string, number>();
  private readonly tenantListeners = new Map<string, Set<UpdateListener>>();
  private tail: StreamTail<UpdateStreamItem> | undefined;
  /** Corks the sockets of subscribers while one batch from the tail is fanned out. */
  readonly writes = new WriteBatch();
  private loop: Promise<void> | undefined;
  private starting: Promise<void> | undefined;
  private stopped = false;

  /** Task views by version, serialized once, shared by every subscriber and REST read. */
  readonly views: ViewCache;
  /** Reads of a view under way, by task and version: concurrent subscribers wait for one. */
  private readonly loading = new Map<string, Promise<TaskView>>();

  constructor(
    private readonly store: EventStore,
    private readonly log: Logger,
    viewCacheBytes = 0,
    cacheIdleMs = 0,
  ) {
    this.views = new ViewCache(viewCacheBytes, cacheIdleMs);
  }

  /**
   * Starts following every shard from its current end. Reading where each shard ends needs
   * Redis: while Redis does not answer, this retries (backoff) and the hub serves nothing —
   * {@link view} and the rest answer `unavailable`, /readyz says not ready — so a gateway started
   * during an outage waits for Redis instead of exiting, and no subscription can read a snapshot
   * before the tail is placed (it would miss what happened in between).
   */
  start(): void {
    this.starting ??= this.place();
  }

  /** Whether the tail follows every shard: the hub can serve. */
  get started(): boolean {
    return this.tail !== undefined;
  }

  private async place(): Promise<void> {
    const shards = Array.from({ length: this.store.keys.shards }, (_, s) => s);
    let lasts: string[] | undefined;
    for (let attempt = 0; lasts === undefined; attempt++) {
      if (this.stopped) return;
      try {
        lasts = await Promise.all(
          shards.map(
            async (s) =>
              (
                (await this.store.redis.xrevrange(
                  this.store.keys.updates(s),
                  '+',
                  '-',
                  'COUNT',
                  1,
                )) as XEntry[]
              )[0]?.[0] ?? '0-0',
          ),
        );
      } catch (err) {
        // The outage itself is logged once by the store's availability watch.
        if (!isUnavailableError(err)) this.log.error({ err }, 'update tail: reading shard ends');
        await new Promise((r) => setTimeout(r, backoffDelay(attempt, { maxMs: 2_000 })));
      }
    }
    if (this.stopped) return;
    const from: Record<number, string> = {};
    shards.forEach((s, i) => (from[s] = lasts[i]!));
    const tail = this.store.tailUpdates(shards, from);
    this.tail = tail;
    this.loop = (async () => {
      for await (const batch of tail) {
        this.writes.run(() => {
          for (const item of batch) {
            if ('update' in item) this.dispatch(new UpdateFrame(item.update));
            else {
              // The owner's notice: its next update is the first of the new history.
              this.seen.delete(item.rewritten.taskId);
              this.rewritten(item.rewritten.taskId);
            }
          }
        });
      }
    })().catch((err: unknown) => this.log.error({ err }, 'update tail stopped'));
  }

  /** Refuses to serve before the tail is placed, as the store does while Redis is away. */
  private serving(): void {
    if (this.tail === undefined) throw new HubNotStarted();
  }

  private rewritten(taskId: string): void {
    this.log.warn({ taskId }, "the task's published history was rewritten; subscribers resync");
    this.views.forget(taskId);
    for (const l of this.listeners.get(taskId) ?? []) {
      if (typeof l === 'function') continue;
      try {
        l.rewritten();
      } catch (err) {
        this.log.error({ err, taskId }, 'update listener failed');
      }
    }
  }

  private dispatch(frame: UpdateFrame) {
    if (this.tenantListeners.size > 0) {
      const tenant = splitTaskKey(frame.update.taskId)?.tenant;
      for (const fn of (tenant !== undefined && this.tenantListeners.get(tenant)) || []) {
        try {
          fn(frame);
        } catch (err) {
          this.log.error({ err, taskId: frame.update.taskId }, 'update listener failed');
        }
      }
    }
    const set = this.listeners.get(frame.update.taskId);
    if (!set) return;
    const { taskId, seq } = frame.update;
    const before = this.seen.get(taskId);
    this.seen.set(taskId, seq);
    if (before !== undefined && seq <= before) this.rewritten(taskId);
    for (const l of set) {
      try {
        if (typeof l === 'function') l(frame);
        else l.offer(frame);
      } catch (err) {
        this.log.error({ err, taskId: frame.update.taskId }, 'update listener failed');
      }
    }
  }

  /** Calls `fn` with every update of `taskId` from now on; returns the way to stop. */
  listen(taskId: string, fn: UpdateListener): () => void {
    this.follow(taskId, fn);
    return () => this.unfollow(taskId, fn);
  }

  /**
   * {@link listen} for a listener that is an object (a /ws subscription): it is offered every
   * update of `taskId` until {@link unfollow}. An idle connection holds nothing more for it.
   */
  follow(taskId: string, l: UpdateListener | UpdateFollower): void {
    let set = this.listeners.get(taskId);
    if (!set) this.listeners.set(taskId, (set = new Set()));
    set.add(l);
  }

  unfollow(taskId: string, l: UpdateListener | UpdateFollower): void {
    const set = this.listeners.get(taskId);
    if (!set) return;
    set.delete(l);
    if (set.size === 0) {
      this.listeners.delete(taskId);
      this.seen.delete(taskId);
    }
  }

  /** Calls `fn` with every update of every task of `tenant` from now on (the AHP root channel). */
  listenTenant(tenant: string, fn: UpdateListener): () => void {
    let set = this.tenantListeners.get(tenant);
    if (!set) this.tenantListeners.set(tenant, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0 && this.tenantListeners.get(tenant) === set) {
        this.tenantListeners.delete(tenant);
      }
    };
  }

  get listenerCount(): number {
    let n = 0;
    for (const s of this.listeners.values()) n += s.size;
    return n;
  }

  /**
   * The task's current view. With the cache, one small read (the stored view's seq) tells
   * whether the version at hand is current; a new version is read and parsed once however many
   * ask for it at the same time. With `maxAgeMs`, a cached view that was current at most that
   * long ago is good enough (a subscription fills in the updates after it from the update
   * stream): a task that changes all the time is then read at most once per `maxAgeMs`. The
   * view returned is shared: never modify it.
   */
  async view(taskId: string, maxAgeMs = 0): Promise<TaskView> {
    this.serving();
    if (!this.views.enabled) return (await this.store.views.read(taskId)) ?? emptyView(taskId);
    if (maxAgeMs > 0) {
      const recent = this.views.recent(taskId, maxAgeMs);
      if (recent) return recent;
    }
    // The stored view is written with the updates it reflects, so the last published seq is its
    // version (commit-6.lua); between the chunks of a long catch-up it may run ahead of the view,
    // which then reads as a miss until the chunk that carries the view.
    const shard = this.store.shardOf(taskId);
    const raw = await this.store.redis.hget(this.store.keys.updateSeqs(shard), taskId);
    if (raw === null) return (await this.store.views.read(taskId)) ?? emptyView(taskId);
    const seq = Number(raw);
    const hit = this.views.get(taskId, seq);
    if (hit) return hit;
    const key = `${seq}\u0000${taskId}`;
    let p = this.loading.get(key);
    if (!p) {
      p = this.store.views
        .read(taskId)
        .then((v) => (v ? this.views.put(v) : emptyView(taskId)))
        .finally(() => this.loading.delete(key));
      this.loading.set(key, p);
    }
    return p;
  }

  /** The view with one session only, built once per version and session. */
  session(view: TaskView, sessionId: string): TaskView {
    return this.views.session(view, sessionId);
  }

  /** The /ws `snapshot` message of a view this hub handed out, serialized once per version. */
  snapshotFrame(view: TaskView, resync: boolean): Buffer {
    return this.views.snapshotFrame(view, resync);
  }

  lastSeq(taskId: string): Promise<number> {
    this.serving();
    return this.store.lastUpdateSeq(taskId);
  }

  /**
   * Every retained update of `taskId` after `afterSeq`, ascending and gapless — or null when the
   * first of them (`afterSeq + 1`) is no longer in the shard's update stream. The per-task seq has
   * no gaps, so finding `afterSeq + 1` while scanning back from the end proves nothing is missing.
   */
  async missed(taskId: string, afterSeq: number): Promise<Update[] | null> {
    this.serving();
    const key = this.store.keys.updates(this.store.shardOf(taskId));
    const found: Update[] = [];
    let end = '+';
    let scanned = 0;
    // Pages start small and grow: a client that missed a few updates reads a few entries, not
    // hundreds (an entry may be large: a session.queue update carries the whole queue).
    let page = FIRST_PAGE;
    while (scanned < MAX_SCAN) {
      const raw = (await this.store.redis.xrevrange(key, end, '-', 'COUNT', page)) as XEntry[];
      if (raw.length === 0) return null;
      for (const [, fields] of raw) {
        if (field(fields, 't') !== taskId) continue;
        const seq = Number(field(fields, 's'));
        if (seq <= afterSeq) return null;
        const r = decodeStoredUpdate(field(fields, 'u'));
        if (!r.ok || r.value.seq !== seq) return null;
        found.push(r.value);
        if (seq === afterSeq + 1) {
          found.reverse();
          // Approximate trimming removes whole head nodes, so what is retained is a suffix;
          // check anyway rather than hand a client a silent gap.
          for (let i = 0; i < found.length; i++)
            if (found[i]!.seq !== afterSeq + 1 + i) return null;
          return found;
        }
      }
      scanned += raw.length;
      end = `(${raw[raw.length - 1]![0]}`;
      page = Math.min(page * 4, 1_000);
    }
    return null;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.starting;
    await this.tail?.close();
    await this.loop;
    this.listeners.clear();
  }
}
