import { splitTaskKey, type TaskView, type Update } from '@baton/protocol';
import { backoffDelay } from '@baton/backoff';
import { decodeStoredUpdate, isUnavailableError, type EventStore } from '@baton/store';
import type { Logger } from '../logger';
import { ShardTails, type RawEntries } from './shard-tails';
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

/** A shard's tail could not be placed: its tasks answer `unavailable`, as for Redis. */
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

/** How long a shard nobody watches any more is still read: a client that comes back finds it. */
export const TAIL_LINGER_MS = 2_000;

/** A shard the hub reads, or is about to, for the tasks watched on it. */
interface Watch {
  /** Followed tasks of the shard, plus tenant-wide listeners (each needs every shard). */
  watchers: number;
  /** Its tail reads it: updates after the position read when it was placed reach the hub. */
  placed: boolean;
  /** The placement under way or last tried; rejected while its stream's end cannot be read. */
  ready: Promise<void>;
  trying: boolean;
  failing: boolean;
  retry: NodeJS.Timeout | undefined;
  attempts: number;
  linger: NodeJS.Timeout | undefined;
}

/**
 * The gateway's tail over the update streams of the shards its clients watch, fanned out to
 * listeners by task. A shard is read from the first watcher of one of its tasks (a /ws or AHP
 * subscription, a prompt waiting for its decision) until {@link TAIL_LINGER_MS} after the last
 * has gone; a tenant-wide listener (the AHP root channel) watches every shard, since a tenant's
 * tasks are spread over all of them. A subscription's start stays race-free: its view, last seq
 * and missed updates are read only once its shard's tail is placed, from the stream's end read
 * before them — every update after what it reads reaches the tail.
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
  private tenantListenerCount = 0;
  /** The shards watched, by shard. */
  private readonly watches = new Map<number, Watch>();
  private readonly tails: ShardTails;
  /** Corks the sockets of subscribers while one batch from the tail is fanned out. */
  readonly writes = new WriteBatch();
  private stopped = false;
  private begun = false;
  /** Updates decoded from the tails (each once, whoever watches its task). */
  decoded = 0;

  /** Task views by version, serialized once, shared by every subscriber and REST read. */
  readonly views: ViewCache;
  /** Reads of a view under way, by task and version: concurrent subscribers wait for one. */
  private readonly loading = new Map<string, Promise<TaskView>>();

  constructor(
    private readonly store: EventStore,
    private readonly log: Logger,
    viewCacheBytes = 0,
    cacheIdleMs = 0,
    private readonly lingerMs = TAIL_LINGER_MS,
  ) {
    this.views = new ViewCache(viewCacheBytes, cacheIdleMs);
    this.tails = new ShardTails(
      store.redis,
      (s) => store.keys.updates(s),
      (shard, entries) => this.read(shard, entries),
      store.tailBlockMs,
      log,
    );
  }

  /** Serves from now on: nothing is read until a client watches a task. */
  start(): void {
    this.begun = true;
  }

  /** Whether the hub serves (tails are placed as tasks are watched). */
  get started(): boolean {
    return this.begun && !this.stopped;
  }

  /** Whether `shard` is served: false while its watched stream's end cannot be read. */
  follows(shard: number): boolean {
    return this.started && this.watches.get(shard)?.failing !== true;
  }

  /** The shards read now (for tests and metrics). */
  get tailedShards(): number[] {
    return this.tails.shards.sort((a, b) => a - b);
  }

  /** XREADs sent by the tails (for metrics). */
  get tailReads(): number {
    return this.tails.reads;
  }

  private watch(shard: number): void {
    let w = this.watches.get(shard);
    if (!w) {
      w = {
        watchers: 0,
        placed: false,
        ready: Promise.resolve(),
        trying: false,
        failing: false,
        retry: undefined,
        attempts: 0,
        linger: undefined,
      };
      this.watches.set(shard, w);
    }
    w.watchers++;
    clearTimeout(w.linger);
    w.linger = undefined;
    if (!w.placed && !w.trying) this.place(shard, w);
  }

  private unwatch(shard: number): void {
    const w = this.watches.get(shard);
    if (!w || --w.watchers > 0) return;
    clearTimeout(w.retry);
    w.retry = undefined;
    if (this.stopped) return;
    w.linger = setTimeout(() => {
      if (this.watches.get(shard) !== w || w.watchers > 0) return;
      this.watches.delete(shard);
      this.tails.remove(shard);
      this.forgetShard(shard);
    }, this.lingerMs);
    w.linger.unref();
  }

  /** A shard no longer read: what was learnt from its tail of its tasks no longer holds. */
  private forgetShard(shard: number): void {
    for (const t of this.seen.keys()) if (this.store.shardOf(t) === shard) this.seen.delete(t);
  }

  /**
   * Reads where the shard's update stream ends and tails it from there. Until then, and while
   * that read fails, the shard's watched tasks are not served ({@link ready}); a failed read is
   * tried again while the shard is watched, and at once when a new watcher comes.
   */
  private place(shard: number, w: Watch): void {
    clearTimeout(w.retry);
    w.retry = undefined;
    w.trying = true;
    const attempt = (async () => {
      const last = (await this.store.redis.xrevrange(
        this.store.keys.updates(shard),
        '+',
        '-',
        'COUNT',
        1,
      )) as XEntry[];
      return last[0]?.[0] ?? '0-0';
    })();
    w.ready = attempt.then(
      (from) => {
        w.trying = false;
        if (this.watches.get(shard) !== w || this.stopped) return;
        w.placed = true;
        w.failing = false;
        w.attempts = 0;
        this.tails.add(shard, from);
      },
      (err: unknown) => {
        w.trying = false;
        w.failing = true;
        // The outage itself is logged once by the store's availability watch.
        if (!isUnavailableError(err)) {
          this.log.error({ err, shard }, 'update tail: reading the shard end');
        }
        if (this.watches.get(shard) === w && w.watchers > 0 && !this.stopped) {
          w.retry = setTimeout(
            () => w.watchers > 0 && !w.placed && !w.trying && this.place(shard, w),
            backoffDelay(w.attempts++, { maxMs: 2_000 }),
          );
          w.retry.unref();
        }
        throw isUnavailableError(err) ? err : new HubNotStarted();
      },
    );
    // Awaited by whoever reads for a watcher; a failure nobody awaits is not unhandled.
    w.ready.catch(() => undefined);
  }

  /**
   * Resolves once updates of `taskId` after this moment reach its watchers: at once for a task
   * not watched (nothing waits for its updates) or whose shard is read; else when the shard's
   * tail is placed. Rejects (`unavailable`) while the shard's stream cannot be read.
   */
  async ready(taskId: string): Promise<void> {
    if (!this.started) throw new HubNotStarted();
    const shard = this.store.shardOf(taskId);
    for (let tries = 0; ; tries++) {
      const w = this.watches.get(shard);
      if (!w || w.placed) return;
      const t0 = performance.now();
      try {
        await w.ready;
        return;
      } catch (err) {
        // A refusal that came at once (a Cluster client still learning its slots) is tried
        // again at once, twice; one that took the store's deadline (a master down) is the answer.
        if (tries >= 2 || performance.now() - t0 > 50 || w.watchers === 0) throw err;
        if (!w.trying && !w.placed) this.place(shard, w);
      }
    }
  }

  private read(shard: number, entries: RawEntries): void {
    this.writes.run(() => {
      for (const [id, fields] of entries) {
        if (field(fields, 'rw') !== undefined) {
          const taskId = field(fields, 't');
          if (taskId === undefined) continue;
          // The owner's notice: its next update is the first of the new history.
          this.seen.delete(taskId);
          this.rewritten(taskId);
          continue;
        }
        const r = decodeStoredUpdate(field(fields, 'u'));
        this.decoded++;
        if (r.ok) this.dispatch(new UpdateFrame(r.value));
        else this.log.warn({ shard, id, reason: r.reason }, 'update tail: an entry refused');
      }
    });
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
    if (!set) {
      if (this.views.enabled) this.views.advance(frame.update, () => frame.bytes);
      return;
    }
    const { taskId, seq } = frame.update;
    const before = this.seen.get(taskId);
    this.seen.set(taskId, seq);
    if (before !== undefined && seq <= before) this.rewritten(taskId);
    if (this.views.enabled) this.views.advance(frame.update, () => frame.bytes);
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
    if (!set) {
      this.listeners.set(taskId, (set = new Set()));
      this.watch(this.store.shardOf(taskId));
    }
    set.add(l);
  }

  unfollow(taskId: string, l: UpdateListener | UpdateFollower): void {
    const set = this.listeners.get(taskId);
    if (!set) return;
    set.delete(l);
    if (set.size === 0) {
      this.listeners.delete(taskId);
      this.seen.delete(taskId);
      this.unwatch(this.store.shardOf(taskId));
    }
  }

  /**
   * Calls `fn` with every update of every task of `tenant` from now on (the AHP root channel);
   * every shard is read meanwhile. See {@link everyShardReady}.
   */
  listenTenant(tenant: string, fn: UpdateListener): () => void {
    let set = this.tenantListeners.get(tenant);
    if (!set) this.tenantListeners.set(tenant, (set = new Set()));
    set.add(fn);
    if (this.tenantListenerCount++ === 0) {
      for (let s = 0; s < this.store.keys.shards; s++) this.watch(s);
    }
    let stopped = false;
    return () => {
      if (stopped) return;
      stopped = true;
      set.delete(fn);
      if (set.size === 0 && this.tenantListeners.get(tenant) === set) {
        this.tenantListeners.delete(tenant);
      }
      if (--this.tenantListenerCount === 0) {
        for (let s = 0; s < this.store.keys.shards; s++) this.unwatch(s);
      }
    };
  }

  /**
   * Resolves once every watched shard's tail is placed or has failed to be (a shard whose
   * master is lost is placed when it is back): a tenant-wide listener then misses nothing of the
   * shards that answer.
   */
  async everyShardReady(): Promise<void> {
    await Promise.allSettled([...this.watches.values()].map((w) => w.ready));
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
    await this.ready(taskId);
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

  async lastSeq(taskId: string): Promise<number> {
    await this.ready(taskId);
    return this.store.lastUpdateSeq(taskId);
  }

  /**
   * Every retained update of `taskId` after `afterSeq`, ascending and gapless — or null when the
   * first of them (`afterSeq + 1`) is no longer in the shard's update stream. The per-task seq has
   * no gaps, so finding `afterSeq + 1` while scanning back from the end proves nothing is missing.
   */
  async missed(taskId: string, afterSeq: number): Promise<Update[] | null> {
    await this.ready(taskId);
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
    for (const w of this.watches.values()) {
      clearTimeout(w.retry);
      clearTimeout(w.linger);
    }
    this.watches.clear();
    await this.tails.close();
    this.listeners.clear();
  }
}
