import { serveHealth, serviceLogger, within, type HealthServer, type Logger } from '@baton/health';
import {
  maxId,
  EventStore,
  logAvailability,
  quietDuringOutages,
  redisTargetFromUrl,
  type FencedError,
  type Lease,
  type Page,
  type StoredEntry,
  type StreamTail,
  type FeedNote,
} from '@baton/store';
import type { Registry } from 'prom-client';
import { Metrics } from './metrics';
import {
  resolveOptions,
  type Limits,
  type Periods,
  type ProjectorOptionsInput,
  type ResolvedOptions,
} from './options';
import { JoinedCalls } from './joined-calls';
import { ShardOwnership } from './shard-ownership';
import { ShardRunner, type ShardHost } from './shard';
import { TASK_PAGE } from './task-owner';

export type ProjectorOptions = ProjectorOptionsInput;

type TaskRead = { readonly taskId: string; readonly foldedId: string };

export interface ProjectorHandle {
  readonly instanceId: string;
  /** Shards this instance owns now, ascending. */
  ownedShards(): number[];
  /** Ids of the tasks held in memory now (a task put away is not among them until it comes back). */
  heldTasks(): string[];
  readonly registry: Registry;
  /** Port /metrics and /healthz are served on, or null when they are not served. */
  readonly metricsPort: number | null;
  /** What /healthz answers: null when healthy, else what is wrong. */
  health(): string | null;
  /** Resolves once the first ownership round is done and every shard owned is caught up. */
  ready(): Promise<void>;
  /** Releases every lease (after the steps in flight) and closes everything. */
  stop(): Promise<void>;
}

/** How long a released shard waits for its steps in flight before the lease goes anyway. */
const RELEASE_WAIT_MS = 2_000;
/** Tasks per joined read: bounds its reply (each task's page up to TASK_PAGE entries). */
const READ_MANY_TASKS = 16;

