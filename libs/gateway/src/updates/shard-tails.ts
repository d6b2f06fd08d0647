import { compareIds, duplicateForBlocking, isCluster, type RedisClient } from '@baton/store';
import type { Logger } from '../logger';

/** Entries of one stream as XREAD returns them. */
export type RawEntries = [string, string[]][];

/** A blocking read not answered this long after its block time ended is given up. */
const STUCK_MS = 2_000;

/** How many connections whose read was cut short are kept for the next read. */
const SPARE = 2;

/**
 * Blocking reads of the update streams of a set of shards that changes as clients come and go.
 * Each shard is read from a position given when it is added: every entry after it is handed
 * over once, in stream order, until the shard is removed; a shard added again starts from its
 * new position (whatever an earlier read returns before it is dropped).
 *
 * On a single Redis one read covers every shard. A shard added while that read blocks must not
 * wait for it to time out, and waking a blocked read (CLIENT UNBLOCK) is a right the gateway's
 * Redis user does not have: the next read goes out on another connection instead, and the one
 * left behind serves a later read once Redis answers it (what it returns is read again). On a
 * Cluster a blocking read covers one slot: each shard has its own connection, made when the shard
 * is first read and kept.
 */
export class ShardTails {
  /** The position of every shard read: the last id handed over (or the stream's end when added). */
  private readonly pos = new Map<number, string>();
  private readonly shardOfKey = new Map<string, number>();
  private closed = false;
  private readonly cluster: boolean;

  // A single Redis: one loop, its read and its connections.
  private loop: Promise<void> | undefined;
  /** The shards the read under way covers, and how to give up waiting for it. */
  private reading: { shards: Set<number>; wake: () => void } | undefined;
  private readonly spare: RedisClient[] = [];
  /** Connections whose cut-short read Redis has not answered yet. */
  private readonly pending = new Set<RedisClient>();

  // A Cluster: a connection and a loop per shard.
  private readonly perShard = new Map<number, ShardReader>();
  private readonly loops = new Set<Promise<void>>();

  /** XREADs sent and entries handed over (the hub's metrics). */
  reads = 0;
  entries = 0;

  constructor(
    private readonly redis: RedisClient,
    private readonly keyOf: (shard: number) => string,
    private readonly deliver: (shard: number, entries: RawEntries) => void,
    private readonly blockMs: number,
    private readonly log: Logger,
  ) {
    this.cluster = isCluster(redis);
  }

  /** The shards read now. */
  get shards(): number[] {
    return [...this.pos.keys()];
  }

  /** Reads `shard` after `from` (an entry id), from now on. */
  add(shard: number, from: string): void {
    if (this.closed) return;
    this.pos.set(shard, from);
    this.shardOfKey.set(this.keyOf(shard), shard);
    if (this.cluster) {
      // A shard's connection is made once and kept: a Cluster client made while a master is
      // down takes long to find its slots. A read still under way reads the same stream, so
      // it wakes for what comes next; what it returns from before `from` is dropped.
      let reader = this.perShard.get(shard);
      if (!reader) {
        reader = new ShardReader(duplicateForBlocking(this.redis));
        this.perShard.set(shard, reader);
      }
      if (!reader.running) {
        reader.running = true;
        const r = reader;
        const loop = this.runShard(shard, r).finally(() => this.loops.delete(loop));
        this.loops.add(loop);
      }
      return;
    }
    if (!this.loop) this.loop = this.run().finally(() => (this.loop = undefined));
    else if (this.reading && !this.reading.shards.has(shard)) this.reading.wake();
  }

  /** Stops reading `shard`: nothing more of it is handed over. */
  remove(shard: number): void {
    // On a Cluster a shard once read stays read: its own connection costs no other shard
    // anything, and a tail placed again while a master is down answered its first prompts late
    // (test/faults/cluster-master-down.spec.ts). On a single Redis its loop leaves it out of
    // the next read.
    if (this.cluster) return;
    this.pos.delete(shard);
  }

  /** Hands over what a read returned, past each shard's position. */
  private hand(res: [string, RawEntries][]): void {
    for (const [key, entries] of res) {
      const shard = this.shardOfKey.get(key);
      if (shard === undefined) continue;
      const at = this.pos.get(shard);
      if (at === undefined || entries.length === 0) continue;
      let i = 0;
      while (i < entries.length && compareIds(entries[i]![0], at) <= 0) i++;
      if (i === entries.length) continue;
      const fresh = i === 0 ? entries : entries.slice(i);
      this.pos.set(shard, fresh[fresh.length - 1]![0]);
      this.entries += fresh.length;
      this.deliver(shard, fresh);
    }
  }

