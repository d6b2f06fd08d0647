import { attention, coarseState, type FenceHistory } from '@baton/activity';
import {
  compareIds,
  FencedError,
  idTime,
  PUBLISH_MANY_TASKS,
  type EventStore,
  type FeedNote,
  type Lease,
  type Page,
  type Publication,
  type StoredEntry,
  type PutAway,
} from '@baton/store';
import { tasksToEvict } from './eviction';
import { FeedCount } from './feed-count';
import type { Logger } from '@baton/health';
import { headlineKey, type Metrics, type ShardStats } from './metrics';
import type { Limits, Periods } from './options';
import { JoinedCalls } from './joined-calls';
import { TaskOwner, type Published, type TaskContext } from './task-owner';

/** Slack on a put-away task's trim time, for the projector's clock against the server's. */
const TRIM_SLACK_MS = 1_000;
/** How often (at most) a shard looks for due trims of tasks put away; how many it takes at once. */
const TRIM_SWEEP_MS = 10_000;
const TRIM_BATCH = 100;
/** Updates per publishMany call (each task's own call carries at most PUBLISH_CHUNK of them). */
const PUBLISH_MANY_UPDATES = 1_000;

/** What a shard needs from the projector that owns it. */
export interface ShardHost {
  readonly store: EventStore;
  readonly instanceId: string;
  readonly metrics: Metrics;
  readonly log: Logger;
  readonly snapshotEntries: number;
  readonly periods: Periods;
  readonly limits: Limits;
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
  lost(shard: number, epoch: number, err: FencedError): void;
  /**
   * A task's entries after the last it folded: the reads of all shards' tasks in one turn go
   * together (one XREAD of their streams on a single Redis, one per shard on a Cluster).
   */
  readAfterFolded(taskId: string, foldedId: string): Promise<Page<StoredEntry>>;
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
  /** Task ids to record as live, each with the last note read before the one that named it. */
  private readonly toRegister: { taskId: string; before: string | null }[] = [];
  private registering = false;
  /** Notes read against the notes the feed added: whether some went unread (MAXLEN). */
  private readonly feedCount = new FeedCount();
  /** The last feed note read, and the one before it. */
  private lastNoteId: string | null = null;
  private previousNoteId: string | null = null;
  /** How far this owner has cut the feed. */
  private trimmedThrough: string | null = null;
  /** Local monotonic time of the next comparison of the live set with the tasks held. */
  private nextReconcile = Infinity;
  /** Local monotonic time of the next look for due trims (0: at the first tick). */
  private nextTrimSweep = 0;
  /** Live executions seen without a lease, by consecutive checks. */
  private readonly strikes = new Map<string, number>();
  private fences: Promise<FenceHistory> | undefined;
  private readonly publications = new JoinedCalls<Publication, Published>(
    (steps) => this.store.publishMany(this.current, steps),
    PUBLISH_MANY_TASKS,
    (step) => step.updates.length,
    PUBLISH_MANY_UPDATES,
  );

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
  get periods() {
    return this.host.periods;
  }
  get limits() {
    return this.host.limits;
  }
  lease(): Lease {
    return this.current;
  }
  fenceHistory(): Promise<FenceHistory> {
    // Once per shard taken: every lease before this one is in it (acquired before this one was).
    this.fences ??= this.host.store.leases.history(this.shard).catch((err: unknown) => {
      this.fences = undefined;
      throw err;
    });
    return this.fences;
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
    if (this.isActive) this.host.lost(this.shard, this.current.epoch, err);
  }
  /**
   * Steps without decisions of the shard's tasks in one turn go in one fenced call per
   * {@link PUBLISH_MANY_TASKS} tasks: one lease check and one write of the seqs and of the views
   * for them all, not one per task.
   */
  publish(step: Publication): Promise<Published> {
    return this.publications.call(step);
  }
  /** Read with every shard's reads of this turn (the projector's; see ShardHost). */
  readAfterFolded(taskId: string, foldedId: string): Promise<Page<StoredEntry>> {
    return this.host.readAfterFolded(taskId, foldedId);
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
   * Loads the tasks the shard holds live (every task appended to and not put away since); the feed
   * tail brings what comes after, and the notes its predecessor had not read.
   */
  async start(): Promise<void> {
    // The first owner of this version starts the live set from the older task set (all loaded).
    await this.store.shardTasks.startLive(this.shard);
    const [ids, endId, position] = await Promise.all([
      this.store.shardTasks.listLive(this.shard),
      this.store.feedLastId(this.shard),
      this.store.feedPosition(this.shard),
    ]);
    if (!this.isActive) return;
    // The tail reads the notes the feed holds now and every one after: count them from here.
    this.feedCount.start(position.added, position.length);
    this.endId = endId;
    if (endId === '0-0') this.feedDone = true;
    for (const id of ids) if (!this.tasks.has(id)) this.task(id, false).request();
    // Also in the older task set, for a projector of an earlier version that may own the shard
    // after this one (it loads that set): until they are, no note is cut from the feed.
    for (const id of ids) this.toRegister.push({ taskId: id, before: null });
    void this.flushRegistrations();
    this.listed = true;
    this.nextReconcile = performance.now() + this.host.periods.reconcile;
    this.checkCaughtUp();
  }

  onNote(note: FeedNote): void {
    if (!this.isActive) return;
    this.previousNoteId = this.lastNoteId;
    this.lastNoteId = note.id;
    if (this.feedCount.noteRead(note.id)) this.notesWentUnread();
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
      if (reached - since < (x.ttlMs ?? this.host.periods.shardLease)) continue;
      this.task(x.taskId, true).leaseExpired(x);
    }
    // A live execution with no lease at all is lost too (its worker writes the lease before it
    // reports the start). The live set is read before the leases, so a start folded here had its
    // lease written already; two checks in a row keep a worker's own drop-then-end from racing.
    if (now - since >= this.host.periods.shardLease) {
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
    const quiet = tasksToEvict(this.tasks, now, this.host.periods.evictIdle);
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
    await this.reconcile(now);
    await this.trimPutAway();
  }

  /**
   * Cuts the feed behind the notes handled: each names a task that is in the shard's live set (its
   * append put it there; a note of a writer from before the live set, once its task is registered)
   * or put away covered by its snapshot. So a takeover replays what the previous owner had not
   * read, not every note the bounded feed still holds.
   */
  private async trimFeed(): Promise<void> {
    const through = this.handledThrough();
    if (!this.isActive || through === null) return;
    if (this.trimmedThrough !== null && compareIds(through, this.trimmedThrough) <= 0) return;
    try {
      await this.store.trimFeed(this.current, through);
      this.trimmedThrough = through;
    } catch (err) {
      if (err instanceof FencedError) return this.fenced(err);
      this.metrics.errors.inc({ op: 'trim_feed' });
      this.log.warn({ err, shard: this.shard, through }, 'feed not trimmed (retried next tick)');
    }
  }

  /** The last note read such that every note up to it names a task registered (or known). */
  private handledThrough(): string | null {
    if (this.toRegister.length === 0) return this.lastNoteId;
    // Registrations of the loaded tasks (before: null) hold every cut until they are done.
    if (this.toRegister.some((r) => r.before === null)) return null;
    return this.toRegister[0]!.before;
  }

  /** Notes went unread: a held task may have entries it was never told of. */
  private notesWentUnread(): void {
    this.metrics.errors.inc({ op: 'feed_notes_unread' });
    this.log.warn({ shard: this.shard }, 'feed notes went unread: every held task looks again');
    for (const t of this.tasks.values()) t.request();
  }

  /**
   * Every `periods.reconcile`: the live set against the tasks held, and the feed's count against the
   * notes read. A live task not held (its appends' notes went unread: the feed's MAXLEN while this
   * owner lagged that far; or its put-away was refused) is loaded. Fewer notes read than the feed
   * had added up to this look's last note, found when the owner reads up to it (FeedCount), means
   * notes went unread: then every held task looks at its stream too. So no task waits on a note
   * that is gone for longer than this and the time to read up to the look.
   */
  private async reconcile(now: number): Promise<void> {
    if (!this.listed || now < this.nextReconcile || !this.isActive) return;
    this.nextReconcile = now + this.host.periods.reconcile;
    const position = await this.store.feedPosition(this.shard);
    if (!this.isActive) return;
    if (this.feedCount.look(position.added, position.lastId, this.lastNoteId))
      this.notesWentUnread();
    let n = 0;
    for (const id of await this.store.shardTasks.listLive(this.shard)) {
      if (!this.isActive || this.tasks.has(id)) continue;
      this.task(id, false).request();
      n += 1;
    }
    if (n > 0) this.log.info({ shard: this.shard, tasks: n }, 'loaded live tasks not held');
  }

  /**
   * When the retention lets the trim cut everything behind a quiet task's last entry (every
   * checkpoint is at or before it): one trim then does all a trim can for it. None without a
   * retention (each snapshot trimmed right up to itself) or without entries.
   */
  private trimDueAt(lastId: string): number | undefined {
    const retention = this.host.periods.retention;
    if (retention <= 0 || lastId === '0-0') return undefined;
    return idTime(lastId) + retention + TRIM_SLACK_MS;
  }

  /**
   * Tasks put away leave the set a new owner loads. Where this fails (or an entry came after what
   * was folded) they stay in it: a later owner loads them, finds them at rest, puts them away.
   */
  private async putAway(away: readonly PutAway[]): Promise<void> {
    if (!this.isActive) return;
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
    const retention = this.host.periods.retention;
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
        this.metrics.errors.inc({ op: 'trim_put_away' });
        this.log.warn({ err, shard: this.shard, taskId }, 'retention trim failed (retried later)');
      }
    }
    if (trimmed > 0) this.metrics.tasksTrimmed.inc({ shard: String(this.shard) }, trimmed);
    // A full batch done: more may be due. (A batch this clock thought due and the server's did
    // not waits for the next sweep.)
    if (trimmed === TRIM_BATCH) this.nextTrimSweep = now;
  }

  stats(): ShardStats {
    let behind = 0;
    let oldest = Infinity;
    let queued = 0;
    const sessions = new Map<string, number>();
    for (const t of this.tasks.values()) {
      if (t.behindSince !== null) {
        behind += 1;
        oldest = Math.min(oldest, t.behindSince);
      }
      for (const id in t.state.sessions) {
        const s = t.state.sessions[id]!;
        queued += s.queue.length;
        const key = headlineKey(coarseState(s), attention(s)?.kind ?? 'none');
        sessions.set(key, (sessions.get(key) ?? 0) + 1);
      }
    }
    return {
      shard: this.shard,
      tasks: this.tasks.size,
      tasksBehind: behind,
      lagSeconds: behind > 0 ? (performance.now() - oldest) / 1000 : 0,
      queuedPrompts: queued,
      sessions,
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
    this.toRegister.push({ taskId, before: this.previousNoteId });
    void this.flushRegistrations();
  }

  private async flushRegistrations(): Promise<void> {
    if (this.registering) return;
    this.registering = true;
    try {
      while (this.toRegister.length > 0 && this.isActive) {
        const batch = this.toRegister.slice(0, 1_000);
        await this.store.shardTasks.add(
          this.shard,
          batch.map((r) => r.taskId),
        );
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
