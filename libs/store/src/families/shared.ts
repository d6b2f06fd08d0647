import { duplicateForBlocking, isCluster, type RedisClient } from '../connection';
import type { EventStoreOptions } from '../event-store';
import type { KeyLayout } from '../keys';
import { StreamBehindError } from '../errors';
import { previousId } from '../ids';
import type { Scripts } from '../scripts';
import { StreamTail, type TailGroup, type TailSource } from '../tail';
import type { Lease } from './leases';

export type Fields = string[];
type XEntry = [string, Fields];

/** The value of `name` in a stream entry's flat field list. */
export function field(fields: Fields, name: string): string | undefined {
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

export interface Page<T> {
  items: T[];
  /** Id of the last stream entry looked at (dead-lettered ones included); resume after it. */
  lastId: string;
}

/** What a decoder returns for an entry it refuses: the entry is dead-lettered and skipped. */
export class Refused {
  constructor(readonly reason: string) {}
}

/** Decodes one stream entry, or refuses it. Synchronous: reading a page is a hot path. */
export type Decode<T> = (id: string, fields: Fields, shard: number) => T | Refused;

/** The store's settings: every option of {@link EventStoreOptions} but the key layout's. */
export type Settings = Required<Omit<EventStoreOptions, 'shards' | 'prefix'>>;

/**
 * What every key family of the store shares: the connection, the key layout, the scripts and
 * settings, and reading streams (pages, tails, dead letters of what fails to decode).
 */
export class StoreContext {
  readonly tails = new Set<StreamTail<unknown>>();

  constructor(
    readonly redis: RedisClient,
    readonly keys: KeyLayout,
    readonly scripts: Scripts,
    readonly opts: Settings,
  ) {}

  shardOf(taskId: string): number {
    return this.keys.shardOf(taskId);
  }

  checkLease(lease: Lease, taskId: string): void {
    const shard = this.shardOf(taskId);
    if (shard !== lease.shard) {
      throw new Error(`task ${taskId} is in shard ${shard}, the lease is for shard ${lease.shard}`);
    }
  }

  /** Records an entry of `source` that failed to decode in the dead letters of `shard`. */
  async deadLetter(
    shard: number,
    source: string,
    id: string,
    reason: string,
    fields: Fields,
  ): Promise<void> {
    const recorded = await this.scripts.deadLetter(
      [this.keys.deadLetters(shard), this.keys.deadIndex(shard)],
      [source, id, reason, JSON.stringify(fields), this.opts.deadLettersMaxLen],
    );
    if (recorded !== 0) this.opts.onDeadLetter(shard);
  }

  /**
   * Up to `count` entries of stream `key` (of `shard`) after `afterId` (exclusive; `'0-0'` from
   * the start), decoded. The page is decoded synchronously; the entries refused are dead-lettered
   * after it, in order.
   */
  async page<T>(
    key: string,
    shard: number,
    afterId: string,
    count: number,
    decode: Decode<T>,
  ): Promise<Page<T>> {
    const start = afterId === '0-0' ? '-' : `(${afterId}`;
    const raw = (await this.redis.xrange(key, start, '+', 'COUNT', count)) as XEntry[];
    return this.decodePage(key, shard, afterId, raw, decode);
  }

  /**
   * As {@link page}, after `knownId`, an entry the reader holds (the last it folded): the XRANGE
   * starts at it, inclusive, and a stream without it — Redis lost writes it had acknowledged —
   * throws {@link StreamBehindError} with the stream's last id.
   */
  async pageAfterKnown<T>(
    key: string,
    shard: number,
    knownId: string,
    count: number,
    decode: Decode<T>,
  ): Promise<Page<T>> {
    if (knownId === '0-0') return this.page(key, shard, knownId, count, decode);
    const raw = (await this.redis.xrange(key, knownId, '+', 'COUNT', count + 1)) as XEntry[];
    if (raw[0]?.[0] !== knownId) throw new StreamBehindError(await this.lastId(key));
    return this.decodePage(key, shard, knownId, raw.slice(1), decode);
  }

  /**
   * {@link pageAfterKnown} of several streams (each once, each of its `shard`) in one XREAD, so
   * of one slot on a Cluster: each reads from its known entry, inclusive (from the start for
   * '0-0'), and one that no longer holds it gets a {@link StreamBehindError} in its place; the
   * others are read as if alone.
   */
  async pagesAfterKnown<T>(
    reads: readonly { key: string; shard: number; knownId: string; decode: Decode<T> }[],
    count: number,
  ): Promise<(Page<T> | StreamBehindError)[]> {
    const keys = reads.map((r) => r.key);
    const from = reads.map((r) => (r.knownId === '0-0' ? '0-0' : previousId(r.knownId)));
    const reply = (await this.redis.xread('COUNT', count + 1, 'STREAMS', ...keys, ...from)) as
      [string, XEntry[]][] | null;
    const byKey = new Map(reply ?? []);
    return Promise.all(
      reads.map(async ({ key, shard, knownId, decode }) => {
        const raw = byKey.get(key) ?? [];
        if (knownId === '0-0') {
          return this.decodePage(key, shard, knownId, raw.slice(0, count), decode);
        }
        if (raw[0]?.[0] !== knownId) return new StreamBehindError(await this.lastId(key));
        return this.decodePage(key, shard, knownId, raw.slice(1), decode);
      }),
    );
  }

  /** Whether stream `key` holds an entry with id `id`. */
  async hasEntry(key: string, id: string): Promise<boolean> {
    return ((await this.redis.xrange(key, id, id)) as XEntry[]).length > 0;
  }

  /**
   * The pages of stream `key` (of `shard`) after `afterId` up to `endId` (inclusive; a bare ms
   * takes every entry of that ms), as {@link page} reads them, but the next page's XRANGE is sent
   * before this one is decoded and handed over: Redis reads and serializes page N+1 while the
   * caller parses and uses page N. One read at most is ahead; a caller that stops early leaves
   * its reply unread. Ends after the first page shorter than `count`.
   */
  async *pages<T>(
    key: string,
    shard: number,
    afterId: string,
    count: number,
    decode: Decode<T>,
    endId = '+',
  ): AsyncGenerator<Page<T>, void, undefined> {
    const xrange = (after: string) =>
      this.redis.xrange(key, after === '0-0' ? '-' : `(${after}`, endId, 'COUNT', count) as Promise<
        XEntry[]
      >;
    let ahead: Promise<XEntry[]> | undefined = xrange(afterId);
    let after = afterId;
    try {
      while (ahead) {
        const raw: XEntry[] = await ahead;
        ahead = raw.length === count ? xrange(raw[raw.length - 1]![0]) : undefined;
        if (raw.length === 0) return;
        const page = await this.decodePage(key, shard, after, raw, decode);
        after = page.lastId;
        yield page;
      }
    } finally {
      // A read ahead the caller stopped before: its failure is nobody's.
      ahead?.catch(() => undefined);
    }
  }

  /** Decodes a page synchronously; the entries refused are dead-lettered after it, in order. */
  private async decodePage<T>(
    key: string,
    shard: number,
    afterId: string,
    raw: XEntry[],
    decode: Decode<T>,
  ): Promise<Page<T>> {
    const items: T[] = [];
    let refused: [string, Fields, string][] | undefined;
    for (const [id, fields] of raw) {
      const r = decode(id, fields, shard);
      if (r instanceof Refused) (refused ??= []).push([id, fields, r.reason]);
      else items.push(r);
    }
    if (refused) {
      for (const [id, fields, reason] of refused)
        await this.deadLetter(shard, key, id, reason, fields);
    }
    return { items, lastId: raw.length > 0 ? raw[raw.length - 1]![0] : afterId };
  }

  /**
   * XINFO STREAM of `key`, read by field name (`entries-added`, `length`, `last-generated-id`…);
   * null when the stream does not exist.
   */
  async streamInfo(key: string): Promise<((field: string) => unknown) | null> {
    let info: unknown[];
    try {
      info = (await this.redis.call('XINFO', 'STREAM', key)) as unknown[];
    } catch (err) {
      if (/no such key/i.test(String(err))) return null;
      throw err;
    }
    return (field) => {
      const i = info.indexOf(field);
      return i >= 0 ? info[i + 1] : undefined;
    };
  }

  /** The id of the last entry of stream `key`, `'0-0'` when it has none. */
  async lastId(key: string): Promise<string> {
    const last = (await this.redis.xrevrange(key, '+', '-', 'COUNT', 1)) as XEntry[];
    return last[0]?.[0] ?? '0-0';
  }

  /** Follows the stream `keyOf(shard)` of each of `shards`, after `from[shard]` or from now on. */
  followShards<T>(
    shards: readonly number[],
    from: Readonly<Record<number, string>>,
    keyOf: (shard: number) => string,
    decode: Decode<T>,
  ): StreamTail<T> {
    const sources = shards.map((shard) => ({ key: keyOf(shard), from: from[shard] ?? '$', shard }));
    return this.follow(sources, decode);
  }

  /**
   * Follows streams with blocking reads on dedicated connections: one for all sources on a single
   * Redis, one per source on a Cluster (a blocking read covers one slot there). Entries `decode`
   * refuses are dead-lettered in their source's shard and skipped. Closed by the store's close.
   */
  follow<T>(sources: (TailSource & { shard: number })[], decode: Decode<T>): StreamTail<T> {
    const shardOfKey = new Map(sources.map((s) => [s.key, s.shard]));
    const parse = async (key: string, id: string, fields: Fields): Promise<T | null> => {
      const shard = shardOfKey.get(key)!;
      const r = decode(id, fields, shard);
      if (!(r instanceof Refused)) return r;
      await this.deadLetter(shard, key, id, r.reason, fields);
      return null;
    };
    const tailSources = sources.map(({ key, from }) => ({ key, from }));
    const r = this.redis;
    const groups: TailGroup[] = isCluster(r)
      ? tailSources.map((s) => ({ conn: duplicateForBlocking(r), sources: [s] }))
      : tailSources.length > 0
        ? [{ conn: duplicateForBlocking(r), sources: tailSources }]
        : [];
    const t = new StreamTail<T>(groups, parse, this.opts.tailBlockMs);
    this.tails.add(t as StreamTail<unknown>);
    return t;
  }
}
