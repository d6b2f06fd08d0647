import {
  compareIds,
  type FencedError,
  type EventStore,
  type FeedNote,
  type Lease,
} from '@baton/store';
import { tasksToEvict } from './eviction';
import type { Logger } from './logger';
import type { Metrics, ShardStats } from './metrics';
import { TaskOwner, type TaskContext } from './task-owner';

/** What a shard needs from the projector that owns it. */
export interface ShardHost {
  readonly store: EventStore;
  readonly instanceId: string;
  readonly metrics: Metrics;
  readonly log: Logger;
  readonly leaseTtlMs: number;
  readonly snapshotEntries: number;
  readonly snapshotMs: number;
  readonly retentionMs: number;
  readonly stallMs: number;
  readonly cancelGraceMs: number;
  readonly permissionTimeoutMs: number;
  readonly parkIdleMs: number;
  readonly quietMs: number;
  readonly executionStartMs: number;
  /** A task at rest and quiet this long is put away (its snapshot kept); 0: never. */
  readonly evictIdleMs: number;
  /**
   * Local monotonic time (performance.now()) since which this instance has reached Redis with
   * no gap longer than a shard lease: the end of its last outage, or its start.
   */
  reachableSince(): number;
  /** A round trip to Redis completed at `at` (performance.now()). */
  reached(at: number): void;
  nextWriterSeq(): number;
  limit<T>(fn: () => Promise<T>): Promise<T>;
  /** A write of this shard was fenced: the projector drops it. */
  lost(shard: number, err: FencedError): void;
}

/**
 * The tasks of one shard under one lease (one epoch). Created when the lease is acquired and
 * thrown away when it is lost or released: a later lease of the same shard starts afresh.
 */
export class ShardRunner implements TaskContext {
  readonly shard: number;
  readonly tasks = new Map<string, TaskOwner>();
  private current: Lease;
  private isActive = true;
  private readonly acquiredAt = performance.now();
  /** The feed's last note when the lease was taken: caught up once the tail passed it. */
  private endId: string | null = null;
  private feedDone = false;
  private listed = false;
  private running = 0;
  private caughtUp = false;
  private resolveReady!: () => void;
  /** Resolves once every task of the shard has been loaded and folded up to date. */
  readonly ready = new Promise<void>((r) => (this.resolveReady = r));
  private idleWaiters: (() => void)[] = [];
  private readonly toRegister: string[] = [];
  private registering = false;
  /** Live executions seen without a lease, by consecutive checks. */
  private readonly strikes = new Map<string, number>();

  constructor(
    lease: Lease,
    private readonly host: ShardHost,
  ) {
    this.shard = lease.shard;
    this.current = lease;
  }

  // TaskContext -----------------------------------------------------------------------------
  get store() {
    return this.host.store;
  }
  get instanceId() {
    return this.host.instanceId;
  }
  get metrics() {
    return this.host.metrics;
  }
  get log() {
    return this.host.log;
  }
  get snapshotEntries() {
    return this.host.snapshotEntries;
  }
  get snapshotMs() {
    return this.host.snapshotMs;
  }
  get retentionMs() {
    return this.host.retentionMs;
  }
  get stallMs() {
    return this.host.stallMs;
  }
  get cancelGraceMs() {
    return this.host.cancelGraceMs;
  }
  get quietMs() {
    return this.host.quietMs;
  }
  get permissionTimeoutMs() {
    return this.host.permissionTimeoutMs;
  }
  get parkIdleMs() {
    return this.host.parkIdleMs;
  }
  get executionStartMs() {
    return this.host.executionStartMs;
  }
  lease(): Lease {
    return this.current;
  }
  active(): boolean {
    return this.isActive;
  }
  nextWriterSeq(): number {
    return this.host.nextWriterSeq();
  }
  limit<T>(fn: () => Promise<T>): Promise<T> {
    return this.host.limit(fn);
  }
  fenced(err: FencedError): void {
    if (this.isActive) this.host.lost(this.shard, err);
  }
  busy(delta: 1 | -1): void {
    this.running += delta;
    if (this.running === 0) {
      for (const w of this.idleWaiters.splice(0)) w();
      this.checkCaughtUp();
    }
  }
  // -------------------------------------------------------------------------------------------

  renewed(lease: Lease): void {
    if (lease.epoch === this.current.epoch) this.current = lease;
  }

  /** Loads every task the shard is known to hold; the feed tail brings the rest. */
  async start(): Promise<void> {
    const [ids, endId] = await Promise.all([
      this.store.shardTasks.list(this.shard),
      this.store.feedLastId(this.shard),
    ]);
    if (!this.isActive) return;
    this.endId = endId;
    if (endId === '0-0') this.feedDone = true;
    for (const id of ids) if (!this.tasks.has(id)) this.task(id, false).request();
    this.listed = true;
    this.checkCaughtUp();
  }

  onNote(note: FeedNote): void {
    if (!this.isActive) return;
    this.task(note.taskId, true).noted(note.lastId);
    if (!this.feedDone && this.endId !== null && compareIds(note.id, this.endId) >= 0) {
      this.feedDone = true;
      this.checkCaughtUp();
    }
  }

