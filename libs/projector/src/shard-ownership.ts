import { FencedError, type EventStore, type Lease } from '@baton/store';
import { plan } from './balance';
import type { Logger } from '@baton/health';
import type { Metrics } from './metrics';

export interface OwnershipHooks {
  /** A shard was acquired under `lease`: start owning it. */
  acquired(lease: Lease): void;
  /** The lease was lost (taken over, or lapsed): stop writing for the shard at once. */
  lost(shard: number, reason: string): void;
  /** The shard is about to be released: finish or abandon the steps in flight. */
  releasing(shard: number): Promise<void>;
}

/**
 * The shard leases of one instance: every tick it announces itself, renews what it holds, and
 * takes or gives up shards so that live instances hold about N/k each (see balance.ts).
 */
/** How long lost leases are gathered into one log line. */
const LOST_REPORT_MS = 200;

export class ShardOwnership {
  readonly held = new Map<number, Lease>();
  /** performance.now() of the last answer Redis gave this instance (a renewal or a round). */
  lastReached = Number.NEGATIVE_INFINITY;
  private readonly renewing = new Set<number>();
  /** Leases lost since the last line about them: an outage past the lease loses them all at once. */
  private lostSince: { shard: number; epoch: number; reason: string }[] = [];
  private balancing: Promise<void> | undefined;

  constructor(
    private readonly store: EventStore,
    private readonly instanceId: string,
    private readonly ttlMs: number,
    private readonly log: Logger,
    private readonly metrics: Metrics,
    private readonly hooks: OwnershipHooks,
  ) {}

