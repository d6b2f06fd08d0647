import { InboxMessage, StreamEntry, TaskView, Update } from '@baton/protocol';
import type { z } from 'zod';
import {
  connectRedis,
  duplicateForBlocking,
  isCluster,
  type ConnectOptions,
  type RedisClient,
  type RedisTarget,
} from './connection';
import { InvalidEntryError, mapScriptError } from './errors';
import { compareIds } from './ids';
import { DEFAULT_PREFIX, DEFAULT_SHARDS, KeyLayout } from './keys';
import {
  defineScripts,
  withReplicas,
  type ScriptArgs,
  type ScriptKeys,
  type Scripts,
} from './scripts';
import { decodeChecked, decodeStoredEntry, decodeStoredUpdate, zodReason } from './stored';
import { StreamTail, type TailGroup } from './tail';

export interface EventStoreOptions {
  /** Shards per deployment (default 64). Every process of a deployment must use the same. */
  shards?: number;
  prefix?: string;
  /** Approximate bound of each shard feed (default 100,000 notes). */
  feedMaxLen?: number;
  /** Approximate bound of each shard update stream (default 100,000 updates). */
  updatesMaxLen?: number;
  /** Approximate bound of each execution inbox (default 1,000). */
  inboxMaxLen?: number;
  /** Approximate bound of each execution's raw-frame log (default 10,000 frames). */
  rawFramesMaxLen?: number;
  /** Approximate bound of each shard's dead-letter stream (default 10,000). */
  deadLettersMaxLen?: number;
  /** How long a task's append dedupe state outlives its last append (default 7 days). */
  dedupeTtlMs?: number;
  /** How long a blocking tail read waits before it re-issues (default 5,000 ms). */
  tailBlockMs?: number;
  /**
   * Replicas that must have an {@link EventStore.append} (a client's command) before it counts as
   * done (Redis WAIT; default 0: the master's reply). Replication is asynchronous: without this,
   * a failover can lose what the master had acknowledged. When fewer replicas confirm within
   * {@link ackTimeoutMs}, the append fails as unavailable (NOREPLICAS); the write may still
   * survive, and a retry under the same idempotency key finds it.
   */
  ackReplicas?: number;
  /** How long an append waits for {@link ackReplicas} (default 1,000 ms). */
  ackTimeoutMs?: number;
}

/** The right to write for one shard, at one fencing epoch. */
export interface Lease {
  shard: number;
  owner: string;
  epoch: number;
  /** Server time (ms since epoch) at which the lease lapses unless renewed. */
  expiresAt: number;
}

export type AcquireResult =
  { acquired: true; lease: Lease } | { acquired: false; owner: string; expiresAt: number };

export interface StoredEntry {
  id: string;
  entry: StreamEntry;
}

export interface Page<T> {
  items: T[];
  /** Id of the last stream entry looked at (dead-lettered ones included); resume after it. */
  lastId: string;
}

export interface FeedNote {
  shard: number;
  /** Id of the note in the shard feed. */
  id: string;
  taskId: string;
  /** Last id the append that wrote the note added to the task stream. */
  lastId: string;
}

export interface StoredUpdate {
  id: string;
  update: Update;
}

export interface Snapshot<S> {
  /** The task stream id the state covers: replay starts after it. */
  id: string;
  state: S;
  epoch: number;
}

export interface StoredInboxMessage {
  id: string;
  message: InboxMessage;
}

/** One execution of one session of a task. */
export interface ExecutionRef {
  taskId: string;
  sessionId: string;
  executionId: string;
}

export interface ExpiredExecutionLease extends ExecutionRef {
  /** Server time (ms) at which the lease lapsed or lapses. */
  expiresAt: number;
  /** The lease's period as its worker last took it (ms); null when not recorded. */
  ttlMs?: number | null;
}

function executionMember(ref: ExecutionRef): string {
  return JSON.stringify([ref.taskId, ref.sessionId, ref.executionId]);
}

function parseExecutionMember(member: string): ExecutionRef | null {
  try {
    const v: unknown = JSON.parse(member);
    if (Array.isArray(v) && v.length === 3) {
      const [taskId, sessionId, executionId] = v as unknown[];
      if (
        typeof taskId === 'string' &&
        typeof sessionId === 'string' &&
        typeof executionId === 'string'
      ) {
        return { taskId, sessionId, executionId };
      }
    }
  } catch {
    // fall through: a member Baton did not write
  }
  return null;
}

