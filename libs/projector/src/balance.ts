import { fnv1a32 } from '@baton/store';

/**
 * Shard balancing arithmetic, pure: given who holds which shard and which instances are alive,
 * what one instance should take and give up now. Every instance runs it on its own view each
 * renew tick; the views converge because they come from the same Redis.
 */
export interface BalanceInput {
  /** This instance. */
  self: string;
  /** Number of shards of the deployment. */
  shards: number;
  /** Instances alive by their heartbeats (an instance that owns nothing yet still counts). */
  instances: readonly string[];
  /** Current holder of each held shard; absent shards are free. */
  owners: ReadonlyMap<number, string>;
}

export interface BalancePlan {
  /** Free shards to try to acquire, best first. */
  acquire: number[];
  /** Shards to release (at most one per tick, so the others keep running meanwhile). */
  release: number[];
  /** The share of each live instance. */
  targets: Map<string, number>;
}

/**
 * Each live instance's share: floor(N/k) each, and the N mod k extra shards go to the instances
 * holding the most now (ties by id), so balancing moves as few shards as it can.
 */
export function shares(
  shards: number,
  instances: readonly string[],
  owned: ReadonlyMap<string, number>,
): Map<string, number> {
  const live = [...new Set(instances)].sort();
  const out = new Map<string, number>();
  if (live.length === 0) return out;
  const base = Math.floor(shards / live.length);
  const extra = shards % live.length;
  const byLoad = [...live].sort(
    (a, b) => (owned.get(b) ?? 0) - (owned.get(a) ?? 0) || (a < b ? -1 : a > b ? 1 : 0),
  );
  byLoad.forEach((id, i) => out.set(id, base + (i < extra ? 1 : 0)));
  return out;
}

export function plan(input: BalanceInput): BalancePlan {
  const { self, shards, owners } = input;
  const owned = new Map<string, number>();
  for (const owner of owners.values()) owned.set(owner, (owned.get(owner) ?? 0) + 1);
  const live = new Set([...input.instances, ...owned.keys(), self]);
  const targets = shares(shards, [...live], owned);
  const mine = owned.get(self) ?? 0;
  const target = targets.get(self)!;
  const free: number[] = [];
  for (let s = 0; s < shards; s++) if (!owners.has(s)) free.push(s);
  // Each instance prefers different free shards, so instances starting together rarely collide.
  const preference = (s: number) => fnv1a32(`${self}/${s}`);
  const acquire =
    mine < target ? free.sort((a, b) => preference(a) - preference(b)).slice(0, target - mine) : [];
  const release: number[] = [];
  if (mine > target) {
    // Give a shard up only if someone below its share would not be served by the free ones.
    let deficit = 0;
    for (const [id, t] of targets)
      if (id !== self) deficit += Math.max(0, t - (owned.get(id) ?? 0));
    if (deficit > free.length) {
      const mineShards: number[] = [];
      for (const [s, owner] of owners) if (owner === self) mineShards.push(s);
      mineShards.sort((a, b) => preference(b) - preference(a));
      release.push(mineShards[0]!);
    }
  }
  return { acquire, release, targets };
}
