import type { RedisClient } from './connection';

/** One stream a tail follows, and where it starts: an id, or `$` for "only what comes next". */
export interface TailSource {
  key: string;
  from: string;
}

export interface TailGroup {
  /** A connection used by this tail only: a blocking XREAD holds its socket. */
  conn: RedisClient;
  sources: TailSource[];
}

type Parse<T> = (key: string, id: string, fields: string[]) => Promise<T | null>;

/**
 * Follows streams with blocking XREAD. Each group is one connection blocked on all of its keys at
 * once (on a Cluster a group can hold keys of one slot only, so there it is one group per shard).
 * Results from all groups meet in one queue; `next()` waits for the first of them.
 */
export class StreamTail<T> implements AsyncIterable<T[]> {
  private readonly queue: T[] = [];
  private wake: (() => void) | undefined;
  private closed = false;
  private readonly loops: Promise<void>[];

  constructor(
    private readonly groups: TailGroup[],
    private readonly parse: Parse<T>,
    private readonly blockMs: number,
  ) {
    this.loops = groups.map((g) => this.run(g));
  }

  private async run(group: TailGroup): Promise<void> {
    const keys = group.sources.map((s) => s.key);
    const ids = group.sources.map((s) => s.from);
    while (!this.closed) {
      try {
        // `$` is resolved to a concrete id once: re-sending `$` after a reconnect would silently
        // skip whatever was appended while the connection was down.
        for (let i = 0; i < ids.length; i++) {
          if (ids[i] !== '$') continue;
          const last = (await group.conn.xrevrange(keys[i]!, '+', '-', 'COUNT', 1)) as [
            string,
            string[],
          ][];
          ids[i] = last[0]?.[0] ?? '0-0';
        }
        const res = (await group.conn.xread(
          'COUNT',
          1000,
          'BLOCK',
          this.blockMs,
          'STREAMS',
          ...keys,
          ...ids,
        )) as [string, [string, string[]][]][] | null;
        if (!res || this.closed) continue;
        for (const [key, entries] of res) {
          const idx = keys.indexOf(key);
          for (const [id, fields] of entries) {
            ids[idx] = id;
            const item = await this.parse(key, id, fields);
            if (item !== null) this.queue.push(item);
          }
        }
        this.notify();
      } catch (err) {
        if (this.closed) break;
        // The connection reconnects by itself; wait a little instead of spinning on errors.
        void err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  private notify() {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** Everything that arrived since the last call; waits until something does or the tail closes. */
  async next(): Promise<T[]> {
    while (this.queue.length === 0 && !this.closed) {
      await new Promise<void>((r) => (this.wake = r));
    }
    return this.queue.splice(0, this.queue.length);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T[]> {
    while (!this.closed) {
      const batch = await this.next();
      if (batch.length > 0) yield batch;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const g of this.groups) g.conn.disconnect();
    this.notify();
    await Promise.allSettled(this.loops);
  }
}
