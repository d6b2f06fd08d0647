import {
  compareIds,
  FencedError,
  type EventStore,
  type FeedNote,
  type FeedState,
  feedWhole,
  type Lease,
  type PutAway,
} from '@baton/store';
import { tasksToEvict } from './eviction';
import type { Logger } from './logger';
import type { Metrics, ShardStats } from './metrics';
import { TaskOwner, type TaskContext } from './task-owner';

/** Slack on a put-away task's trim time, for the projector's clock against the server's. */
const TRIM_SLACK_MS = 1_000;
/** How often (at most) a shard looks for due trims of tasks put away; how many it takes at once. */
const TRIM_SWEEP_MS = 10_000;
const TRIM_BATCH = 100;
/** How often a shard checks that no note was deleted from its feed before it was read. */
const FEED_CHECK_MS = 5_000;

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
  /** The last feed note handled; the last before which every named task was registered. */
  private lastNoteId: string | null = null;
  private registeredThrough: string | null = null;
  /** How far this owner has cut the feed. */
  private trimmedThrough: string | null = null;
  /** Local monotonic time of the next look for notes lost from the feed. */
  private nextFeedCheck = 0;
  /** Local monotonic time of the next look for due trims (0: at the first tick). */
  private nextTrimSweep = 0;
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

  /**
   * Loads the tasks the shard holds live; the feed tail brings those with notes no owner handled.
   * When the feed cannot be trusted to hold those notes (some were deleted unhandled, or no owner
   * ever recorded how far it handled them), every task the shard has seen is loaded instead.
   */
  async start(): Promise<void> {
    const [feed, endId] = await Promise.all([
      this.store.feedState(this.shard),
      this.store.feedLastId(this.shard),
    ]);
    const whole = feedWhole(feed);
    if (!whole && feed.handledThrough !== null) this.notesLost(feed);
    const ids = whole ? await this.store.shardTasks.listLive(this.shard) : await this.relistAll();
    if (!this.isActive) return;
    this.endId = endId;
    if (endId === '0-0') this.feedDone = true;
    for (const id of ids) if (!this.tasks.has(id)) this.task(id, false).request();
    this.listed = true;
    this.checkCaughtUp();
    if (!whole) await this.recordFeed();
  }

  /**
   * Every task the shard has seen, made live (each is loaded now, and put away again when at rest),
   * before the feed's record says it is whole: a later owner then finds them in the live set.
   */
  private async relistAll(): Promise<string[]> {
    const ids = [
      ...new Set([
        ...(await this.store.shardTasks.list(this.shard)),
        ...(await this.store.shardTasks.listLive(this.shard)),
      ]),
    ];
    for (let i = 0; i < ids.length && this.isActive; i += 1_000) {
      await this.store.shardTasks.add(this.shard, ids.slice(i, i + 1_000));
    }
    return ids;
  }

  onNote(note: FeedNote): void {
    if (!this.isActive) return;
    this.lastNoteId = note.id;
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
    const away: PutAway[] = [];
    for (const id of quiet) {
      const t = this.tasks.get(id)!;
      t.putAway();
      this.tasks.delete(id);
      away.push({ taskId: id, foldedId: t.lastId, trimDueAt: this.trimDueAt(t.lastId) });
    }
    if (quiet.length > 0) {
      this.metrics.tasksEvicted.inc({ shard: String(this.shard) }, quiet.length);
      await this.putAway(away);
    }
    await this.trimFeed();
    await this.checkFeed(now);
    await this.trimPutAway();
  }

  /**
   * Cuts the feed behind the notes handled: each names a task that is now in the shard's live set
   * (held from it, or registered when its note came) or put away covered by its snapshot. While a
   * registration waits, only what was handled before it goes. So a takeover replays what the
   * previous owner had not handled, not every note the bounded feed still holds.
   */
  private async trimFeed(): Promise<void> {
    const through = this.handledThrough();
    if (through === null || (this.trimmedThrough && compareIds(through, this.trimmedThrough) <= 0))
      return;
    try {
      await this.store.trimFeed(this.current, through);
      this.trimmedThrough = through;
    } catch (err) {
      if (err instanceof FencedError) return this.fenced(err);
      this.metrics.errors.inc({ op: 'trim_feed' });
      this.log.warn({ err, shard: this.shard, through }, 'feed not trimmed (retried next tick)');
    }
  }

  /** The last note such that every note up to it names a task registered (or known). */
  private handledThrough(): string | null {
    return this.toRegister.length === 0 && !this.registering
      ? this.lastNoteId
      : this.registeredThrough;
  }

  /**
   * After every task of the shard was loaded for notes lost from the feed: the feed's record
   * (how many notes have left it) is brought up to date, so the loss is not found again.
   */
  private async recordFeed(): Promise<void> {
    if (!this.isActive) return;
    try {
      await this.store.trimFeed(this.current, this.handledThrough() ?? '0-0');
    } catch (err) {
      if (err instanceof FencedError) return this.fenced(err);
      this.metrics.errors.inc({ op: 'trim_feed' });
      this.log.warn({ err, shard: this.shard }, 'feed record not written (retried next check)');
    }
  }

  /**
   * Notes that left the feed otherwise than by this shard's owners' trims (a writer's MAXLEN while
   * the owner lagged that far behind) may name tasks nothing else would wake: then every task the
   * shard has seen is loaded, as at a takeover that cannot trust its feed.
   */
  private async checkFeed(now: number): Promise<void> {
    if (now < this.nextFeedCheck || !this.listed) return;
    this.nextFeedCheck = now + FEED_CHECK_MS;
    const feed = await this.store.feedState(this.shard);
    if (feedWhole(feed) || !this.isActive) return;
    this.notesLost(feed);
    for (const id of await this.relistAll()) {
      if (this.isActive && !this.tasks.has(id)) this.task(id, false).request();
    }
    await this.recordFeed();
  }

  private notesLost(feed: FeedState): void {
    this.metrics.errors.inc({ op: 'feed_notes_lost' });
    this.log.warn(
      { shard: this.shard, ...feed, lastNoteId: this.lastNoteId },
      'feed notes left the feed before they were handled: loading every task of the shard',
    );
  }

  /**
   * When the retention lets the trim cut everything behind a quiet task's last entry (every
   * checkpoint is at or before it): one trim then does all a trim can for it. None without a
   * retention (each snapshot trimmed right up to itself) or without entries.
   */
  private trimDueAt(lastId: string): number | undefined {
    const retention = this.host.retentionMs;
    if (retention <= 0 || lastId === '0-0') return undefined;
    return Number(lastId.split('-')[0]) + retention + TRIM_SLACK_MS;
  }

  /**
   * Tasks put away leave the set a new owner loads. Where this fails (or an entry came after what
   * was folded) they stay in it: a later owner loads them, finds them at rest, puts them away.
   */
  private async putAway(away: readonly PutAway[]): Promise<void> {
    try {
      await Promise.all(away.map((t) => this.store.shardTasks.putAway(this.current, t)));
    } catch (err) {
      if (err instanceof FencedError) return this.fenced(err);
      this.metrics.errors.inc({ op: 'put_away' });
      this.log.warn({ err, shard: this.shard, tasks: away.length }, 'tasks put away stay listed');
    }
  }

  /**
   * The retention trims of tasks put away, when due: an owner trims a task's stream at its
   * snapshots, and a task put away takes none, so its last retained day would stay for good.
   * The trim needs no state of the task (the snapshot and checkpoints are in Redis), so the task is
   * not loaded for it; the script checks the due time by the server's clock and removes the
   * schedule entry with the trim. Looked for every TRIM_SWEEP_MS (a tenth of a shorter
   * retention), at once again while a full batch was due.
   */
  private async trimPutAway(): Promise<void> {
    const retention = this.host.retentionMs;
    const now = performance.now();
    if (retention <= 0 || now < this.nextTrimSweep || !this.isActive) return;
    this.nextTrimSweep = now + Math.min(TRIM_SWEEP_MS, retention / 10);
    const due = await this.store.shardTasks.trimsDue(this.shard, Date.now(), TRIM_BATCH);
    let trimmed = 0;
    for (const taskId of due) {
      if (!this.isActive) return;
      try {
        if ((await this.store.shardTasks.trimDue(this.current, taskId, retention)) !== null)
          trimmed += 1;
      } catch (err) {
        if (err instanceof FencedError) return this.fenced(err);
        throw err;
      }
    }
    if (trimmed > 0) this.metrics.tasksTrimmed.inc({ shard: String(this.shard) }, trimmed);
    if (due.length === TRIM_BATCH) this.nextTrimSweep = now;
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
      // Every note seen so far names a registered task (notes are handled as they arrive).
      if (this.toRegister.length === 0) this.registeredThrough = this.lastNoteId;
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
