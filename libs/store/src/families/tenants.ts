import type { StoreContext } from './shared';

/**
 * The task ids of each tenant (`{t:<tenant>}:tasks`), for listing and for telling a tenant's task
 * from an absent one. Written only by what writes to the task (a command, an execution start),
 * never by a read.
 */
export class Tenants {
  constructor(private readonly ctx: StoreContext) {}

  /** Records `taskId` (a client's id, not a key) among the tasks of `tenant`. Idempotent. */
  async add(tenant: string, taskId: string): Promise<void> {
    await this.ctx.redis.sadd(this.ctx.keys.tenantTasks(tenant), taskId);
  }

  /** Whether `tenant` has a task `taskId`. */
  async has(tenant: string, taskId: string): Promise<boolean> {
    return (await this.ctx.redis.sismember(this.ctx.keys.tenantTasks(tenant), taskId)) === 1;
  }

  /** The task ids of a tenant, sorted. */
  async tasks(tenant: string): Promise<string[]> {
    return (await this.ctx.redis.smembers(this.ctx.keys.tenantTasks(tenant))).sort();
  }
}
