import { isDecision, type StreamEntry } from '@baton/protocol';
import type { StoreContext } from './shared';

/** The right to write for one shard, at one fencing epoch. */
export interface Lease {
  shard: number;
  owner: string;
  epoch: number;
  /** Server time (ms since epoch) at which the lease lapses unless renewed. */
  expiresAt: number;
}

/**
 * What a fenced write names its writer by: the lease's epoch and owner. Both, because a failover
 * that lost an acquisition can hand the same epoch number out again, to another owner.
 */
export function fenceToken(lease: Lease): string {
  return `${lease.epoch}:${lease.owner}`;
}

/**
 * Every lease a shard has had: its epochs and their owners, and the server time (ms) of the first
 * acquisition recorded (undefined: none yet).
 */
export interface EpochHistory {
  owners: ReadonlyMap<number, string>;
  from?: number;
}

/**
 * The entries as the lease's owner appends them: each decision carries the lease it was written
 * under, which the owner's fold checks (libs/activity decisionFenceRefusal).
 */
export function stampedWithFence(lease: Lease, entries: readonly StreamEntry[]): StreamEntry[] {
  const fence = { epoch: lease.epoch, owner: lease.owner };
  return entries.map((e) => (isDecision(e) ? { ...e, fence } : e));
}

export type AcquireResult =
  { acquired: true; lease: Lease } | { acquired: false; owner: string; expiresAt: number };

/** Shard leases (`lease`) and their fencing epochs (`epoch`). */
export class Leases {
  constructor(private readonly ctx: StoreContext) {}

  /** Takes the shard if it is free or expired, with a new, greater epoch. */
  async acquire(shard: number, owner: string, ttlMs: number): Promise<AcquireResult> {
    const { keys, scripts } = this.ctx;
    const r = await scripts.leaseAcquire(
      [keys.lease(shard), keys.epoch(shard), keys.epochs(shard)],
      [owner, ttlMs],
    );
    return r[0] === 1
      ? { acquired: true, lease: { shard, owner, epoch: Number(r[1]), expiresAt: r[2] } }
      : { acquired: false, owner: String(r[1]), expiresAt: r[2] };
  }

  /** Extends a held lease; {@link FencedError} if it was lost or had expired. */
  async renew(lease: Lease, ttlMs: number): Promise<Lease> {
    const expiresAt = await this.ctx.scripts.leaseRenew(
      [this.ctx.keys.lease(lease.shard)],
      [lease.owner, lease.epoch, ttlMs],
    );
    return { ...lease, expiresAt };
  }

  /** Gives the shard up at once; false if the lease was no longer held. */
  async release(lease: Lease): Promise<boolean> {
    const r = await this.ctx.scripts.leaseRelease(
      [this.ctx.keys.lease(lease.shard)],
      [lease.owner, lease.epoch],
    );
    return r === 1;
  }

  /** Who holds each shard now (shards never leased or lapsed are absent). */
  async list(): Promise<Lease[]> {
    const all = await Promise.all(
      Array.from({ length: this.ctx.keys.shards }, (_, shard) => this.read(shard)),
    );
    return all.filter((l): l is Lease => l !== null);
  }

  /**
   * Who holds `shard` now (null: nobody). One shard at a time, so that on a Cluster a caller can
   * tell the shards of a lost master from the rest.
   */
  async read(shard: number): Promise<Lease | null> {
    const { keys, redis } = this.ctx;
    const [owner, epoch, expiresAt] = await redis.hmget(
      keys.lease(shard),
      'owner',
      'epoch',
      'expiresAt',
    );
    return owner && epoch && expiresAt
      ? { shard, owner, epoch: Number(epoch), expiresAt: Number(expiresAt) }
      : null;
  }

  /** See {@link EpochHistory}. */
  async history(shard: number): Promise<EpochHistory> {
    const raw = await this.ctx.redis.hgetall(this.ctx.keys.epochs(shard));
    const owners = new Map<number, string>();
    let from: number | undefined;
    for (const [k, v] of Object.entries(raw)) {
      if (k === 'from') from = Number(v);
      else if (/^\d+$/.test(k)) owners.set(Number(k), v);
    }
    return from === undefined ? { owners } : { owners, from };
  }

  /** The highest epoch ever issued for the shard (0 if none). */
  async epoch(shard: number): Promise<number> {
    return Number((await this.ctx.redis.get(this.ctx.keys.epoch(shard))) ?? 0);
  }
}

/** Projector instances (`projectors`): heartbeats, so instances that own nothing yet count. */
export class Projectors {
  constructor(private readonly ctx: StoreContext) {}

  /** Marks `instance` alive for `ttlMs` (server clock); returns every live instance, sorted. */
  async heartbeat(instance: string, ttlMs: number): Promise<string[]> {
    return this.ctx.scripts.projectorsHeartbeat([this.ctx.keys.projectors()], [instance, ttlMs]);
  }

