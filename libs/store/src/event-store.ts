import type { StreamEntry, Update } from '@baton/protocol';
import {
  connectRedis,
  isCluster,
  type ConnectOptions,
  type RedisClient,
  type RedisTarget,
} from './connection';
import { DeadLetters } from './families/dead-letters';
import { Executions } from './families/executions';
import { Inbox } from './families/inbox';
import { Leases, Projectors, ShardTasks, type Lease } from './families/leases';
import { RawFrames } from './families/raw-frames';
import { Transcripts } from './families/transcripts';
import { StoreContext, type Page } from './families/shared';
import { HistorySpans } from './families/history-spans';
import { Snapshots } from './families/snapshots';
import { TaskStreams, type FeedNote, type StoredEntry } from './families/task-streams';
import { Tenants } from './families/tenants';
import {
  Updates,
  type Committed,
  type Publication,
  type Step,
  type StoredUpdate,
  type UpdateStreamItem,
} from './families/updates';
import { Views } from './families/views';
import { DEFAULT_PREFIX, DEFAULT_SHARDS, KeyLayout } from './keys';
import { defineScripts } from './scripts';
import type { StreamTail } from './tail';
import type { GapError, StreamBehindError } from './errors';

/** How long a close waits for Redis to acknowledge QUIT before it drops the connection. */
const CLOSE_WAIT_MS = 1_000;

export interface EventStoreOptions {
  /** Shards per deployment (default 64). Every process of a deployment must use the same. */
  shards?: number;
  prefix?: string;
  /** Approximate bound of each shard feed (default 100,000 notes). */
  feedMaxLen?: number;
  /** Approximate bound of each shard update stream (default 100,000 updates). */
  updatesMaxLen?: number;
  /** Approximate bound of each execution inbox (default 1,000). */
  inboxMaxLen?: number;
  /**
   * Approximate bound of each execution's raw-frame log, in entries: a worker's write each, the
   * frames it gathered (up to a second of them) in one (default 10,000 entries).
   */
  rawFramesMaxLen?: number;
  /**
   * How long raw frames are kept (default 30 min, as the projector's hot window: the transcript
   * and the history keep the day); 0: until the length bound cuts them.
   */
  rawFramesRetentionMs?: number;
  /** Approximate bound of each task's transcript stream (default 100,000 events). */
  transcriptMaxLen?: number;
  /**
   * How long transcript events are kept (default 1 day, as the projector's history retention;
   * 0: until the length bound cuts them).
   */
  transcriptRetentionMs?: number;
  /** Approximate bound of each shard's dead-letter stream (default 10,000). */
  deadLettersMaxLen?: number;
  /** How long a task's append dedupe state outlives its last append (default 7 days). */
  dedupeTtlMs?: number;
  /** How long a blocking tail read waits before it re-issues (default 5,000 ms). */
  tailBlockMs?: number;
  /**
   * Replicas that must have an {@link EventStore.append} (a client's command) before it counts as
   * done (Redis WAIT; default 0: the master's reply). Replication is asynchronous: without this,
   * a failover can lose what the master had acknowledged. When fewer replicas confirm within
   * {@link ackTimeoutMs}, the append fails as unavailable (NOREPLICAS); the write may still
   * survive, and a retry under the same idempotency key finds it.
   */
  ackReplicas?: number;
  /** How long an append waits for {@link ackReplicas} (default 1,000 ms). */
  ackTimeoutMs?: number;
  /**
   * Called once for each dead letter this process records (not for one already recorded), with
   * its shard: what a process's metrics count.
   */
  onDeadLetter?: (shard: number) => void;
}

/**
 * Baton's event store over Redis streams: idempotent and fenced appends to task streams, shard
 * leases with fencing epochs, snapshots and trimming, per-shard client updates, execution inboxes,
 * raw-frame logs and dead letters. Everything that enters is validated with `@baton/protocol`;
 * what comes back out is checked as far as its write did not already prove it (stored.ts), and
 * what fails is dead-lettered and skipped.
 *
 * The one entry to the store: each key family is an object of its own (families/), reached as a
 * property (`store.leases`, `store.snapshots`, ...); task streams and updates, the most used, also
 * through methods of the store itself.
 */
