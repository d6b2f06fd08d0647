import type { z } from 'zod';
import { compareIds } from '../ids';
import { fenceToken, type Lease } from './leases';
import type { StoreContext } from './shared';

export interface Snapshot<S> {
  /** The task stream id the state covers: replay starts after it. */
  id: string;
  state: S;
  epoch: number;
}

/**
 * Task snapshots (`tsnap:`), checkpoints (`tckpt:`) and trimming task streams behind them (with
 * the history spans, `thist:`, that start at the checkpoints a trim removes).
 */
export class Snapshots {
  constructor(private readonly ctx: StoreContext) {}

  /**
   * Stores `state` as covering the task stream up to `id`, fenced; never moves back, and never
   * past the stream's last entry ({@link StreamBehindError}: Redis lost writes folded). With
   * `checkpointEveryMs`, it is also kept as a checkpoint when the newest one is that much older
   * (see {@link Snapshots.trim} and the history query). Returns the checkpoint before it when it
   * was kept as one (not the first): the history span between the two can then be built.
   */
  async write(
    lease: Lease,
    taskId: string,
    id: string,
    state: unknown,
    checkpointEveryMs = 0,
  ): Promise<{ previousCheckpoint: string | null }> {
    this.ctx.checkLease(lease, taskId);
    const { keys } = this.ctx;
    const previous = await this.ctx.scripts.snapshotWrite(
      [
        keys.lease(lease.shard),
        keys.snapshot(taskId),
        keys.checkpoints(taskId),
        keys.taskStream(taskId),
      ],
      [fenceToken(lease), id, JSON.stringify(state), checkpointEveryMs],
    );
    return { previousCheckpoint: previous === '' ? null : previous };
  }

  /** One checkpoint's state, as stored. */
  async checkpoint(taskId: string, id: string): Promise<unknown> {
    const json = await this.ctx.redis.hget(this.ctx.keys.checkpoints(taskId), id);
    return json === null ? undefined : (JSON.parse(json) as unknown);
  }

  /** The task's checkpoints (states it can be folded forward from), oldest first. */
  async checkpoints(taskId: string): Promise<{ id: string; state: unknown }[]> {
    const flat = await this.ctx.redis.hgetall(this.ctx.keys.checkpoints(taskId));
    return Object.entries(flat)
      .map(([id, json]) => ({ id, state: JSON.parse(json) as unknown }))
      .sort((a, b) => compareIds(a.id, b.id));
  }

  /** The task's snapshot, its state checked with `schema` when given. */
  async read<S = unknown>(taskId: string, schema?: z.ZodType<S>): Promise<Snapshot<S> | null> {
    const [id, state, epoch] = await this.ctx.redis.hmget(
      this.ctx.keys.snapshot(taskId),
      'id',
      'state',
      'epoch',
    );
    if (!id || state === null || state === undefined) return null;
    const parsed: unknown = JSON.parse(state);
    return { id, state: schema ? schema.parse(parsed) : (parsed as S), epoch: Number(epoch) };
  }

  /**
   * Removes the entries strictly before the snapshot's id, fenced. With `retainMs`, entries
   * younger than that (by the server's clock) stay, cut at a checkpoint so that they can still
   * be folded (nothing is trimmed before the first checkpoint that old). With `hotMs` shorter
   * than the retention, entries older than it go too where the history spans answer for them
   * (cut at a checkpoint; the checkpoints and spans stay for the retention). Returns how many.
   */
  async trim(lease: Lease, taskId: string, retainMs = 0, hotMs = 0): Promise<number> {
    this.ctx.checkLease(lease, taskId);
    const { keys } = this.ctx;
    return this.ctx.scripts.trim(
      [
        keys.lease(lease.shard),
        keys.snapshot(taskId),
        keys.taskStream(taskId),
        keys.checkpoints(taskId),
        keys.historySpans(taskId),
      ],
      [fenceToken(lease), retainMs, hotMs],
    );
  }
}
