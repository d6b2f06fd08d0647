import { TaskView } from '@baton/protocol';
import { decodeChecked } from '../stored';
import { fenceToken, type Lease } from './leases';
import type { StoreContext } from './shared';

/**
 * Read models: each shard's current task views (`views`). A view is stored in the same call as the
 * updates it reflects (commit-6.lua), so its version is the task's last published update seq
 * (`useq`), with no seq of its own to keep.
 */
export class Views {
  constructor(private readonly ctx: StoreContext) {}

  /**
   * Stores a task's current view, fenced, if its seq is the task's last published update seq and
   * no view is stored at that seq yet (the owner's steps write views with their updates: see
   * {@link EventStore.commit}).
   */
  async write(lease: Lease, view: TaskView): Promise<boolean> {
    this.ctx.checkLease(lease, view.taskId);
    const { keys, opts } = this.ctx;
    const [, , stored] = await this.ctx.scripts.commit(
      [
        keys.lease(lease.shard),
        keys.taskStream(view.taskId),
        keys.feed(lease.shard),
        keys.updates(lease.shard),
        keys.updateSeqs(lease.shard),
        keys.views(lease.shard),
      ],
      [
        fenceToken(lease),
        view.taskId,
        '',
        opts.feedMaxLen,
        opts.updatesMaxLen,
        0,
        view.seq,
        JSON.stringify(view),
      ],
    );
    return stored === 1;
  }

  /** The task's current view, or null when no owner has written one yet. */
  async read(taskId: string): Promise<TaskView | null> {
    const shard = this.ctx.shardOf(taskId);
    const key = this.ctx.keys.views(shard);
    const json = await this.ctx.redis.hget(key, taskId);
    if (json === null) return null;
    const r = decodeChecked(json, TaskView);
    if (r.ok) return r.value;
    await this.ctx.deadLetter(shard, key, taskId, r.reason, ['v', json]);
    return null;
  }
}