  /** Removes `instance` at once (it is shutting down). */
  async leave(instance: string): Promise<void> {
    await this.ctx.redis.zrem(this.ctx.keys.projectors(), instance);
  }
}

/** A task an owner puts away: the last entry it folded, and when its retention trim is due. */
export interface PutAway {
  taskId: string;
  foldedId: string;
  /** Server time (ms); none when no trim is owed. */
  trimDueAt?: number;
}

/**
 * The task ids of each shard a new owner loads (`live`): every task appended to (append-4.lua puts
 * it there with its entries) and not put away since. Feeds are bounded and cut behind what an owner
 * read, so a new owner finds here a task whose notes are gone. A task put away is at rest in its
 * snapshot and leaves `live`, so a takeover costs what is active, not every task the shard ever
 * saw; its next append brings it back. Tasks put away whose streams still hold entries the
 * retention will trim are in `trims`.
 */
export class ShardTasks {
  constructor(private readonly ctx: StoreContext) {}

  /**
   * Starts the live set from the task set of earlier versions (every task they loaded), once per
   * shard; a no-op after. Resolves whether it did it now.
   */
  async startLive(shard: number): Promise<boolean> {
    const { keys } = this.ctx;
    const r = await this.ctx.scripts.liveInit(
      [keys.shardLive(shard), keys.shardTasks(shard), keys.shardLiveStarted(shard)],
      [],
    );
    return r === 1;
  }

  /**
   * Takes a task out of the set a new owner loads and schedules its retention trim, fenced (a
   * stale owner cannot put away a task the new owner holds), and only if its snapshot is at
   * `foldedId` and nothing was appended after it (Redis holds the task as it was folded). Resolves
   * whether it was put away.
   */
  async putAway(lease: Lease, t: PutAway): Promise<boolean> {
    this.ctx.checkLease(lease, t.taskId);
    const { keys } = this.ctx;
    const r = await this.ctx.scripts.tasksPutAway(
      [
        keys.lease(lease.shard),
        keys.shardLive(lease.shard),
        keys.shardTrims(lease.shard),
        keys.taskStream(t.taskId),
        keys.snapshot(t.taskId),
        keys.taskDedupe(t.taskId),
      ],
      [
        fenceToken(lease),
        t.taskId,
        t.foldedId,
        t.trimDueAt === undefined ? '' : Math.ceil(t.trimDueAt),
      ],
    );
    return r === 1;
  }

  /** Candidates for their retention trim at `now` (this clock's ms; the trim checks the server's). */
  async trimsDue(shard: number, now: number, limit: number): Promise<string[]> {
    return this.ctx.redis.zrangebyscore(
      this.ctx.keys.shardTrims(shard),
      '-inf',
      Math.floor(now),
      'LIMIT',
      0,
      limit,
    );
  }

  /**
   * The retention trim of a task put away, if due by the server's clock, fenced; its schedule
   * entry goes with it. Resolves the entries removed, or null when it was not due.
   */
  async trimDue(lease: Lease, taskId: string, retainMs: number): Promise<number | null> {
    this.ctx.checkLease(lease, taskId);
    const { keys } = this.ctx;
    const r = await this.ctx.scripts.trimDue(
      [
        keys.lease(lease.shard),
        keys.shardTrims(lease.shard),
        keys.snapshot(taskId),
        keys.taskStream(taskId),
        keys.checkpoints(taskId),
        keys.historySpans(taskId),
      ],
      [fenceToken(lease), taskId, retainMs],
    );
    return r < 0 ? null : r;
  }

  /**
   * Records tasks as live, and in the task set of earlier versions (every task loaded), which a
   * projector of an earlier version loads: it then finds every task a new owner held, beside the
   * feed notes no owner read. Their appends made them live already; this covers the notes of
   * writers from before the live set (a rolling upgrade).
   */
  async add(shard: number, taskIds: readonly string[]): Promise<void> {
    if (taskIds.length === 0) return;
    for (const t of taskIds) {
      if (this.ctx.shardOf(t) !== shard) throw new Error(`task ${t} is not in shard ${shard}`);
    }
    const { keys } = this.ctx;
    const r = await this.ctx.redis
      .multi()
      .sadd(keys.shardLive(shard), ...taskIds)
      .sadd(keys.shardTasks(shard), ...taskIds)
      .exec();
    const failed = r?.find(([err]) => err);
    if (!r || failed) throw failed?.[0] ?? new Error('task registration was discarded');
  }

  /** The tasks a new owner loads: appended to and not put away since. */
  async listLive(shard: number): Promise<string[]> {
    return (await this.ctx.redis.smembers(this.ctx.keys.shardLive(shard))).sort();
  }
}
