import type { EventStore } from '@baton/store';

/** The answer for a task of another tenant, word for word the one for a task that does not exist. */
export class NotFoundError extends Error {
  override readonly name = 'NotFoundError';
}

export const taskNotFound = (taskId: string) => new NotFoundError(`task ${taskId} not found`);

const MAX_CACHED = 100_000;

/**
 * A task belongs to the first tenant that touches it (store.tenants.claim) and to it only. Owners
 * never change, so what this process learned about one is cached.
 */
export class Tenancy {
  private readonly owners = new Map<string, string>();

  constructor(private readonly store: EventStore) {}

  private remember(taskId: string, owner: string) {
    if (this.owners.size >= MAX_CACHED) this.owners.delete(this.owners.keys().next().value!);
    this.owners.set(taskId, owner);
  }

  /** Claims the task for `tenant` if it is free; throws NotFoundError if another tenant has it. */
  async claim(taskId: string, tenant: string): Promise<void> {
    let owner = this.owners.get(taskId);
    if (owner === undefined) {
      owner = await this.store.tenants.claim(taskId, tenant);
      this.remember(taskId, owner);
    }
    if (owner !== tenant) throw taskNotFound(taskId);
  }

  /** Throws NotFoundError unless `tenant` owns the task (unknown tasks are not claimed). */
  async check(taskId: string, tenant: string): Promise<void> {
    let owner = this.owners.get(taskId);
    if (owner === undefined) {
      const o = await this.store.tenants.of(taskId);
      if (o !== null) this.remember(taskId, o);
      owner = o ?? undefined;
    }
    if (owner !== tenant) throw taskNotFound(taskId);
  }

  tasks(tenant: string): Promise<string[]> {
    return this.store.tenants.tasks(tenant);
  }
}