class Projector implements ShardHost {
  readonly store: EventStore;
  readonly metrics: Metrics;
  readonly log: Logger;
  readonly instanceId: string;
  readonly snapshotEntries: number;
  readonly periods: Periods;
  readonly limits: Limits;
  private readonly runners = new Map<number, ShardRunner>();
  private readonly cursors = new Map<number, string>();
  private readonly ownership: ShardOwnership;
  private tail: StreamTail<FeedNote> | null = null;
  private tailDirty = false;
  private writerSeq = 0;
  private stopping: Promise<void> | null = null;
  private tickTimer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  /** Each shard's timer round in flight: a shard whose master is down holds back only its own. */
  private readonly timerRounds = new Map<ShardRunner, Promise<void>>();
  /** Round trips to Redis (performance.now()): the last one, and the end of the last gap. */
  private lastReached = performance.now();
  private reachable = performance.now();
  private firstTick!: () => void;
  private readonly firstTickDone = new Promise<void>((r) => (this.firstTick = r));
  private balancedOnce = false;
  /** performance.now() of the end of the last ownership tick (the balancing loop's pulse). */
  private lastTicked = performance.now();
  private server: HealthServer | null = null;
  metricsPort: number | null = null;
  /**
   * Task reads of one turn, joined (ShardHost.readAfterFolded) by read group: every shard's on a
   * single Redis, each shard's alone on a Cluster, so a slow master holds back only its own.
   */
  private readonly reads = new Map<number, JoinedCalls<TaskRead, Page<StoredEntry>>>();
  // Concurrency limit of task steps.
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly opts: ResolvedOptions) {
    this.instanceId = opts.instanceId;
    this.snapshotEntries = opts.snapshotEntries;
    this.periods = opts.periods;
    this.limits = opts.limits;
    // Synchronous: a lease change is on record before anything is written under it.
    this.log = serviceLogger('projector', opts.instanceId, opts.logLevel, {
      sync: true,
      logMethod: quietDuringOutages,
    });
    this.metrics = new Metrics(() => [...this.runners.values()].map((r) => r.stats()));
    const logged = logAvailability(this.log);
    this.store = EventStore.connect(
      redisTargetFromUrl(opts.redisUrl),
      {
        shards: opts.shards,
        prefix: opts.prefix,
        // A short block keeps the tail responsive to reconnects; notes wake it at once anyway.
        tailBlockMs: 1_000,
        onDeadLetter: this.metrics.redis.onDeadLetter,
      },
      {
        onAvailability: (change) => {
          logged(change);
          this.metrics.redis.onAvailability(change);
        },
      },
    );
    this.ownership = new ShardOwnership(
      this.store,
      this.instanceId,
      opts.periods.shardLease,
      this.log,
      this.metrics,
      {
        acquired: (lease) => this.acquired(lease),
        lost: (shard) => this.dropShard(shard),
        releasing: (shard) => this.releasing(shard),
      },
    );
  }

  async start(): Promise<void> {
    if (this.opts.metricsPort !== null) {
      this.server = await serveHealth({
        registry: this.metrics.registry,
        port: this.opts.metricsPort,
        check: () => this.health(),
      });
      this.metricsPort = this.server.port;
    }
    this.log.info(
      {
        shards: this.opts.shards,
        prefix: this.opts.prefix,
        periods: this.periods,
        limits: this.limits,
        metricsPort: this.metricsPort,
      },
      'projector started',
    );
    this.scheduleTick(0);
  }

  /**
   * Healthy while not stopping, the first balancing round is over, the balancing loop ticked
   * within two lease periods (a tick waits at most half of one, then leaseRenewal) and Redis answered
   * within one lease period: past that this instance's leases lapse, and it owns nothing.
   */
  health(): string | null {
    if (this.stopping) return 'stopping';
    const now = performance.now();
    const loopQuiet = now - this.lastTicked;
    if (loopQuiet > 2 * this.periods.shardLease)
      return `the balancing loop has not ticked for ${Math.round(loopQuiet)} ms`;
    const redisQuiet = now - this.ownership.lastReached;
    if (redisQuiet > this.periods.shardLease)
      return Number.isFinite(redisQuiet)
        ? `Redis has not answered for ${Math.round(redisQuiet)} ms`
        : 'Redis has not answered yet';
    if (!this.balancedOnce) return 'starting: the first balancing round is not over';
    return null;
  }

  nextWriterSeq(): number {
    return ++this.writerSeq;
  }

  readAfterFolded(taskId: string, foldedId: string): Promise<Page<StoredEntry>> {
    const group = this.store.readGroupOf(taskId);
    let reads = this.reads.get(group);
    if (reads === undefined) {
      reads = new JoinedCalls<TaskRead, Page<StoredEntry>>(
        (batch) => this.store.readTasksAfterFolded(batch, TASK_PAGE),
        READ_MANY_TASKS,
      );
      this.reads.set(group, reads);
    }
    return reads.call({ taskId, foldedId });
  }

  reachableSince(): number {
    return this.reachable;
  }

  /**
   * A gap between round trips longer than a shard lease is an outage (or a stall as long as
   * one): whatever lapsed in it is not the workers' fault, so execution leases get one full
   * period from its end before any is declared lost (ShardRunner.timers).
   */
  reached(at: number): void {
    if (at <= this.lastReached) return;
    const gap = at - this.lastReached;
    this.lastReached = at;
    if (gap > this.periods.shardLease) {
      this.reachable = at;
      this.log.info(
        { gapMs: Math.round(gap) },
        'Redis reachable again: execution leases get one period to be renewed',
      );
    }
  }

  async limit<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.opts.concurrency) {
      await new Promise<void>((r) => this.waiting.push(r));
    }
    this.active += 1;
    try {
      return await fn();
    } finally {
      this.active -= 1;
      this.waiting.shift()?.();
    }
  }

  lost(shard: number, epoch: number, err: FencedError): void {
    this.metrics.fencedWrites.inc({ shard: String(shard) });
    this.ownership.lose(shard, `write fenced: ${err.message}`, epoch);
  }

  heldTasks(): string[] {
    return [...this.runners.values()].flatMap((r) => [...r.tasks.keys()]);
  }

  ownedShards(): number[] {
    return [...this.runners.keys()].sort((a, b) => a - b);
  }

  async ready(): Promise<void> {
    await this.firstTickDone;
    for (;;) {
      const runners = [...this.runners.values()];
      await Promise.all(runners.map((r) => r.ready));
      const now = [...this.runners.values()];
      if (now.length === runners.length && now.every((r, i) => r === runners[i])) return;
    }
  }

  private scheduleTick(delay: number): void {
    if (this.stopping) return;
    this.tickTimer = setTimeout(() => {
      this.ticking = this.tick().finally(() => this.scheduleTick(this.opts.periods.leaseRenewal));
    }, delay);
  }

  private async tick(): Promise<void> {
    try {
      await this.ownership.tick();
      this.reached(this.ownership.lastReached);
      // ready() means the first balancing round is over (its shards taken), however long it took.
      void this.ownership
        .balanced()
        .catch(() => undefined)
        .then(() => {
          this.balancedOnce = true;
          this.firstTick();
        });
    } catch (err) {
      this.metrics.errors.inc({ op: 'ownership_tick' });
      this.log.warn({ err }, 'ownership round failed; retrying next tick');
    }
    this.lastTicked = performance.now();
    if (this.tailDirty) this.restartTail();
    // Timers must not delay lease renewal: they run beside the next ticks, one round at a time
    // per shard, never waiting for another shard's (on a Cluster, its master may be down).
    if (!this.stopping) {
      for (const r of this.runners.values()) {
        if (this.timerRounds.has(r)) continue;
        this.timerRounds.set(
          r,
          r
            .timers()
            .catch((err: unknown) => {
              this.metrics.errors.inc({ op: 'timers' });
              this.log.warn({ err, shard: r.shard }, 'timer round failed');
            })
            .finally(() => this.timerRounds.delete(r)),
        );
      }
    }
  }

  private acquired(lease: Lease): void {
    const runner = new ShardRunner(lease, this);
    this.runners.set(lease.shard, runner);
    this.cursors.set(lease.shard, '0-0');
    this.tailDirty = true;
    runner.start().catch((err: unknown) => {
      this.metrics.errors.inc({ op: 'shard_start' });
      this.log.error({ err, shard: lease.shard }, 'could not load the shard; releasing it');
      void this.ownership.release(lease.shard, 'load failed');
    });
  }

  private dropShard(shard: number): void {
    const runner = this.runners.get(shard);
    if (!runner) return;
    runner.drop();
    this.runners.delete(shard);
    this.cursors.delete(shard);
    this.tailDirty = true;
  }

  private async releasing(shard: number): Promise<void> {
    const runner = this.runners.get(shard);
    if (!runner) return;
    this.runners.delete(shard);
    this.cursors.delete(shard);
    this.tailDirty = true;
    await runner.stop(RELEASE_WAIT_MS);
  }

  /**
   * One tail follows the feeds of every owned shard; when the set changes it is replaced by one
   * that resumes each shard after the last note handled (a new shard starts at the feed's start).
   */
  private restartTail(): void {
    this.tailDirty = false;
    const old = this.tail;
    const shards = this.ownedShards();
    this.tail =
      shards.length > 0 && !this.stopping
        ? this.store.tailFeeds(shards, Object.fromEntries(this.cursors))
        : null;
    if (old) void old.close();
    if (this.tail)
      void this.consume(this.tail, new Map(shards.map((s) => [s, this.runners.get(s)])));
  }

  /**
   * Hands each note to the runner the tail was started for: a shard lost and taken again meanwhile
   * has a new runner, whose own tail replays the feed from its start. A note of the old tail must
   * not reach it (nor move its cursor), or the new runner would count notes handled that it never
   * read, and cut them from the feed.
   */
  private async consume(
    tail: StreamTail<FeedNote>,
    runners: ReadonlyMap<number, ShardRunner | undefined>,
  ): Promise<void> {
    try {
      for await (const batch of tail) {
        for (const note of batch) {
          const runner = this.runners.get(note.shard);
          if (!runner || runner !== runners.get(note.shard)) continue;
          this.cursors.set(note.shard, maxId(this.cursors.get(note.shard) ?? '0-0', note.id));
          runner.onNote(note);
        }
      }
    } catch (err) {
      this.log.error({ err }, 'feed tail failed; restarting it');
      this.tailDirty = true;
    }
  }

  async stop(): Promise<void> {
    this.stopping ??= (async () => {
      // A wait on an unreachable Redis (a Cluster master down) is cut at the shutdown bound: the
      // leases not released by then lapse, as after a crash, and other instances take over.
      const clean = await within(
        this.stopCleanly().then(() => true),
        this.periods.shutdown,
        false,
      );
      if (!clean) {
        this.log.warn({ afterMs: this.periods.shutdown }, 'stop unfinished; leases left to lapse');
        this.store.redis.disconnect();
        await this.server?.close().catch(() => undefined);
      }
      this.log.info('projector stopped');
      await new Promise<void>((r) => this.log.flush(() => r()));
    })();
    return this.stopping;
  }

  private async stopCleanly(): Promise<void> {
    clearTimeout(this.tickTimer);
    await this.ticking;
    // A round waiting on a lost master would hold the shutdown until it is back: one lease at
    // most, as for the leases themselves.
    await settleWithin([...this.timerRounds.values()], this.periods.shardLease);
    await this.ownership.releaseAll().catch((err: unknown) => {
      this.log.warn({ err }, 'could not release every lease; they lapse by themselves');
    });
    const tail = this.tail;
    this.tail = null;
    await tail?.close();
    await this.store.close();
    await this.server?.close();
  }
}

/**
 * Starts a projector instance: it joins the instances of its deployment (same Redis and prefix),
 * takes its share of the shards and owns their tasks until stopped.
 */
export async function startProjector(options: ProjectorOptions): Promise<ProjectorHandle> {
  const p = new Projector(resolveOptions(options));
  await p.start();
  return {
    instanceId: p.instanceId,
    ownedShards: () => p.ownedShards(),
    heldTasks: () => p.heldTasks(),
    registry: p.metrics.registry,
    get metricsPort() {
      return p.metricsPort;
    },
    health: () => p.health(),
    ready: () => p.ready(),
    stop: () => p.stop(),
  };
}

/** Waits for `ps` to settle, or `ms`, whichever comes first. */
async function settleWithin(ps: Promise<unknown>[], ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.allSettled(ps),
    new Promise<void>((r) => (timer = setTimeout(r, ms))),
  ]).finally(() => clearTimeout(timer));
}
