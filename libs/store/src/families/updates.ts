import { Update } from '@baton/protocol';
import { InvalidEntryError } from '../errors';
import type { ScriptArgs } from '../scripts';
import { decodeStoredUpdate, zodReason } from '../stored';
import type { StreamTail } from '../tail';
import type { Lease } from './leases';
import { field, Refused, type Fields, type Page, type StoreContext } from './shared';

export interface StoredUpdate {
  id: string;
  update: Update;
}

function decodeUpdate(id: string, fields: Fields): StoredUpdate | Refused {
  const r = decodeStoredUpdate(field(fields, 'u'));
  return r.ok ? { id, update: r.value } : new Refused(r.reason);
}

/** Client updates: each shard's update stream (`updates`) and the last seq per task (`useq`). */
export class Updates {
  constructor(private readonly ctx: StoreContext) {}

  /** See {@link EventStore.publishUpdates}. */
  async publish(
    lease: Lease,
    taskId: string,
    updates: readonly Update[],
  ): Promise<{ published: number; lastSeq: number }> {
    this.ctx.checkLease(lease, taskId);
    const { keys, opts } = this.ctx;
    const args: ScriptArgs<'publishUpdates'> = [lease.epoch, taskId, opts.updatesMaxLen];
    updates.forEach((u, index) => {
      const r = Update.safeParse(u);
      if (!r.success) throw new InvalidEntryError(index, zodReason(r.error));
      if (r.data.entry === undefined || r.data.last === undefined) {
        throw new InvalidEntryError(index, 'an update must name its entry and mark its last');
      }
      if (r.data.taskId !== taskId) {
        throw new InvalidEntryError(index, `update of ${r.data.taskId} published for ${taskId}`);
      }
      args.push(r.data.seq, JSON.stringify(r.data));
    });
    const [published, lastSeq] = await this.ctx.scripts.publishUpdates(
      [keys.lease(lease.shard), keys.updates(lease.shard), keys.updateSeqs(lease.shard)],
      args,
    );
    return { published, lastSeq };
  }

  async read(shard: number, afterId: string, count: number): Promise<Page<StoredUpdate>> {
    return this.ctx.page(this.ctx.keys.updates(shard), shard, afterId, count, decodeUpdate);
  }

  tail(
    shards: readonly number[],
    from: Readonly<Record<number, string>>,
  ): StreamTail<StoredUpdate> {
    const stream = (shard: number) => this.ctx.keys.updates(shard);
    return this.ctx.followShards(shards, from, stream, decodeUpdate);
  }

  async lastSeq(taskId: string): Promise<number> {
    const v = await this.ctx.redis.hget(this.ctx.keys.updateSeqs(this.ctx.shardOf(taskId)), taskId);
    return Number(v ?? 0);
  }
}
