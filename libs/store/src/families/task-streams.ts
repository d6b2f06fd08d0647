import { StreamEntry } from '@baton/protocol';
import { InvalidEntryError, type StreamBehindError } from '../errors';
import { withReplicas, type ScriptArgs, type ScriptKeys } from '../scripts';
import { decodeStoredEntry, zodReason } from '../stored';
import type { StreamTail } from '../tail';
import { isCluster } from '../connection';
import { nextId } from '../ids';
import { fenceToken, stampedWithFence, type Lease } from './leases';
import { field, Refused, type Decode, type Page, type StoreContext } from './shared';

export interface StoredEntry {
  id: string;
  entry: StreamEntry;
}

/** Entries of the stream of `taskId`, envelope-checked; another task's entry is refused. */
function decoderOf(taskId: string): Decode<StoredEntry> {
  return (id, fields) => {
    const r = decodeStoredEntry(field(fields, 'e'));
    if (r.ok && r.value.taskId === taskId) return { id, entry: r.value };
    return new Refused(r.ok ? `taskId ${r.value.taskId} in the stream of ${taskId}` : r.reason);
  };
}

export interface FeedNote {
  shard: number;
  /** Id of the note in the shard feed. */
  id: string;
  taskId: string;
  /** Last id the append that wrote the note added to the task stream. */
  lastId: string;
}

/**
 * Task streams (`ts:`), their append dedupe (`tw:`) and the shard feeds (`feed`) that note every
 * append, for the shard's owner to follow.
 */
export class TaskStreams {
  constructor(private readonly ctx: StoreContext) {}

  private validateIn(taskId: string, entries: readonly unknown[]): StreamEntry[] {
    return validateEntries(taskId, entries);
  }

  /** See {@link EventStore.append}. */
  async append(taskId: string, entries: readonly StreamEntry[]): Promise<(string | null)[]> {
    const valid = this.validateIn(taskId, entries);
    if (valid.length === 0) return [];
    const { keys, opts } = this.ctx;
    const scriptKeys: ScriptKeys<'append'> = [
      keys.taskStream(taskId),
      keys.taskDedupe(taskId),
      keys.feed(this.ctx.shardOf(taskId)),
      keys.shardLive(this.ctx.shardOf(taskId)),
    ];
    const args: ScriptArgs<'append'> = [taskId, opts.feedMaxLen, opts.dedupeTtlMs, valid.length];
    for (const e of valid) args.push(e.writer.instance, e.writer.seq, JSON.stringify(e));
    const ids =
      opts.ackReplicas === 0
        ? await this.ctx.scripts.append(scriptKeys, args)
        : await this.appendReplicated(scriptKeys, args);
    return ids.map((id) => (typeof id === 'string' ? id : null));
  }

  private async appendReplicated(keys: ScriptKeys<'append'>, args: ScriptArgs<'append'>) {
    const { ackReplicas: want, ackTimeoutMs } = this.ctx.opts;
    const { reply, acknowledged } = await withReplicas(
      this.ctx.redis,
      'append',
      keys,
      args,
      want,
      ackTimeoutMs,
    );
    if (acknowledged < want) {
      throw new Error(
        `NOREPLICAS the append reached ${acknowledged} of ${want} replicas in ${ackTimeoutMs} ms`,
      );
    }
    return reply;
  }

  /** See {@link EventStore.appendFenced}. */
  async appendFenced(
    lease: Lease,
    taskId: string,
    expectedLastId: string,
    entries: readonly StreamEntry[],
  ): Promise<string[]> {
    this.ctx.checkLease(lease, taskId);
    const valid = stampedWithFence(lease, this.validateIn(taskId, entries));
    const { keys, opts } = this.ctx;
    return this.ctx.scripts.appendFenced(
      [keys.lease(lease.shard), keys.taskStream(taskId), keys.feed(lease.shard)],
      [
        fenceToken(lease),
        expectedLastId,
        taskId,
        opts.feedMaxLen,
        ...valid.map((e) => JSON.stringify(e)),
      ],
    );
  }

  /**
   * One page of a task stream, envelope-checked. Decoding stays synchronous per entry (this is the
   * catch-up hot path); the rare dead letters are written after the page is decoded.
   */
  async read(taskId: string, afterId: string, count: number): Promise<Page<StoredEntry>> {
    const key = this.ctx.keys.taskStream(taskId);
    return this.ctx.page(key, this.ctx.shardOf(taskId), afterId, count, decoderOf(taskId));
  }

  /** See {@link EventStore.readTaskAfterFolded}. */
  async readAfterFolded(
    taskId: string,
    foldedId: string,
    count: number,
  ): Promise<Page<StoredEntry>> {
    const key = this.ctx.keys.taskStream(taskId);
    return this.ctx.pageAfterKnown(
      key,
      this.ctx.shardOf(taskId),
      foldedId,
      count,
      decoderOf(taskId),
    );
  }