export interface RawFrame {
  direction: 'in' | 'out';
  line: string;
}

export interface DeadLetter {
  id: string;
  source: string;
  sourceId: string;
  reason: string;
  raw: string;
}

type Fields = string[];
type XEntry = [string, Fields];

function field(fields: Fields, name: string): string | undefined {
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

/**
 * Baton's event store over Redis streams: idempotent and fenced appends to task streams, shard
 * leases with fencing epochs, snapshots and trimming, per-shard client updates, execution inboxes,
 * raw-frame logs and dead letters. Everything that enters is validated with `@baton/protocol`;
 * what comes back out is checked as far as its write did not already prove it (stored.ts), and
 * what fails is dead-lettered and skipped.
 */
export class EventStore {
  readonly keys: KeyLayout;
  private readonly scripts: Scripts;
  private readonly opts: Required<Omit<EventStoreOptions, 'shards' | 'prefix'>>;
  private readonly tails = new Set<StreamTail<unknown>>();

  constructor(
    readonly redis: RedisClient,
    options: EventStoreOptions = {},
    private readonly ownsConnection = false,
  ) {
    this.keys = new KeyLayout(options.shards ?? DEFAULT_SHARDS, options.prefix ?? DEFAULT_PREFIX);
    this.opts = {
      feedMaxLen: options.feedMaxLen ?? 100_000,
      updatesMaxLen: options.updatesMaxLen ?? 100_000,
      inboxMaxLen: options.inboxMaxLen ?? 1_000,
      rawFramesMaxLen: options.rawFramesMaxLen ?? 10_000,
      deadLettersMaxLen: options.deadLettersMaxLen ?? 10_000,
      dedupeTtlMs: options.dedupeTtlMs ?? 7 * 24 * 3600 * 1000,
      tailBlockMs: options.tailBlockMs ?? 5_000,
      ackReplicas: options.ackReplicas ?? 0,
      ackTimeoutMs: options.ackTimeoutMs ?? 1_000,
    };
    this.scripts = defineScripts(redis);
  }

  /** A store over its own connection, closed by {@link close}. */
  static connect(
    target: RedisTarget,
    options: EventStoreOptions = {},
    connect: ConnectOptions = {},
  ): EventStore {
    return new EventStore(connectRedis(target, connect), options, true);
  }

  shardOf(taskId: string): number {
    return this.keys.shardOf(taskId);
  }

  private async run<T>(p: Promise<unknown>): Promise<T> {
    try {
      return (await p) as T;
    } catch (err) {
      throw mapScriptError(err);
    }
  }

  private validateIn(taskId: string, entries: readonly unknown[]): StreamEntry[] {
    return entries.map((raw, index) => {
      const r = StreamEntry.safeParse(raw);
      if (!r.success) throw new InvalidEntryError(index, zodReason(r.error));
      if (r.data.taskId !== taskId) {
        throw new InvalidEntryError(index, `taskId ${r.data.taskId} does not belong in ${taskId}`);
      }
      return r.data;
    });
  }

  private checkLease(lease: Lease, taskId: string) {
    const shard = this.shardOf(taskId);
    if (shard !== lease.shard) {
      throw new Error(`task ${taskId} is in shard ${shard}, the lease is for shard ${lease.shard}`);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Task streams
  // ---------------------------------------------------------------------------------------------

  /**
   * Appends a batch to a task stream, at most once per (writer instance, writer seq). Returns, per
   * entry, its stream id or null when it was already appended. See append-3.lua for the writer's
   * side of the contract: per task, a writer's seqs increase and it retries until acknowledged.
   */
  async append(taskId: string, entries: readonly StreamEntry[]): Promise<(string | null)[]> {
    const valid = this.validateIn(taskId, entries);
    if (valid.length === 0) return [];
    const args: (string | number)[] = [
      this.keys.taskStream(taskId),
      this.keys.taskDedupe(taskId),
      this.keys.feed(this.shardOf(taskId)),
      taskId,
      this.opts.feedMaxLen,
      this.opts.dedupeTtlMs,
      valid.length,
    ];
    for (const e of valid) args.push(e.writer.instance, e.writer.seq, JSON.stringify(e));
    const ids =
      this.opts.ackReplicas === 0
        ? await this.run<(string | number)[]>(
            this.scripts.append(
              args.slice(0, 3) as ScriptKeys<'append'>,
              args.slice(3) as ScriptArgs<'append'>,
            ),
          )
        : await this.appendReplicated(args);
    return ids.map((id) => (typeof id === 'string' ? id : null));
  }

  private async appendReplicated(args: (string | number)[]): Promise<(string | number)[]> {
    const want = this.opts.ackReplicas;
    const { reply, acknowledged } = await withReplicas(
      this.redis,
      'append',
      args.slice(0, 3) as ScriptKeys<'append'>,
      args.slice(3) as ScriptArgs<'append'>,
      want,
      this.opts.ackTimeoutMs,
    ).catch((err: unknown) => {
      throw mapScriptError(err);
    });
    if (acknowledged < want) {
      throw new Error(
        `NOREPLICAS the append reached ${acknowledged} of ${want} replicas in ${this.opts.ackTimeoutMs} ms`,
      );
    }
    return reply as (string | number)[];
  }

  /**
   * Appends the owner's entries only if `lease` is still current (else {@link FencedError}) and the
   * stream's last id is `expectedLastId`, `'0-0'` for an empty stream (else {@link ConflictError}
   * with the actual last id). Returns the new ids.
   */
  async appendFenced(
    lease: Lease,
    taskId: string,
    expectedLastId: string,
    entries: readonly StreamEntry[],
  ): Promise<string[]> {
    this.checkLease(lease, taskId);
    const valid = this.validateIn(taskId, entries);
    return this.run<string[]>(
      this.scripts.appendFenced(
        [this.keys.lease(lease.shard), this.keys.taskStream(taskId), this.keys.feed(lease.shard)],
        [
          lease.epoch,
          expectedLastId,
          taskId,
          this.opts.feedMaxLen,
          ...valid.map((e) => JSON.stringify(e)),
        ],
      ),
    );
  }

  /** Up to `count` entries after `afterId` (exclusive; `'0-0'` from the start), envelope-checked. */
  async readTask(taskId: string, afterId = '0-0', count = 1_000): Promise<Page<StoredEntry>> {
    return this.readEntries(this.keys.taskStream(taskId), taskId, afterId, count);
  }

  /**
   * One page of a stream of entries of `taskId`. Decoding stays synchronous per entry (this is the
   * catch-up hot path); the rare dead letters are written after the page is decoded.
   */
  private async readEntries(
    key: string,
    taskId: string,
    afterId: string,
    count: number,
  ): Promise<Page<StoredEntry>> {
    const start = afterId === '0-0' ? '-' : `(${afterId}`;
    const raw = (await this.redis.xrange(key, start, '+', 'COUNT', count)) as XEntry[];
    const items: StoredEntry[] = [];
    let dead: [string, Fields, string][] | undefined;
    for (const [id, fields] of raw) {
      const r = decodeStoredEntry(field(fields, 'e'));
      if (r.ok && r.value.taskId === taskId) items.push({ id, entry: r.value });
      else {
        const reason = r.ok ? `taskId ${r.value.taskId} in the stream of ${taskId}` : r.reason;
        (dead ??= []).push([id, fields, reason]);
      }
    }
    if (dead) {
      const shard = this.shardOf(taskId);
      for (const [id, fields, reason] of dead)
        await this.deadLetter(shard, key, id, reason, fields);
    }
    return { items, lastId: raw.length > 0 ? raw[raw.length - 1]![0] : afterId };
  }

  /**
   * True when entries were ever removed from the front of the task stream (trimmed behind a
   * snapshot): then the stream alone no longer rebuilds the task.
   */
  async wasTrimmed(taskId: string): Promise<boolean> {
    let info: unknown[];
    try {
      info = (await this.redis.call('XINFO', 'STREAM', this.keys.taskStream(taskId))) as unknown[];
    } catch (err) {
      if (/no such key/i.test(String(err))) return false;
      throw err;
    }
    const at = (name: string) => Number(info[info.indexOf(name) + 1]);
    return at('entries-added') > at('length');
  }

  /** The id of the last entry of a task stream, `'0-0'` when it has none. */
  async lastId(taskId: string): Promise<string> {
    const last = (await this.redis.xrevrange(
      this.keys.taskStream(taskId),
      '+',
      '-',
      'COUNT',
      1,
    )) as XEntry[];
    return last[0]?.[0] ?? '0-0';
  }

  /**
   * Follows the feeds of `shards` with blocking reads on dedicated connections: one for all shards
   * on a single Redis, one per shard on a Cluster (a blocking read covers one slot there). `from`
   * gives the feed id to start after per shard; by default only notes written from now on.
   * One consumer per tail.
   */
  tailFeeds(
    shards: readonly number[],
    from: Readonly<Record<number, string>> = {},
  ): StreamTail<FeedNote> {
    const sources = shards.map((s) => ({ key: this.keys.feed(s), from: from[s] ?? '$' }));
    const shardOfKey = new Map(shards.map((s) => [this.keys.feed(s), s]));
    return this.follow(sources, async (key, id, fields) => {
      const shard = shardOfKey.get(key)!;
      const taskId = field(fields, 't');
      const lastId = field(fields, 'l');
      if (taskId && lastId) return { shard, id, taskId, lastId };
      await this.deadLetter(shard, key, id, 'feed note without t or l', fields);
      return null;
    });
  }

  private follow<T>(
    sources: { key: string; from: string }[],
    parse: (key: string, id: string, fields: Fields) => Promise<T | null>,
  ): StreamTail<T> {
    const r = this.redis;
    const groups: TailGroup[] = isCluster(r)
      ? sources.map((s) => ({ conn: duplicateForBlocking(r), sources: [s] }))
      : sources.length > 0
        ? [{ conn: duplicateForBlocking(r), sources }]
        : [];
    const t = new StreamTail<T>(groups, parse, this.opts.tailBlockMs);
    this.tails.add(t as StreamTail<unknown>);
    return t;
  }

  // ---------------------------------------------------------------------------------------------
  // Leases
  // ---------------------------------------------------------------------------------------------

  readonly leases = {
    /** Takes the shard if it is free or expired, with a new, greater epoch. */
    acquire: async (shard: number, owner: string, ttlMs: number): Promise<AcquireResult> => {
      const r = await this.run<[number, number | string, number]>(
        this.scripts.leaseAcquire([this.keys.lease(shard), this.keys.epoch(shard)], [owner, ttlMs]),
      );
      return r[0] === 1
        ? { acquired: true, lease: { shard, owner, epoch: Number(r[1]), expiresAt: r[2] } }
        : { acquired: false, owner: String(r[1]), expiresAt: r[2] };
    },
    /** Extends a held lease; {@link FencedError} if it was lost or had expired. */
    renew: async (lease: Lease, ttlMs: number): Promise<Lease> => {
      const expiresAt = await this.run<number>(
        this.scripts.leaseRenew([this.keys.lease(lease.shard)], [lease.owner, lease.epoch, ttlMs]),
      );
      return { ...lease, expiresAt };
    },
    /** Gives the shard up at once; false if the lease was no longer held. */
    release: async (lease: Lease): Promise<boolean> => {
      const r = await this.run<number>(
        this.scripts.leaseRelease([this.keys.lease(lease.shard)], [lease.owner, lease.epoch]),
      );
      return r === 1;
    },
    /** Who holds each shard now (shards never leased or lapsed are absent). */
    list: async (): Promise<Lease[]> => {
      const out: Lease[] = [];
      const replies = await Promise.all(
        Array.from({ length: this.keys.shards }, (_, shard) =>
          this.redis.hmget(this.keys.lease(shard), 'owner', 'epoch', 'expiresAt'),
        ),
      );
      replies.forEach(([owner, epoch, expiresAt], shard) => {
        if (owner && epoch && expiresAt) {
          out.push({ shard, owner, epoch: Number(epoch), expiresAt: Number(expiresAt) });
        }
      });
      return out;
    },
    /** The highest epoch ever issued for the shard (0 if none). */
    epoch: async (shard: number): Promise<number> =>
      Number((await this.redis.get(this.keys.epoch(shard))) ?? 0),
  };

  /** Projector instances: heartbeats, so instances that own nothing yet count when balancing. */
  readonly projectors = {
    /** Marks `instance` alive for `ttlMs` (server clock); returns every live instance, sorted. */
    heartbeat: async (instance: string, ttlMs: number): Promise<string[]> =>
      this.run<string[]>(
        this.scripts.projectorsHeartbeat([this.keys.projectors()], [instance, ttlMs]),
      ),
    /** Removes `instance` at once (it is shutting down). */
    leave: async (instance: string): Promise<void> => {
      await this.redis.zrem(this.keys.projectors(), instance);
    },
  };

  /**
   * The task ids of each shard that its owners have loaded. Feeds are bounded, so a new owner
   * finds a task whose notes were trimmed away here (with its snapshot).
   */
  readonly shardTasks = {
    add: async (shard: number, taskIds: readonly string[]): Promise<void> => {
      if (taskIds.length === 0) return;
      for (const t of taskIds) {
        if (this.shardOf(t) !== shard) throw new Error(`task ${t} is not in shard ${shard}`);
      }
      await this.redis.sadd(this.keys.shardTasks(shard), ...taskIds);
    },
    list: async (shard: number): Promise<string[]> =>
      (await this.redis.smembers(this.keys.shardTasks(shard))).sort(),
  };

  /** The id of the last note of a shard feed, `'0-0'` when it has none. */
  async feedLastId(shard: number): Promise<string> {
    const last = (await this.redis.xrevrange(
      this.keys.feed(shard),
      '+',
      '-',
      'COUNT',
      1,
    )) as XEntry[];
    return last[0]?.[0] ?? '0-0';
  }

  // ---------------------------------------------------------------------------------------------
  // Snapshots
  // ---------------------------------------------------------------------------------------------

  readonly snapshots = {
    /**
     * Stores `state` as covering the task stream up to `id`, fenced; never moves back. With
     * `checkpointEveryMs`, it is also kept as a checkpoint when the newest one is that much older
     * (see {@link snapshots.trim} and the history query).
     */
    write: async (
      lease: Lease,
      taskId: string,
      id: string,
      state: unknown,
      checkpointEveryMs = 0,
    ): Promise<void> => {
      this.checkLease(lease, taskId);
      await this.run(
        this.scripts.snapshotWrite(
          [this.keys.lease(lease.shard), this.keys.snapshot(taskId), this.keys.checkpoints(taskId)],
          [lease.epoch, id, JSON.stringify(state), checkpointEveryMs],
        ),
      );
    },
    /** The task's checkpoints (states it can be folded forward from), oldest first. */
    checkpoints: async (taskId: string): Promise<{ id: string; state: unknown }[]> => {
      const flat = await this.redis.hgetall(this.keys.checkpoints(taskId));
      return Object.entries(flat)
        .map(([id, json]) => ({ id, state: JSON.parse(json) as unknown }))
        .sort((a, b) => compareIds(a.id, b.id));
    },
    /** The task's snapshot, its state checked with `schema` when given. */
    read: async <S = unknown>(
      taskId: string,
      schema?: z.ZodType<S>,
    ): Promise<Snapshot<S> | null> => {
      const [id, state, epoch] = await this.redis.hmget(
        this.keys.snapshot(taskId),
        'id',
        'state',
        'epoch',
      );
      if (!id || state === null || state === undefined) return null;
      const parsed: unknown = JSON.parse(state);
      return { id, state: schema ? schema.parse(parsed) : (parsed as S), epoch: Number(epoch) };
    },
    /**
     * Removes the entries strictly before the snapshot's id, fenced. With `retainMs`, entries
     * younger than that (by the server's clock) stay, cut at a checkpoint so that they can still
     * be folded (nothing is trimmed before the first checkpoint that old). Returns how many.
     */
    trim: async (lease: Lease, taskId: string, retainMs = 0): Promise<number> => {
      this.checkLease(lease, taskId);
      return this.run<number>(
        this.scripts.trim(
          [
            this.keys.lease(lease.shard),
            this.keys.snapshot(taskId),
            this.keys.taskStream(taskId),
            this.keys.checkpoints(taskId),
          ],
          [lease.epoch, retainMs],
        ),
      );
    },
  };

  // ---------------------------------------------------------------------------------------------
  // Client updates
  // ---------------------------------------------------------------------------------------------

  /**
   * Publishes a task's updates (ascending seq) to its shard's update stream, fenced. Seqs already
   * published are skipped; a seq past last + 1 fails with {@link GapError} and writes nothing.
   * Every update names its entry and whether it ends the entry's group (`entry`, `last`): an
   * update without them is refused, since clients could not tell where its group ends.
   */
  async publishUpdates(
    lease: Lease,
    taskId: string,
    updates: readonly Update[],
  ): Promise<{ published: number; lastSeq: number }> {
    this.checkLease(lease, taskId);
    const args: (string | number)[] = [];
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
    const [published, lastSeq] = await this.run<[number, number]>(
      this.scripts.publishUpdates(
        [
          this.keys.lease(lease.shard),
          this.keys.updates(lease.shard),
          this.keys.updateSeqs(lease.shard),
        ],
        [lease.epoch, taskId, this.opts.updatesMaxLen, ...args],
      ),
    );
    return { published, lastSeq };
  }

  /** Updates of a shard after `afterId` (exclusive), envelope-checked. */
  async readUpdates(shard: number, afterId = '0-0', count = 1_000): Promise<Page<StoredUpdate>> {
    const key = this.keys.updates(shard);
    const start = afterId === '0-0' ? '-' : `(${afterId}`;
    const raw = (await this.redis.xrange(key, start, '+', 'COUNT', count)) as XEntry[];
    const items: StoredUpdate[] = [];
    for (const [id, fields] of raw) {
      const update = await this.decodeUpdate(shard, key, id, fields);
      if (update) items.push({ id, update });
    }
    return { items, lastId: raw.length > 0 ? raw[raw.length - 1]![0] : afterId };
  }

  /** Follows the update streams of `shards` (see {@link tailFeeds} for connections and `from`). */
  tailUpdates(
    shards: readonly number[],
    from: Readonly<Record<number, string>> = {},
  ): StreamTail<StoredUpdate> {
    const sources = shards.map((s) => ({ key: this.keys.updates(s), from: from[s] ?? '$' }));
    const shardOfKey = new Map(shards.map((s) => [this.keys.updates(s), s]));
    return this.follow(sources, async (key, id, fields) => {
      const update = await this.decodeUpdate(shardOfKey.get(key)!, key, id, fields);
      return update ? { id, update } : null;
    });
  }

  /** The last update seq published for a task (0 if none). */
  async lastUpdateSeq(taskId: string): Promise<number> {
    const v = await this.redis.hget(this.keys.updateSeqs(this.shardOf(taskId)), taskId);
    return Number(v ?? 0);
  }

  private async decodeUpdate(shard: number, key: string, id: string, fields: Fields) {
    const r = decodeStoredUpdate(field(fields, 'u'));
    if (r.ok) return r.value;
    await this.deadLetter(shard, key, id, r.reason, fields);
    return null;
  }

  // ---------------------------------------------------------------------------------------------
  // Execution inbox and raw frames
  // ---------------------------------------------------------------------------------------------

  readonly inbox = {
    /** Hands messages (an admitted prompt, a cancel) to an execution's worker, fenced. */
    append: async (
      lease: Lease,
      taskId: string,
      executionId: string,
      messages: readonly InboxMessage[],
    ): Promise<string[]> => {
      this.checkLease(lease, taskId);
      const valid = messages.map((raw, index) => {
        const r = InboxMessage.safeParse(raw);
        if (!r.success) throw new InvalidEntryError(index, zodReason(r.error));
        if (r.data.taskId !== taskId || r.data.executionId !== executionId) {
          throw new InvalidEntryError(index, `message for ${r.data.taskId}/${r.data.executionId}`);
        }
        return r.data;
      });
      return this.run<string[]>(
        this.scripts.inboxAppend(
          [this.keys.lease(lease.shard), this.keys.inbox(taskId, executionId)],
          [lease.epoch, this.opts.inboxMaxLen, ...valid.map((m) => JSON.stringify(m))],
        ),
      );
    },
    read: async (
      taskId: string,
      executionId: string,
      afterId = '0-0',
      count = 100,
    ): Promise<Page<StoredInboxMessage>> => {
      const key = this.keys.inbox(taskId, executionId);
      const start = afterId === '0-0' ? '-' : `(${afterId}`;
      const raw = (await this.redis.xrange(key, start, '+', 'COUNT', count)) as XEntry[];
      const items: StoredInboxMessage[] = [];
      for (const [id, fields] of raw) {
        const message = await this.decodeInbox(key, taskId, id, fields);
        if (message) items.push({ id, message });
      }
      return { items, lastId: raw.length > 0 ? raw[raw.length - 1]![0] : afterId };
    },
    /** Follows one execution's inbox with a blocking read on a dedicated connection. */
    tail: (taskId: string, executionId: string, from = '$'): StreamTail<StoredInboxMessage> => {
      const key = this.keys.inbox(taskId, executionId);
      return this.follow([{ key, from }], async (_key, id, fields) => {
        const message = await this.decodeInbox(key, taskId, id, fields);
        return message ? { id, message } : null;
      });
    },
    /** Removes an ended execution's inbox. */
    remove: async (taskId: string, executionId: string): Promise<void> => {
      await this.redis.del(this.keys.inbox(taskId, executionId));
    },
  };

  private async decodeInbox(
    key: string,
    taskId: string,
    id: string,
    fields: Fields,
  ): Promise<InboxMessage | null> {
    const r = decodeChecked(field(fields, 'e'), InboxMessage);
    if (r.ok && r.value.taskId === taskId) return r.value;
    const reason = r.ok ? `taskId ${r.value.taskId} in an inbox of ${taskId}` : r.reason;
    await this.deadLetter(this.shardOf(taskId), key, id, reason, fields);
    return null;
  }

  // ---------------------------------------------------------------------------------------------
  // Executions: leases and generations
  // ---------------------------------------------------------------------------------------------

  readonly executions = {
    /**
     * The next generation of a session's executions (1, 2, ...). Taken once per execution when it
     * starts, so a restarted execution always carries a higher generation than its predecessor.
     */
    nextGeneration: async (taskId: string, sessionId: string): Promise<number> =>
      this.redis.hincrby(this.keys.executionGenerations(taskId), sessionId, '1'),
    /** Takes or renews an execution's lease for `ttlMs` by the server clock; returns the expiry. */
    renewLease: async (ref: ExecutionRef, ttlMs: number): Promise<number> =>
      this.run<number>(
        this.scripts.executionLeaseRenew(
          [
            this.keys.executionLeases(this.shardOf(ref.taskId)),
            this.keys.executionLeaseTtls(this.shardOf(ref.taskId)),
          ],
          [executionMember(ref), ttlMs],
        ),
      ),
    /**
     * Extends a lease the execution still holds; null when it holds none any more: its owner
     * declared it lost (and dropped the lease), so its worker must stop it rather than revive it.
     */
    extendLease: async (ref: ExecutionRef, ttlMs: number): Promise<number | null> => {
      const r = await this.run<number>(
        this.scripts.executionLeaseRenew(
          [
            this.keys.executionLeases(this.shardOf(ref.taskId)),
            this.keys.executionLeaseTtls(this.shardOf(ref.taskId)),
          ],
          [executionMember(ref), ttlMs, '1'],
        ),
      );
      return r === -1 ? null : r;
    },
    /** Drops an execution's lease (its end is recorded, or it was declared lost). */
    dropLease: async (ref: ExecutionRef): Promise<void> => {
      const shard = this.shardOf(ref.taskId);
      await this.redis.zrem(this.keys.executionLeases(shard), executionMember(ref));
      await this.redis.hdel(this.keys.executionLeaseTtls(shard), executionMember(ref));
    },
    /** Leases of a shard that lapsed by the server clock, oldest first. */
    expiredLeases: async (shard: number, limit = 1_000): Promise<ExpiredExecutionLease[]> => {
      const flat = await this.run<string[]>(
        this.scripts.executionLeasesExpired(
          [this.keys.executionLeases(shard), this.keys.executionLeaseTtls(shard)],
          [limit],
        ),
      );
      const out: ExpiredExecutionLease[] = [];
      for (let i = 0; i + 2 < flat.length; i += 3) {
        const ref = parseExecutionMember(flat[i]!);
        const ttl = Number(flat[i + 2]);
        if (ref) out.push({ ...ref, expiresAt: Number(flat[i + 1]), ttlMs: ttl > 0 ? ttl : null });
      }
      return out;
    },
    /** Every execution holding a lease in a shard, live or lapsed. */
    leases: async (shard: number): Promise<ExpiredExecutionLease[]> => {
      const flat = await this.redis.zrange(
        this.keys.executionLeases(shard),
        '0',
        '-1',
        'WITHSCORES',
      );
      const out: ExpiredExecutionLease[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const ref = parseExecutionMember(flat[i]!);
        if (ref) out.push({ ...ref, expiresAt: Number(flat[i + 1]) });
      }
      return out;
    },
  };

  // ---------------------------------------------------------------------------------------------
  // Read models and tenancy
  // ---------------------------------------------------------------------------------------------

  readonly views = {
    /** Stores a task's current view, fenced; a view older than the stored one is ignored. */
    write: async (lease: Lease, view: TaskView): Promise<boolean> => {
      this.checkLease(lease, view.taskId);
      const r = await this.run<number>(
        this.scripts.viewWrite(
          [
            this.keys.lease(lease.shard),
            this.keys.views(lease.shard),
            this.keys.viewSeqs(lease.shard),
          ],
          [lease.epoch, view.taskId, view.seq, JSON.stringify(view)],
        ),
      );
      return r === 1;
    },
    /** The task's current view, or null when no owner has written one yet. */
    read: async (taskId: string): Promise<TaskView | null> => {
      const shard = this.shardOf(taskId);
      const json = await this.redis.hget(this.keys.views(shard), taskId);
      if (json === null) return null;
      const r = decodeChecked(json, TaskView);
      if (r.ok) return r.value;
      await this.deadLetter(shard, this.keys.views(shard), taskId, r.reason, ['v', json]);
      return null;
    },
  };

  /**
   * The task ids of each tenant, for listing and for telling a tenant's task from an absent one.
   * Written only by what writes to the task (a command, an execution start), never by a read.
   */
  readonly tenants = {
    /** Records `taskId` (a client's id, not a key) among the tasks of `tenant`. Idempotent. */
    add: async (tenant: string, taskId: string): Promise<void> => {
      await this.redis.sadd(this.keys.tenantTasks(tenant), taskId);
    },
    /** Whether `tenant` has a task `taskId`. */
    has: async (tenant: string, taskId: string): Promise<boolean> =>
      (await this.redis.sismember(this.keys.tenantTasks(tenant), taskId)) === 1,
    /** The task ids of a tenant, sorted. */
    tasks: async (tenant: string): Promise<string[]> =>
      (await this.redis.smembers(this.keys.tenantTasks(tenant))).sort(),
  };

  readonly rawFrames = {
    /** Appends raw ACP lines to the execution's bounded log, the batch atomically. */
    append: async (
      taskId: string,
      executionId: string,
      frames: readonly RawFrame[],
    ): Promise<string | null> => {
      if (frames.length === 0) return null;
      const args: string[] = [];
      for (const f of frames) args.push(f.direction, f.line);
      return this.run<string>(
        this.scripts.appendBounded(
          [this.keys.rawFrames(taskId, executionId)],
          [this.opts.rawFramesMaxLen, ...args],
        ),
      );
    },
    read: async (
      taskId: string,
      executionId: string,
      afterId = '0-0',
      count = 1_000,
    ): Promise<Page<{ id: string } & RawFrame>> => {
      const start = afterId === '0-0' ? '-' : `(${afterId}`;
      const raw = (await this.redis.xrange(
        this.keys.rawFrames(taskId, executionId),
        start,
        '+',
        'COUNT',
        count,
      )) as XEntry[];
      const items = raw.map(([id, fields]) => ({
        id,
        direction: field(fields, 'd') === 'out' ? ('out' as const) : ('in' as const),
        line: field(fields, 'f') ?? '',
      }));
      return { items, lastId: raw.length > 0 ? raw[raw.length - 1]![0] : afterId };
    },
  };

  // ---------------------------------------------------------------------------------------------
  // Dead letters
  // ---------------------------------------------------------------------------------------------

  private async deadLetter(
    shard: number,
    source: string,
    id: string,
    reason: string,
    fields: Fields,
  ) {
    await this.run(
      this.scripts.deadLetter(
        [this.keys.deadLetters(shard), this.keys.deadIndex(shard)],
        [source, id, reason, JSON.stringify(fields), this.opts.deadLettersMaxLen],
      ),
    );
  }

  readonly deadLetters = {
    /**
     * Records something refused on its way in from outside the task streams (an execution job a
     * worker will not run), once per (source, id), in the dead-letter stream of `shard`.
     * Returns whether it was recorded now (false: it already was).
     */
    add: async (
      shard: number,
      source: string,
      id: string,
      reason: string,
      raw: string,
    ): Promise<boolean> => {
      const r = await this.run(
        this.scripts.deadLetter(
          [this.keys.deadLetters(shard), this.keys.deadIndex(shard)],
          [source, id, reason.slice(0, 4_000), raw.slice(0, 64_000), this.opts.deadLettersMaxLen],
        ),
      );
      return r !== 0;
    },
    read: async (shard: number, afterId = '0-0', count = 1_000): Promise<Page<DeadLetter>> => {
      const start = afterId === '0-0' ? '-' : `(${afterId}`;
      const raw = (await this.redis.xrange(
        this.keys.deadLetters(shard),
        start,
        '+',
        'COUNT',
        count,
      )) as XEntry[];
      const items = raw.map(([id, f]) => ({
        id,
        source: field(f, 'src') ?? '',
        sourceId: field(f, 'id') ?? '',
        reason: field(f, 'reason') ?? '',
        raw: field(f, 'raw') ?? '',
      }));
      return { items, lastId: raw.length > 0 ? raw[raw.length - 1]![0] : afterId };
    },
  };

  /** Closes the tails and, when the store opened it, the connection. */
  async close(): Promise<void> {
    await Promise.all([...this.tails].map((t) => t.close()));
    this.tails.clear();
    if (this.ownsConnection) await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