export class EventStore {
  readonly keys: KeyLayout;
  private readonly ctx: StoreContext;
  private readonly tasks: TaskStreams;
  private readonly updates: Updates;

  readonly leases: Leases;
  readonly projectors: Projectors;
  readonly shardTasks: ShardTasks;
  readonly snapshots: Snapshots;
  readonly historySpans: HistorySpans;
  readonly inbox: Inbox;
  readonly executions: Executions;
  readonly views: Views;
  readonly tenants: Tenants;
  readonly rawFrames: RawFrames;
  readonly transcripts: Transcripts;
  readonly deadLetters: DeadLetters;

  constructor(
    readonly redis: RedisClient,
    options: EventStoreOptions = {},
    private readonly ownsConnection = false,
  ) {
    this.keys = new KeyLayout(options.shards ?? DEFAULT_SHARDS, options.prefix ?? DEFAULT_PREFIX);
    this.ctx = new StoreContext(redis, this.keys, defineScripts(redis), {
      feedMaxLen: options.feedMaxLen ?? 100_000,
      updatesMaxLen: options.updatesMaxLen ?? 100_000,
      inboxMaxLen: options.inboxMaxLen ?? 1_000,
      rawFramesMaxLen: options.rawFramesMaxLen ?? 10_000,
      rawFramesRetentionMs: options.rawFramesRetentionMs ?? 1_800_000,
      transcriptMaxLen: options.transcriptMaxLen ?? 100_000,
      transcriptRetentionMs: options.transcriptRetentionMs ?? 86_400_000,
      deadLettersMaxLen: options.deadLettersMaxLen ?? 10_000,
      dedupeTtlMs: options.dedupeTtlMs ?? 7 * 24 * 3600 * 1000,
      tailBlockMs: options.tailBlockMs ?? 5_000,
      ackReplicas: options.ackReplicas ?? 0,
      ackTimeoutMs: options.ackTimeoutMs ?? 1_000,
      onDeadLetter: options.onDeadLetter ?? (() => undefined),
    });
    this.tasks = new TaskStreams(this.ctx);
    this.updates = new Updates(this.ctx);
    this.leases = new Leases(this.ctx);
    this.projectors = new Projectors(this.ctx);
    this.shardTasks = new ShardTasks(this.ctx);
    this.snapshots = new Snapshots(this.ctx);
    this.historySpans = new HistorySpans(this.ctx, this.tasks);
    this.inbox = new Inbox(this.ctx);
    this.executions = new Executions(this.ctx);
    this.views = new Views(this.ctx);
    this.tenants = new Tenants(this.ctx);
    this.rawFrames = new RawFrames(this.ctx);
    this.transcripts = new Transcripts(this.ctx);
    this.deadLetters = new DeadLetters(this.ctx);
  }

  /** A store over its own connection, closed by {@link close}. */
  static connect(
    target: RedisTarget,
    options: EventStoreOptions = {},
    connect: ConnectOptions = {},
  ): EventStore {
    return new EventStore(connectRedis(target, connect), options, true);
  }

  shardOf(taskId: string): number {
    return this.keys.shardOf(taskId);
  }

  /**
   * Tasks whose reads one {@link readTasksAfterFolded} serves in one command: all on a single
   * Redis (group 0), a shard's on a Cluster, where a shard's keys share one slot (and several
   * shards may share a master: a slow master holds back each of its shards' groups alone).
   */
  readGroupOf(taskId: string): number {
    return isCluster(this.redis) ? this.keys.shardOf(taskId) : 0;
  }

  // ---------------------------------------------------------------------------------------------
  // Task streams and shard feeds
  // ---------------------------------------------------------------------------------------------

  /**
   * Appends a batch to a task stream, at most once per (writer instance, writer seq). Returns, per
   * entry, its stream id or null when it was already appended. See append-3.lua for the writer's
   * side of the contract: per task, a writer's seqs increase and it retries until acknowledged.
   */
  append(taskId: string, entries: readonly StreamEntry[]): Promise<(string | null)[]> {
    return this.tasks.append(taskId, entries);
  }

