import {
  compareIds,
  duplicateForBlocking,
  isCluster,
  type EventStore,
  type RedisClient,
  type StoredTranscriptEvent,
} from '@baton/store';
import type { Logger } from '../logger';

/**
 * One entry of a task's transcript stream as the tail read it. Its wire form (the entry of a
 * `transcript` message) is made once for every subscriber: the stored event is JSON already.
 */
export class TranscriptFrame {
  private text: string | undefined;
  private decoded: StoredTranscriptEvent | null | undefined;
  constructor(
    readonly id: string,
    readonly sessionId: string,
    private readonly executionId: string,
    private readonly event: string,
  ) {}

  /**
   * The entry decoded, once for every reader that wants objects (AHP's chats); null for an entry
   * that is not one (stored entries were validated on their way in: a parse is enough).
   */
  get stored(): StoredTranscriptEvent | null {
    if (this.decoded !== undefined) return this.decoded;
    let event: unknown = null;
    try {
      event = JSON.parse(this.event);
    } catch {
      // Refused below, as the store's reads refuse it.
    }
    this.decoded =
      this.sessionId === '' || typeof event !== 'object' || event === null
        ? null
        : {
            id: this.id,
            sessionId: this.sessionId,
            executionId: this.executionId,
            event: event as StoredTranscriptEvent['event'],
          };
    return this.decoded;
  }

  get json(): string {
    return (this.text ??=
      `{"id":${JSON.stringify(this.id)},"executionId":${JSON.stringify(this.executionId)},` +
      `"event":${this.event}}`);
  }
}

/** Who follows a task's transcript: offered every entry the tail reads, of every session. */
export interface TranscriptFollower {
  offer(frames: readonly TranscriptFrame[]): void;
}

interface Watched {
  followers: Set<TranscriptFollower>;
  /** The id the tail reads after; resolved (the stream's end then) before anyone follows. */
  pos: string;
  /** Whether `pos` is known; until then the tail does not read the stream. */
  resolved: boolean;
  ready: Promise<void>;
}

/**
 * Without a way to wake it (on a Cluster, or for a Redis user not allowed CLIENT UNBLOCK, as the
 * shipped gateway user is not), a shard's read blocks at most this long: the wait of a newly
 * followed task's first entries.
 */
const UNWAKEABLE_BLOCK_MS = 250;

/**
 * The gateway's tails of transcript streams: one blocking connection per shard that has a
 * followed task, reading every followed stream of that shard with one XREAD, fanned out to the
 * followers of each task. A task followed by many subscribers is read once. When the set of
 * streams changes, the blocked read is woken (CLIENT UNBLOCK) so that it reads the new set.
 */
export class TranscriptHub {
  private readonly tasks = new Map<string, Watched>();
  private readonly shards = new Map<number, ShardTail>();
  private stopped = false;
  /** Whether this connection's user may CLIENT UNBLOCK: asked once, by the first tail. */
  private unblockAllowed: Promise<boolean> | undefined;

  constructor(
    private readonly store: EventStore,
    private readonly log: Logger,
    private readonly blockMs = 5_000,
  ) {}

  /**
   * Offers `f` every entry of `key`'s transcript appended from now on. Resolves once the tail's
   * position is fixed: whatever a read started after that returns, the tail has it or goes on
   * from it, so a reader that catches up after this call and then takes the tail's offers
   * misses nothing.
   */
  async follow(key: string, f: TranscriptFollower): Promise<void> {
    let w = this.tasks.get(key);
    if (!w) {
      const watched: Watched = {
        followers: new Set(),
        pos: '0-0',
        resolved: false,
        ready: Promise.resolve(),
      };
      w = watched;
      this.tasks.set(key, w);
      w.ready = (async () => {
        const last = (await this.store.redis.xrevrange(
          this.store.keys.transcript(key),
          '+',
          '-',
          'COUNT',
          1,
        )) as [string, string[]][];
        watched.pos = last[0]?.[0] ?? '0-0';
        watched.resolved = true;
        if (this.tasks.get(key) === watched && watched.followers.size > 0) this.shardOf(key).wake();
      })();
      w.ready.catch(() => {
        if (this.tasks.get(key) === watched && watched.followers.size === 0) this.tasks.delete(key);
      });
    }
    w.followers.add(f);
    try {
      await w.ready;
    } catch (err) {
      this.unfollow(key, f);
      throw err;
    }
  }

