import { splitTaskKey, taskKey, type TaskView, type Update } from '@baton/protocol';
import type { EventStore } from '@baton/store';

/** The answer for a task that does not exist — which is what a task of another tenant is. */
export class NotFoundError extends Error {
  override readonly name = 'NotFoundError';
}

export const taskNotFound = (taskId: string) => new NotFoundError(`task ${taskId} not found`);

const MAX_CACHED = 100_000;

/** The client's own id of a task key (a key without a tenant is its own id). */
export function clientTaskId(key: string): string {
  return splitTaskKey(key)?.taskId ?? key;
}

/** A view as its tenant's client sees it: under the client's task id, not the key. */
export function clientView(view: TaskView): TaskView {
  return { ...view, taskId: clientTaskId(view.taskId) };
}

/** An update as its tenant's client sees it. */
export function clientUpdate<U extends Update>(u: U): U {
  return { ...u, taskId: clientTaskId(u.taskId) };
}

/**
 * Task ids are tenant-scoped: a client's task id `t` of tenant `a` is the task `a/t` below the
 * gateway (libs/protocol task-key.ts), so another tenant's task of the same id is another task,
 * and to anyone else it does not exist. A tenant's task list (for listing, and for the reads
 * that answer "not found" for a task it never wrote) is written only before a write to the task,
 * never by a read or a subscription. Entries are never removed, so what this process has seen
 * written is cached: the tasks in use, by last use (at most MAX_CACHED, none unused for
 * `idleMs`), so a gateway that served many tasks over time does not hold every one it saw.
 */
export class Tenancy {
  /** Task keys known to be their tenant's, in order of last use, with its time (Date.now()). */
  private readonly known = new Map<string, number>();
  private sweptAt: number;

  constructor(
    private readonly store: EventStore,
    /** 0: kept until MAX_CACHED pushes them out. */
    private readonly idleMs = 0,
    private readonly now: () => number = () => Date.now(),
  ) {
    this.sweptAt = now();
  }

  /** True when the key is known; marks it used. */
  private knows(key: string): boolean {
    if (!this.known.has(key)) return false;
    this.known.delete(key);
    this.known.set(key, this.now());
    return true;
  }

  private remember(key: string) {
    const now = this.now();
    if (this.idleMs > 0 && now - this.sweptAt >= this.idleMs / 4) {
      this.sweptAt = now;
      for (const [k, usedAt] of this.known) {
        if (now - usedAt < this.idleMs) break;
        this.known.delete(k);
      }
    }
    if (this.known.size >= MAX_CACHED) this.known.delete(this.known.keys().next().value!);
    this.known.set(key, now);
  }

  /** Task keys held (for tests and the soak benchmark). */
  get size(): number {
    return this.known.size;
  }

  /** The key of the tenant's task: everything below the gateway names the task by it. */
  key(tenant: string, taskId: string): string {
    return taskKey(tenant, taskId);
  }

  /** Before a write to the task (a command, an execution): records it among the tenant's tasks. */
  async write(tenant: string, taskId: string): Promise<string> {
    const key = taskKey(tenant, taskId);
    if (!this.knows(key)) {
      await this.store.tenants.add(tenant, taskId);
      this.remember(key);
    }
    return key;
  }

  /** The key of a task the tenant has written to; NotFoundError when it has none of that id. */
  async existing(tenant: string, taskId: string): Promise<string> {
    const key = taskKey(tenant, taskId);
    if (!this.knows(key)) {
      if (!(await this.store.tenants.has(tenant, taskId))) throw taskNotFound(taskId);
      this.remember(key);
    }
    return key;
  }

  tasks(tenant: string): Promise<string[]> {
    return this.store.tenants.tasks(tenant);
  }
}