  /**
   * Appends the owner's entries only if `lease` is still current (else {@link FencedError}) and the
   * stream's last id is `expectedLastId`, `'0-0'` for an empty stream (else {@link ConflictError}
   * with the actual last id). Returns the new ids.
   */
  appendFenced(
    lease: Lease,
    taskId: string,
    expectedLastId: string,
    entries: readonly StreamEntry[],
  ): Promise<string[]> {
    return this.tasks.appendFenced(lease, taskId, expectedLastId, entries);
  }

  /** Up to `count` entries after `afterId` (exclusive; `'0-0'` from the start), envelope-checked. */
  readTask(taskId: string, afterId = '0-0', count = 1_000): Promise<Page<StoredEntry>> {
    return this.tasks.read(taskId, afterId, count);
  }

  /**
   * As {@link readTask}, after `foldedId`, the last entry the caller folded, which the stream must
   * still hold: one that does not (Redis lost writes it had acknowledged) throws
   * {@link StreamBehindError} with the stream's last id, instead of reading on after a gap.
   */
  readTaskAfterFolded(taskId: string, foldedId: string, count = 1_000): Promise<Page<StoredEntry>> {
    return this.tasks.readAfterFolded(taskId, foldedId, count);
  }

  /**
   * {@link readTaskAfterFolded} of several tasks (each once, of any shards) in one round trip: one
   * XREAD on a single Redis, one per shard on a Cluster (sent together). Each answer is its task's
   * page, the {@link StreamBehindError} it would throw, or (on a Cluster) the error of its shard's
   * read: one master that fails fails only its own shard's reads. A caller that must not wait for
   * a slow master either joins only the reads of one {@link readGroupOf}.
   */
  readTasksAfterFolded(
    reads: readonly { taskId: string; foldedId: string }[],
    count = 1_000,
  ): Promise<(Page<StoredEntry> | StreamBehindError | Error)[]> {
    return this.tasks.readManyAfterFolded(reads, count);
  }

  /** Whether the task stream holds an entry with id `id`. */
  hasEntry(taskId: string, id: string): Promise<boolean> {
    return this.tasks.hasEntry(taskId, id);
  }

  /**
   * Every page of a task stream after `afterId` (exclusive; `'0-0'` from the start) up to
   * `until` (ms since the epoch, inclusive; default: the end), envelope-checked as
   * {@link readTask} reads them, with the next page read ahead while the caller uses this one.
   */
  readTaskPages(
    taskId: string,
    afterId = '0-0',
    opts: { count?: number; until?: number } = {},
  ): AsyncGenerator<Page<StoredEntry>, void, undefined> {
    const end = opts.until === undefined ? '+' : String(opts.until);
    return this.tasks.pages(taskId, afterId, opts.count ?? 1_000, end);
  }

  /**
   * True when entries were ever removed from the front of the task stream (trimmed behind a
   * snapshot): then the stream alone no longer rebuilds the task.
   */
  wasTrimmed(taskId: string): Promise<boolean> {
    return this.tasks.wasTrimmed(taskId);
  }

  /** The id of the last entry of a task stream, `'0-0'` when it has none. */
  lastId(taskId: string): Promise<string> {
    return this.tasks.lastId(taskId);
  }

  /** The id of the last note of a shard feed, `'0-0'` when it has none. */
  feedLastId(shard: number): Promise<string> {
    return this.tasks.feedLastId(shard);
  }

  /**
   * Removes the notes of the lease's shard feed up to and including `handledThrough`, fenced: every
   * task they name is in the shard's live set (or put away covered by its snapshot). Returns how
   * many went.
   */
  trimFeed(lease: Lease, handledThrough: string): Promise<number> {
    return this.tasks.trimFeed(lease, handledThrough);
  }

  /**
   * How many notes a shard's feed has ever had, holds, and the id of the last, read together: an
   * owner that has read up to that id and counted fewer notes since its last look lost some unread.
   */
  feedPosition(shard: number): Promise<{ added: number; length: number; lastId: string }> {
    return this.tasks.feedPosition(shard);
  }