  unfollow(key: string, f: TranscriptFollower): void {
    const w = this.tasks.get(key);
    if (!w) return;
    w.followers.delete(f);
    if (w.followers.size > 0) return;
    this.tasks.delete(key);
    this.shards.get(this.store.shardOf(key))?.wake();
  }

  /** Tasks followed (for tests and metrics). */
  get followedTasks(): number {
    return this.tasks.size;
  }

  /** The streams of `shard` to read, and after which ids; tasks not yet resolved wait. */
  sourcesOf(shard: number): { keys: string[]; tasks: string[]; ids: string[] } {
    const keys: string[] = [];
    const tasks: string[] = [];
    const ids: string[] = [];
    for (const [task, w] of this.tasks) {
      if (w.followers.size === 0 || this.store.shardOf(task) !== shard) continue;
      if (!w.resolved) continue;
      keys.push(this.store.keys.transcript(task));
      tasks.push(task);
      ids.push(w.pos);
    }
    return { keys, tasks, ids };
  }

  /** What a shard's read returned for `task`: the position moves, the followers get it. */
  deliver(task: string, frames: TranscriptFrame[]): void {
    const w = this.tasks.get(task);
    if (!w || frames.length === 0) return;
    // A read that began before the task was followed again (from a later position) may return
    // what the new position already covers.
    const fresh = frames.filter((f) => compareIds(f.id, w.pos) > 0);
    if (fresh.length === 0) return;
    w.pos = fresh[fresh.length - 1]!.id;
    for (const f of w.followers) {
      try {
        f.offer(fresh);
      } catch (err) {
        this.log.error({ err, taskId: task }, 'transcript follower failed');
      }
    }
  }

  private shardOf(key: string): ShardTail {
    const shard = this.store.shardOf(key);
    let t = this.shards.get(shard);
    if (!t) {
      t = new ShardTail(this, shard, this.store.redis, this.log, this.blockMs);
      this.shards.set(shard, t);
    }
    return t;
  }

  /**
   * Whether a blocked read can be woken: CLIENT UNBLOCK of a client that is not blocked answers
   * 0 where it is allowed, and an error (NOPERM) where the user lacks it.
   */
  canUnblock(clientId: number): Promise<boolean> {
    return (this.unblockAllowed ??= this.store.redis.client('UNBLOCK', clientId).then(
      () => true,
      (err: unknown) => {
        this.log.info(
          { err: err instanceof Error ? err.message : String(err) },
          `transcript tails cannot be woken; each blocks at most ${UNWAKEABLE_BLOCK_MS} ms`,
        );
        return false;
      },
    ));
  }

  /** A shard's tail that has nothing left to read stops (a new task starts another). */
  retire(shard: number, t: ShardTail): void {
    if (this.shards.get(shard) === t) this.shards.delete(shard);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const all = [...this.shards.values()];
    this.shards.clear();
    this.tasks.clear();
    await Promise.all(all.map((t) => t.close()));
  }
}

/** One shard's blocking reader of the followed transcript streams in it. */
class ShardTail {
  private conn: RedisClient | undefined;
  private clientId: number | undefined;
  private loop: Promise<void> | undefined;
  private reading = false;
  private dirty = false;
  private closed = false;
  /** Whether a blocked read can be woken (CLIENT UNBLOCK), known once connected. */
  private wakeable = false;

  constructor(
    private readonly hub: TranscriptHub,
    private readonly shard: number,
    private readonly redis: RedisClient,
    private readonly log: Logger,
    private readonly blockMs: number,
  ) {}

