import { InboxMessage } from '@baton/protocol';
import { InvalidEntryError } from '../errors';
import { decodeChecked, zodReason } from '../stored';
import type { StreamTail } from '../tail';
import { fenceToken, type Lease } from './leases';
import { field, Refused, type Fields, type Page, type StoreContext } from './shared';

export interface StoredInboxMessage {
  id: string;
  message: InboxMessage;
}

/** Execution inboxes (`xi:`): what the shard owner hands to an execution's worker. */
export class Inbox {
  constructor(private readonly ctx: StoreContext) {}

  /** Hands messages (an admitted prompt, a cancel) to an execution's worker, fenced. */
  async append(
    lease: Lease,
    taskId: string,
    executionId: string,
    messages: readonly InboxMessage[],
  ): Promise<string[]> {
    this.ctx.checkLease(lease, taskId);
    const valid = messages.map((raw, index) => {
      const r = InboxMessage.safeParse(raw);
      if (!r.success) throw new InvalidEntryError(index, zodReason(r.error));
      if (r.data.taskId !== taskId || r.data.executionId !== executionId) {
        throw new InvalidEntryError(index, `message for ${r.data.taskId}/${r.data.executionId}`);
      }
      return r.data;
    });
    const { keys, opts } = this.ctx;
    return this.ctx.scripts.inboxAppend(
      [keys.lease(lease.shard), keys.inbox(taskId, executionId)],
      [fenceToken(lease), opts.inboxMaxLen, ...valid.map((m) => JSON.stringify(m))],
    );
  }

  async read(
    taskId: string,
    executionId: string,
    afterId = '0-0',
    count = 100,
  ): Promise<Page<StoredInboxMessage>> {
    const key = this.ctx.keys.inbox(taskId, executionId);
    return this.ctx.page(key, this.ctx.shardOf(taskId), afterId, count, this.decoder(taskId));
  }

  /** Follows one execution's inbox with a blocking read on a dedicated connection. */
  tail(taskId: string, executionId: string, from = '$'): StreamTail<StoredInboxMessage> {
    const key = this.ctx.keys.inbox(taskId, executionId);
    return this.ctx.follow([{ key, from, shard: this.ctx.shardOf(taskId) }], this.decoder(taskId));
  }

  /** Removes an ended execution's inbox. */
  async remove(taskId: string, executionId: string): Promise<void> {
    await this.ctx.redis.del(this.ctx.keys.inbox(taskId, executionId));
  }

  private decoder(taskId: string) {
    return (id: string, fields: Fields): StoredInboxMessage | Refused => {
      const r = decodeChecked(field(fields, 'e'), InboxMessage);
      if (r.ok && r.value.taskId === taskId) return { id, message: r.value };
      return new Refused(r.ok ? `taskId ${r.value.taskId} in an inbox of ${taskId}` : r.reason);
    };
  }
}