  /**
   * Follows the feeds of `shards` with blocking reads on dedicated connections: one for all shards
   * on a single Redis, one per shard on a Cluster (a blocking read covers one slot there). `from`
   * gives the feed id to start after per shard; by default only notes written from now on.
   * One consumer per tail.
   */
  tailFeeds(
    shards: readonly number[],
    from: Readonly<Record<number, string>> = {},
  ): StreamTail<FeedNote> {
    return this.tasks.tailFeeds(shards, from);
  }

  // ---------------------------------------------------------------------------------------------
  // Client updates
  // ---------------------------------------------------------------------------------------------

  /**
   * Publishes a task's updates (ascending seq) to its shard's update stream, fenced. Seqs already
   * published are skipped; a seq past last + 1 fails with {@link GapError} and writes nothing.
   * Every update names its entry and whether it ends the entry's group (`entry`, `last`): an
   * update without them is refused, since clients could not tell where its group ends.
   */
  publishUpdates(
    lease: Lease,
    taskId: string,
    updates: readonly Update[],
  ): Promise<{ published: number; lastSeq: number }> {
    return this.updates.publish(lease, taskId, updates);
  }

  /**
   * One fenced write of an owner's step, in one call with one lease check: appends `entries` (its
   * decisions) if the stream's last id is `expectedLastId` (else {@link ConflictError}), publishes
   * `updates` as {@link publishUpdates} does (an update of the k-th new entry given as
   * `{ of: k, update }`, its entry id filled in by Redis), and stores `view` if its seq is the last
   * published seq after the call and no view is stored at that seq yet. Nothing is written when
   * any check fails ({@link FencedError}, {@link ConflictError}, {@link GapError}).
   */
  commit(lease: Lease, taskId: string, step: Step): Promise<Committed> {
    return this.updates.commit(lease, taskId, step);
  }

  /**
   * The steps without decisions of several tasks of `lease.shard` (at most
   * {@link PUBLISH_MANY_TASKS}, each task once) in one fenced call: each task's updates and view
   * written as {@link commit} writes them. The lease is checked once, for all: a
   * {@link FencedError} writes nothing. A task whose updates would leave a gap writes nothing and
   * gets its {@link GapError} in its place of the answer; the others are written.
   */
  publishMany(
    lease: Lease,
    steps: readonly Publication[],
  ): Promise<(Omit<Committed, 'ids'> | GapError)[]> {
    return this.updates.publishMany(lease, steps);
  }

  /** Updates of a shard after `afterId` (exclusive), envelope-checked. */
  readUpdates(shard: number, afterId = '0-0', count = 1_000): Promise<Page<StoredUpdate>> {
    return this.updates.read(shard, afterId, count);
  }

  /** How long a tail's blocking read waits for something new. */
  get tailBlockMs(): number {
    return this.ctx.opts.tailBlockMs;
  }

  /** Follows the update streams of `shards` (see {@link tailFeeds} for connections and `from`). */
  tailUpdates(
    shards: readonly number[],
    from: Readonly<Record<number, string>> = {},
  ): StreamTail<UpdateStreamItem> {
    return this.updates.tail(shards, from);
  }

  /** See {@link Updates.announceRewritten}. */
  announceRewritten(taskId: string, seq: number): Promise<void> {
    return this.updates.announceRewritten(taskId, seq);
  }

  /** The last update seq published for a task (0 if none). */
  lastUpdateSeq(taskId: string): Promise<number> {
    return this.updates.lastSeq(taskId);
  }

  /** Closes the tails and, when the store opened it, the connection. */
  async close(): Promise<void> {
    const { tails } = this.ctx;
    await Promise.all([...tails].map((t) => t.close()));
    tails.clear();
    if (!this.ownsConnection) return;
    // QUIT waits for every node's reply: on a Cluster with a master down, until it is back.
    let timer: NodeJS.Timeout | undefined;
    const quit = this.redis.quit().then(
      () => true,
      () => false,
    );
    const quitted = await Promise.race([
      quit,
      new Promise<false>((r) => (timer = setTimeout(() => r(false), CLOSE_WAIT_MS))),
    ]).finally(() => clearTimeout(timer));
    if (!quitted) this.redis.disconnect();
  }
}