  private async run(): Promise<void> {
    for (let failures = 0; !this.closed && this.pos.size > 0;) {
      const shards = [...this.pos.keys()];
      const keys = shards.map((s) => this.keyOf(s));
      const ids = shards.map((s) => this.pos.get(s)!);
      const conn = this.spare.pop() ?? duplicateForBlocking(this.redis);
      let wake!: () => void;
      const woken = new Promise<'woken'>((r) => (wake = () => r('woken')));
      this.reading = { shards: new Set(shards), wake };
      this.reads++;
      const read = this.blockingRead(conn, keys, ids);
      let res: [string, RawEntries][] | null | 'woken';
      try {
        res = await Promise.race([read, woken]);
      } catch (err) {
        this.reading = undefined;
        conn.disconnect();
        if (this.closed) break;
        if (failures++ === 0) this.log.warn({ err }, 'update tail: read failed');
        // The next read opens a connection of its own; wait a little instead of spinning.
        await new Promise((r) => setTimeout(r, Math.min(1_000, 50 * failures)));
        continue;
      }
      this.reading = undefined;
      failures = 0;
      if (res === 'woken') {
        this.leaveBehind(conn, read);
        continue;
      }
      this.reuse(conn);
      if (res && !this.closed) this.hand(res);
    }
  }

  /** A read cut short: its connection is free once Redis answers it (within the block time). */
  private leaveBehind(conn: RedisClient, read: Promise<unknown>): void {
    if (this.closed || this.pending.size >= SPARE) {
      conn.disconnect();
      read.catch(() => undefined);
      return;
    }
    this.pending.add(conn);
    read.then(
      () => {
        this.pending.delete(conn);
        this.reuse(conn);
      },
      () => {
        this.pending.delete(conn);
        conn.disconnect();
      },
    );
  }

  private reuse(conn: RedisClient): void {
    if (this.closed || this.spare.length >= SPARE) conn.disconnect();
    else this.spare.push(conn);
  }

  /** One blocking read of `keys` after `ids`, as every tail reads. */
  private blockingRead(
    conn: RedisClient,
    keys: readonly string[],
    ids: readonly string[],
  ): Promise<[string, RawEntries][] | null> {
    return conn.xread('COUNT', 1000, 'BLOCK', this.blockMs, 'STREAMS', ...keys, ...ids) as Promise<
      [string, RawEntries][] | null
    >;
  }

  private async runShard(shard: number, reader: ShardReader): Promise<void> {
    const key = this.keyOf(shard);
    const { conn } = reader;
    for (let failures = 0; !this.closed && this.pos.has(shard);) {
      try {
        this.reads++;
        const read = this.blockingRead(conn, [key], [this.pos.get(shard)!]);
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>(
          (r) => (timer = setTimeout(() => r('late'), this.blockMs + STUCK_MS)),
        );
        const res = await Promise.race([read, reader.ended, late]).finally(() =>
          clearTimeout(timer),
        );
        if (res === 'ended' || res === 'late') {
          read.catch(() => undefined);
          if (res === 'late') {
            // Queued on a client that lost its node, a read may never be answered: the shard
            // gets a new connection.
            reader.end();
            if (this.perShard.get(shard) === reader) this.perShard.delete(shard);
            reader.running = false;
            const from = this.pos.get(shard);
            if (from !== undefined && !this.closed) this.add(shard, from);
            return;
          }
          break;
        }
        failures = 0;
        if (res && !this.closed) this.hand(res);
      } catch (err) {
        if (this.closed || !this.pos.has(shard)) break;
        if (failures++ === 0) this.log.warn({ err, shard }, 'update tail: read failed');
        // The connection reconnects by itself; wait a little instead of spinning on errors.
        await Promise.race([
          new Promise((r) => setTimeout(r, Math.min(1_000, 50 * failures))),
          reader.ended,
        ]);
      }
    }
    // In the same turn as the last look at the shard: a shard added after it starts a loop.
    reader.running = false;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.reading?.wake();
    for (const r of this.perShard.values()) r.end();
    for (const c of [...this.spare, ...this.pending]) c.disconnect();
    this.spare.length = 0;
    this.pending.clear();
    this.perShard.clear();
    this.pos.clear();
    await Promise.allSettled([this.loop, ...this.loops]);
  }
}

/**
 * A Cluster shard's connection. Ending it disconnects it and stops its loop's wait at once: a
 * Cluster client's command queued for a node that is down may never settle, even disconnected.
 */
class ShardReader {
  readonly ended: Promise<'ended'>;
  /** Whether a loop reads with it. */
  running = false;
  private done = false;
  private resolve!: (v: 'ended') => void;

  constructor(readonly conn: RedisClient) {
    this.ended = new Promise((r) => (this.resolve = r));
  }

  end(): void {
    if (this.done) return;
    this.done = true;
    this.resolve('ended');
    this.conn.disconnect();
  }
}
