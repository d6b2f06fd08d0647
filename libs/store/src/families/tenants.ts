import { taskKey } from '@baton/protocol';
import type { StoreContext } from './shared';

/**
 * The task ids of each tenant, for listing and for telling a tenant's task from an absent one.
 * Written only by what writes to the task (a command, an execution start), never by a read.
 *
 * Each task is recorded in its own shard (`{b:<shard>}:tn:<tenant>`), so recording and checking
 * it touch only the master its task lives on: one key per tenant would make every task of the
 * tenant wait on whichever Cluster master held that key. Versions before kept one set per tenant
 * (`{t:<tenant>}:tasks`); it is read for what it holds and never written again.
 */
export class Tenants {
  constructor(private readonly ctx: StoreContext) {}

  private key(tenant: string, taskId: string): string {
    const { keys } = this.ctx;
    // taskKey refuses a tenant with braces or a `/`.
    return keys.tenantShardTasks(keys.shardOf(taskKey(tenant, taskId)), tenant);
  }

  /** Records `taskId` (a client's id, not a key) among the tasks of `tenant`. Idempotent. */
  async add(tenant: string, taskId: string): Promise<void> {
    await this.ctx.redis.sadd(this.key(tenant, taskId), taskId);
  }

  /** Whether `tenant` has a task `taskId`. */
  async has(tenant: string, taskId: string): Promise<boolean> {
    const { redis, keys } = this.ctx;
    if ((await redis.sismember(this.key(tenant, taskId), taskId)) === 1) return true;
    return (await redis.sismember(keys.tenantTasks(tenant), taskId)) === 1;
  }

  /**
   * Charges `bytes` the tenant's clients are about to append against `quota` bytes over the last
   * `windowMs` (1/24 of it per bucket). Refused: nothing is charged, and `stored` says how many
   * the window holds.
   */
  async chargeStored(
    tenant: string,
    bytes: number,
    quota: number,
    windowMs: number,
  ): Promise<{ charged: boolean; stored: number }> {
    const [charged, stored] = await this.ctx.scripts.tenantStored(
      [this.ctx.keys.tenantStored(tenant)],
      [bytes, quota, windowMs, Math.max(1, Math.ceil(windowMs / 24))],
    );
    return { charged: charged === 1, stored };
  }

  /** The task ids of a tenant, sorted: every shard's, and what the older list holds. */
  async tasks(tenant: string): Promise<string[]> {
    const { redis, keys } = this.ctx;
    const lists = await Promise.all([
      redis.smembers(keys.tenantTasks(tenant)),
      ...Array.from({ length: keys.shards }, (_, s) =>
        redis.smembers(keys.tenantShardTasks(s, tenant)),
      ),
    ]);
    return [...new Set(lists.flat())].sort();
  }
}