  /**
   * Held leases are renewed first, each on its own and never waiting for another: on a Cluster a
   * shard lives on one master, and a master that is down must not cost the leases of shards on
   * the healthy ones — not by an error, and not by a renewal that hangs until ioredis gives up on
   * it. Announcing ourselves, listing and balancing come after, as one round at a time, each
   * call of it bounded (see balance). A tick waits for the round at most half a lease, so the
   * next tick's renewals keep their cadence.
   */
  async tick(): Promise<void> {
    this.renewAll();
    this.balancing ??= this.balance().finally(() => (this.balancing = undefined));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.balancing,
      new Promise<void>((r) => (timer = setTimeout(r, this.ttlMs / 2))),
    ]).finally(() => clearTimeout(timer));
  }

  /** Resolves when the balancing round in flight, if any, is over. */
  balanced(): Promise<void> {
    return this.balancing ?? Promise.resolve();
  }

  /**
   * One balancing round. Each Redis call of it is bounded and judged on its own: on a Cluster
   * the instance set and each shard's lease may live on different masters, and a lost master
   * (whose commands hang until it is back) must cost the round only what lives on it. Without
   * the instance set, the instances holding a lease count as alive (balance.ts does too); a shard
   * whose lease cannot be read is not taken, and nothing is given up on such a partial view.
   */
  private async balance(): Promise<void> {
    const bound = this.ttlMs / 2;
    const [beat, ...reads] = await Promise.allSettled([
      answerWithin(this.store.projectors.heartbeat(this.instanceId, this.ttlMs), bound),
      ...Array.from({ length: this.store.keys.shards }, (_, s) =>
        answerWithin(this.store.leases.read(s), bound),
      ),
    ]);
    const unreadable = new Set<number>();
    const leases: Lease[] = [];
    reads.forEach((r, shard) => {
      if (r.status === 'rejected') unreadable.add(shard);
      else if (r.value) leases.push(r.value);
    });
    if (beat.status === 'rejected' || unreadable.size > 0) {
      this.metrics.errors.inc({ op: 'balance' });
      const err = beat.status === 'rejected' ? beat.reason : undefined;
      this.log.debug(
        { err, unreadable: [...unreadable] },
        'balancing without the shards (or the instance set) Redis did not answer for',
      );
    }
    if (beat.status === 'rejected' && unreadable.size === this.store.keys.shards) return;
    this.lastReached = performance.now();
    const instances = beat.status === 'fulfilled' ? beat.value : [];
    const owners = new Map<number, string>();
    for (const l of leases) {
      // A lease under our name that we do not hold (a lost reply) is ours to take again.
      if (l.owner === this.instanceId && !this.held.has(l.shard)) continue;
      owners.set(l.shard, l.owner);
    }
    // Held shards missing from the list lapsed between renew and list; the next renew says so.
    for (const s of this.held.keys()) if (!owners.has(s)) owners.set(s, this.instanceId);
    const p = plan({
      self: this.instanceId,
      shards: this.store.keys.shards,
      instances,
      owners,
    });
    const acquire = p.acquire.filter((s) => !unreadable.has(s));
    const results = await Promise.allSettled(
      acquire.map((shard) =>
        answerWithin(this.store.leases.acquire(shard, this.instanceId, this.ttlMs), bound),
      ),
    );
    for (const [i, settled] of results.entries()) {
      if (settled.status === 'rejected') {
        this.metrics.errors.inc({ op: 'lease_acquire' });
        this.log.warn({ err: settled.reason, shard: acquire[i] }, 'lease acquisition failed');
        continue;
      }
      const r = settled.value;
      if (!r.acquired) continue;
      const shard = r.lease.shard;
      this.held.set(shard, r.lease);
      this.metrics.leaseChanges.inc({ change: 'acquired' });
      this.log.info(
        {
          shard,
          epoch: r.lease.epoch,
          expiresAt: r.lease.expiresAt,
          acquiredAt: r.lease.expiresAt - this.ttlMs,
        },
        'lease acquired',
      );
      this.hooks.acquired(r.lease);
    }
    // Never give up a shard on a partial view: the instances it would go to may be the unseen.
    if (beat.status === 'fulfilled' && unreadable.size === 0) {
      for (const shard of p.release) await this.release(shard, 'rebalance');
    }
  }

  /** Starts a renewal for every held lease that has none in flight. */
  private renewAll(): void {
    for (const lease of this.held.values()) {
      if (this.renewing.has(lease.shard)) continue;
      this.renewing.add(lease.shard);
      void this.renew(lease).finally(() => this.renewing.delete(lease.shard));
    }
  }

  private async renew(lease: Lease): Promise<void> {
    try {
      const renewed = await this.store.leases.renew(lease, this.ttlMs);
      this.lastReached = performance.now();
      if (this.held.get(lease.shard)?.epoch === lease.epoch) this.held.set(lease.shard, renewed);
    } catch (err) {
      if (err instanceof FencedError) this.lose(lease.shard, err.message, lease.epoch);
      else {
        this.metrics.errors.inc({ op: 'lease_renew' });
        this.log.warn({ err, shard: lease.shard }, 'lease renewal failed; retrying next tick');
      }
    }
  }

  /**
   * The lease is gone (a renewal or a write was fenced). With `epoch`, only that lease: a renewal
   * of an earlier epoch that was still in flight when the shard was dropped and taken again must
   * not drop the new one.
   */
  lose(shard: number, reason: string, epoch?: number): void {
    const lease = this.held.get(shard);
    if (!lease || (epoch !== undefined && lease.epoch !== epoch)) return;
    this.held.delete(shard);
    this.metrics.leaseChanges.inc({ change: 'lost' });
    if (this.lostSince.push({ shard, epoch: lease.epoch, reason }) === 1) {
      setTimeout(() => this.reportLost(), LOST_REPORT_MS).unref();
    }
    this.hooks.lost(shard, reason);
  }

  /** One line for the leases lost together (each renewal finds its own within a few ms). */
  private reportLost(): void {
    const lost = this.lostSince;
    this.lostSince = [];
    if (lost.length === 1) {
      const [{ shard, epoch, reason }] = lost as [(typeof lost)[number]];
      this.log.warn({ shard, epoch, reason }, 'lease lost: dropping the shard');
      return;
    }
    const reasons = [...new Set(lost.map((l) => l.reason))];
    this.log.warn(
      { shards: lost.map((l) => l.shard), count: lost.length, reasons },
      `lease lost: dropping ${lost.length} shards`,
    );
  }

  async release(shard: number, why: string): Promise<void> {
    const lease = this.held.get(shard);
    if (!lease) return;
    await this.hooks.releasing(shard);
    this.held.delete(shard);
    const released = await this.store.leases.release(lease).catch((err: unknown) => {
      this.log.warn({ err, shard }, 'lease release failed; it lapses by itself');
      return false;
    });
    this.metrics.leaseChanges.inc({ change: 'released' });
    this.log.info({ shard, epoch: lease.epoch, released, why }, 'lease released');
  }

  /**
   * Gives every shard up (shutdown), then leaves the instance set. Waits at most one lease for
   * Redis: a lease whose master is down lapses by itself, and a shutdown must not hang on it.
   */
  async releaseAll(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const giveUp = new Promise<void>((r) => (timer = setTimeout(r, this.ttlMs)));
    await Promise.race([
      (async () => {
        await Promise.all([...this.held.keys()].map((s) => this.release(s, 'shutdown')));
        await this.store.projectors.leave(this.instanceId).catch(() => undefined);
      })(),
      giveUp,
    ]).finally(() => clearTimeout(timer));
  }
}

/** `p`, or a rejection once `ms` have passed without its answer (it may still land later). */
function answerWithin<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