  /** Clock-driven work of the renew tick: lapsed execution leases, the watchdog, snapshots. */
  async timers(): Promise<void> {
    if (!this.isActive) return;
    const now = performance.now();
    const expired = await this.store.executions.expiredLeases(this.shard);
    // Expiry is judged on time both sides could reach Redis: a lease lapsed by the server clock
    // counts only once this owner has held the shard and reached Redis for one full period of
    // that lease (its worker's renewals were cut off too during an outage). Lapsed by the
    // server's clock, waited out by this process's monotonic clock.
    const reached = performance.now();
    this.host.reached(reached);
    const since = Math.max(this.acquiredAt, this.host.reachableSince());
    for (const x of expired) {
      if (!this.isActive) return;
      if (reached - since < (x.ttlMs ?? this.host.leaseTtlMs)) continue;
      this.task(x.taskId, true).leaseExpired(x);
    }
    // A live execution with no lease at all is lost too (its worker writes the lease before it
    // reports the start). The live set is read before the leases, so a start folded here had its
    // lease written already; two checks in a row keep a worker's own drop-then-end from racing.
    if (now - since >= this.host.leaseTtlMs) {
      const live = [];
      for (const t of this.tasks.values()) {
        if (!t.behind()) for (const x of t.liveExecutions()) live.push({ t, x });
      }
      if (live.length > 0) {
        const held = new Set(
          (await this.store.executions.leases(this.shard)).map(
            (l) => `${l.taskId}\n${l.executionId}`,
          ),
        );
        const seen = new Set<string>();
        for (const { t, x } of live) {
          const key = `${x.taskId}\n${x.executionId}`;
          if (held.has(key)) continue;
          seen.add(key);
          const n = (this.strikes.get(key) ?? 0) + 1;
          this.strikes.set(key, n);
          if (n >= 2) {
            this.log.warn(
              { shard: this.shard, ...x },
              'live execution holds no lease: declaring it lost',
            );
            t.request({
              type: 'execution_lease_expired',
              sessionId: x.sessionId,
              executionId: x.executionId,
            });
          }
        }
        for (const k of this.strikes.keys()) if (!seen.has(k)) this.strikes.delete(k);
      } else this.strikes.clear();
    }
    for (const t of this.tasks.values()) t.tick(now);
    // Ticked first: a task with a timer to raise has just asked for a step, so it is not evicted.
    const quiet = tasksToEvict(this.tasks, now, this.host.evictIdleMs);
    for (const id of quiet) {
      this.tasks.get(id)!.putAway();
      this.tasks.delete(id);
    }
    if (quiet.length > 0)
      this.metrics.tasksEvicted.inc({ shard: String(this.shard) }, quiet.length);
  }

  stats(): ShardStats {
    let behind = 0;
    let oldest = Infinity;
    for (const t of this.tasks.values()) {
      if (t.behindSince !== null) {
        behind += 1;
        oldest = Math.min(oldest, t.behindSince);
      }
    }
    return {
      shard: this.shard,
      tasks: this.tasks.size,
      tasksBehind: behind,
      lagSeconds: behind > 0 ? (performance.now() - oldest) / 1000 : 0,
    };
  }

  /** Stops every task of the shard at once (lease lost): nothing more is written under it. */
  drop(): void {
    this.isActive = false;
    this.tasks.clear();
    this.resolveReady();
  }

  /** Stops taking work and waits (bounded) for steps in flight, before the lease is released. */
  async stop(timeoutMs: number): Promise<void> {
    this.isActive = false;
    this.resolveReady();
    if (this.running > 0) {
      await Promise.race([
        new Promise<void>((r) => this.idleWaiters.push(r)),
        new Promise<void>((r) => setTimeout(r, timeoutMs).unref()),
      ]);
    }
    this.tasks.clear();
  }

  private task(taskId: string, discovered: boolean): TaskOwner {
    let t = this.tasks.get(taskId);
    if (!t) {
      t = new TaskOwner(taskId, this);
      this.tasks.set(taskId, t);
      this.metrics.tasksLoaded.inc({ shard: String(this.shard) });
      if (discovered) this.register(taskId);
    }
    return t;
  }

  /** Records new task ids in the shard's task set, batched. */
  private register(taskId: string): void {
    this.toRegister.push(taskId);
    void this.flushRegistrations();
  }

  private async flushRegistrations(): Promise<void> {
    if (this.registering) return;
    this.registering = true;
    try {
      while (this.toRegister.length > 0 && this.isActive) {
        const batch = this.toRegister.slice(0, 1_000);
        await this.store.shardTasks.add(this.shard, batch);
        this.toRegister.splice(0, batch.length);
      }
    } catch (err) {
      this.metrics.errors.inc({ op: 'register_tasks' });
      this.log.warn({ err, shard: this.shard }, 'could not record task ids; retrying');
      setTimeout(() => void this.flushRegistrations(), 1_000).unref();
    } finally {
      this.registering = false;
    }
  }

  private checkCaughtUp(): void {
    if (this.caughtUp || !this.listed || !this.feedDone || this.running > 0) return;
    for (const t of this.tasks.values()) if (t.behind()) return;
    this.caughtUp = true;
    this.log.info({ shard: this.shard, tasks: this.tasks.size }, 'shard caught up');
    this.resolveReady();
  }
}