  /** The set of streams changed: (re)start the loop, or wake its blocked read. */
  wake(): void {
    if (this.closed) return;
    this.dirty = true;
    if (!this.loop) {
      this.loop = this.run().finally(() => (this.loop = undefined));
      return;
    }
    if (this.reading && this.wakeable && this.clientId !== undefined) {
      void this.unblock(this.clientId);
    }
  }

  /**
   * Wakes the blocked read. The UNBLOCK may reach Redis before the XREAD it is meant for: it is
   * repeated, briefly, until it wakes a read or the loop has moved on by itself.
   */
  private async unblock(id: number): Promise<void> {
    for (let i = 0; i < 50 && this.reading && this.dirty && !this.closed; i++) {
      try {
        if (((await this.redis.client('UNBLOCK', id)) as number) === 1) return;
      } catch {
        return;
      }
      await new Promise((r) => setTimeout(r, 2));
    }
  }

  private async run(): Promise<void> {
    for (let failures = 0; !this.closed;) {
      this.dirty = false;
      const { keys, tasks, ids } = this.hub.sourcesOf(this.shard);
      if (keys.length === 0) {
        // Nothing to read (tasks whose position is being read wake a new loop once it is known).
        this.hub.retire(this.shard, this);
        break;
      }
      try {
        if (!this.conn) {
          const conn = duplicateForBlocking(this.redis);
          this.conn = conn;
          if (!isCluster(this.redis)) {
            // A reconnect gives the connection a new id: the old one would wake nothing (until
            // the new one is known, a new stream waits at most for the read's timeout).
            conn.on('ready', () => {
              this.clientId = undefined;
              conn.client('ID').then(
                (id) => this.conn === conn && (this.clientId = id as number),
                () => undefined,
              );
            });
            this.clientId = (await conn.client('ID')) as number;
            this.wakeable = await this.hub.canUnblock(this.clientId);
          }
        }
        if (this.dirty) continue;
        this.reading = true;
        const res = (await this.conn.xread(
          'COUNT',
          1000,
          'BLOCK',
          this.wakeable ? this.blockMs : UNWAKEABLE_BLOCK_MS,
          'STREAMS',
          ...keys,
          ...ids,
        )) as [string, [string, string[]][]][] | null;
        this.reading = false;
        failures = 0;
        if (!res || this.closed) continue;
        for (const [key, entries] of res) {
          const task = tasks[keys.indexOf(key)];
          if (task === undefined) continue;
          const frames: TranscriptFrame[] = [];
          for (const [id, fields] of entries) {
            // An entry without its fields (never written so) moves the position for no session.
            frames.push(frameOf(id, fields) ?? new TranscriptFrame(id, '', '', 'null'));
          }
          this.hub.deliver(task, frames);
        }
      } catch (err) {
        this.reading = false;
        if (this.closed) break;
        if (failures++ === 0) this.log.warn({ err, shard: this.shard }, 'transcript tail failed');
        // The connection reconnects by itself; wait a little instead of spinning on errors.
        await new Promise((r) => setTimeout(r, Math.min(1_000, 50 * failures)));
      }
    }
    this.conn?.disconnect();
    this.conn = undefined;
    this.clientId = undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.conn?.disconnect();
    await this.loop;
  }
}

/**
 * The entry's fields, or null when it lacks them (stored entries are validated on the way in:
 * such an entry is skipped by readers, as the store's reads skip it).
 */
function frameOf(id: string, fields: string[]): TranscriptFrame | null {
  let s: string | undefined;
  let x = '';
  let e: string | undefined;
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i];
    if (name === 's') s = fields[i + 1];
    else if (name === 'x') x = fields[i + 1] ?? '';
    else if (name === 'e') e = fields[i + 1];
  }
  if (s === undefined || e === undefined) return null;
  return new TranscriptFrame(id, s, x, e);
}