  /** See {@link EventStore.readTasksAfterFolded}. */
  async readManyAfterFolded(
    reads: readonly { taskId: string; foldedId: string }[],
    count: number,
  ): Promise<(Page<StoredEntry> | StreamBehindError | Error)[]> {
    if (reads.length === 0) return [];
    const seen = new Set<string>();
    for (const { taskId } of reads) {
      if (seen.has(taskId)) throw new Error(`task ${taskId} twice in one read`);
      seen.add(taskId);
    }
    const streams = reads.map(({ taskId, foldedId }) => ({
      key: this.ctx.keys.taskStream(taskId),
      shard: this.ctx.shardOf(taskId),
      knownId: foldedId,
      decode: decoderOf(taskId),
    }));
    // One XREAD reads streams of one slot on a Cluster: there, one per shard, side by side.
    if (!isCluster(this.ctx.redis)) return this.ctx.pagesAfterKnown(streams, count);
    const byShard = new Map<number, number[]>();
    streams.forEach((s, i) => {
      const at = byShard.get(s.shard);
      if (at) at.push(i);
      else byShard.set(s.shard, [i]);
    });
    const out: (Page<StoredEntry> | StreamBehindError | Error)[] = new Array(reads.length);
    await Promise.all(
      [...byShard.values()].map(async (at) => {
        try {
          const pages = await this.ctx.pagesAfterKnown(
            at.map((i) => streams[i]!),
            count,
          );
          at.forEach((i, k) => (out[i] = pages[k]!));
        } catch (err) {
          // A shard's master down fails its own reads, not the other shards' in this call.
          const error = err instanceof Error ? err : new Error(String(err));
          for (const i of at) out[i] = error;
        }
      }),
    );
    return out;
  }

  /** See {@link EventStore.hasEntry}. */
  hasEntry(taskId: string, id: string): Promise<boolean> {
    return this.ctx.hasEntry(this.ctx.keys.taskStream(taskId), id);
  }

  /** See {@link EventStore.readTaskPages}. */
  pages(
    taskId: string,
    afterId: string,
    count: number,
    endId: string,
  ): AsyncGenerator<Page<StoredEntry>, void, undefined> {
    const key = this.ctx.keys.taskStream(taskId);
    return this.ctx.pages(key, this.ctx.shardOf(taskId), afterId, count, decoderOf(taskId), endId);
  }

  /** See {@link EventStore.wasTrimmed}. */
  async wasTrimmed(taskId: string): Promise<boolean> {
    const at = await this.ctx.streamInfo(this.ctx.keys.taskStream(taskId));
    return at !== null && Number(at('entries-added')) > Number(at('length'));
  }

  async lastId(taskId: string): Promise<string> {
    return this.ctx.lastId(this.ctx.keys.taskStream(taskId));
  }

  async feedLastId(shard: number): Promise<string> {
    return this.ctx.lastId(this.ctx.keys.feed(shard));
  }

  /** See {@link EventStore.trimFeed}. */
  async trimFeed(lease: Lease, handledThrough: string): Promise<number> {
    const { keys } = this.ctx;
    return this.ctx.scripts.feedTrim(
      [keys.lease(lease.shard), keys.feed(lease.shard)],
      [fenceToken(lease), nextId(handledThrough)],
    );
  }

  /** See {@link EventStore.feedPosition}. */
  async feedPosition(shard: number): Promise<{ added: number; length: number; lastId: string }> {
    const at = await this.ctx.streamInfo(this.ctx.keys.feed(shard));
    return {
      added: Number(at?.('entries-added') ?? 0),
      length: Number(at?.('length') ?? 0),
      lastId: String(at?.('last-generated-id') ?? '0-0'),
    };
  }

  /** See {@link EventStore.tailFeeds}. */
  tailFeeds(
    shards: readonly number[],
    from: Readonly<Record<number, string>>,
  ): StreamTail<FeedNote> {
    const feed = (shard: number) => this.ctx.keys.feed(shard);
    return this.ctx.followShards(shards, from, feed, (id, fields, shard) => {
      const taskId = field(fields, 't');
      const lastId = field(fields, 'l');
      if (taskId && lastId) return { shard, id, taskId, lastId };
      return new Refused('feed note without t or l');
    });
  }
}

/** The entries, validated as stream entries of `taskId` ({@link InvalidEntryError} otherwise). */
export function validateEntries(taskId: string, entries: readonly unknown[]): StreamEntry[] {
  return entries.map((raw, index) => {
    const r = StreamEntry.safeParse(raw);
    if (!r.success) throw new InvalidEntryError(index, zodReason(r.error));
    if (r.data.taskId !== taskId) {
      throw new InvalidEntryError(index, `taskId ${r.data.taskId} does not belong in ${taskId}`);
    }
    return r.data;
  });
}
