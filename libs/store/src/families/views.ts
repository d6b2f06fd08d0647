import { TaskView } from '@baton/protocol';
import { decodeChecked } from '../stored';
import type { Lease } from './leases';
import type { StoreContext } from './shared';

/** Read models: each shard's current task views (`views`) and their update seqs (`vseq`). */
export class Views {
  constructor(private readonly ctx: StoreContext) {}

  /** Stores a task's current view, fenced; a view older than the stored one is ignored. */
  async write(lease: Lease, view: TaskView): Promise<boolean> {
    this.ctx.checkLease(lease, view.taskId);
    const { keys } = this.ctx;
    const r = await this.ctx.scripts.viewWrite(
      [keys.lease(lease.shard), keys.views(lease.shard), keys.viewSeqs(lease.shard)],
      [lease.epoch, view.taskId, view.seq, JSON.stringify(view)],
    );
    return r === 1;
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
