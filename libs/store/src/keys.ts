/**
 * The Redis key layout of Baton, in one place.
 *
 * Tasks map to a fixed number of shards (per deployment; changing it moves tasks to other keys, so
 * it is chosen once). A task's shard is FNV-1a (32-bit) of the UTF-8 bytes of its id, modulo the
 * shard count. Every key of a shard carries the hash tag `{b:<shard>}`, so all keys one script
 * touches live in one Redis Cluster slot and Baton runs unchanged on a Cluster.
 *
 * With prefix `baton` and shard 7:
 *
 * | key                              | type   | holds                                                |
 * |----------------------------------|--------|------------------------------------------------------|
 * | baton:{b:7}:ts:<taskId>          | stream | the task stream: facts, commands, decisions (`e`)    |
 * | baton:{b:7}:tw:<taskId>          | hash   | append dedupe: writer instance -> highest seq        |
 * | baton:{b:7}:tsnap:<taskId>       | hash   | snapshot: `state` JSON, stream `id` covered, `epoch` |
 * | baton:{b:7}:tckpt:<taskId>       | hash   | checkpoints: stream id -> state JSON (history base)  |
 * | baton:{b:7}:thist:<taskId>       | hash   | history spans: checkpoint id -> the observations up  |
 * |                                  |        | to the next checkpoint (the history's read model)    |
 * | baton:{b:7}:feed                 | stream | one note per append: task `t`, last id `l`; the      |
 * |                                  |        | owner cuts it behind the notes it has handled        |
 * | baton:{b:7}:lease                | hash   | lease: `owner`, `epoch`, `expiresAt`; PEXPIREs       |
 * | baton:{b:7}:epoch                | string | fencing epoch counter; never deleted or expired      |
 * | baton:{b:7}:epochs               | hash   | epoch history: epoch -> owner, `from` (server ms of  |
 * |                                  |        | the first one kept); the fold checks decision fences |
 * | baton:{b:7}:updates              | stream | client updates: task `t`, seq `s`, update JSON `u`   |
 * | baton:{b:7}:useq                 | hash   | task id -> last published update seq                 |
 * | baton:{b:7}:xi:<task>:<execId>   | stream | the execution's inbox (prompts handed to the worker) |
 * | baton:{b:7}:xr:<task>:<execId>   | stream | the execution's raw ACP frames: a write an entry,    |
 * |                                  |        | `n` frames, zlib `z` of [direction, line] pairs      |
 * |                                  |        | (earlier: a frame an entry, direction `d`, `f`)      |
 * | baton:{b:7}:tt:<taskId>          | stream | the task's transcript: session `s`, execution `x`,   |
 * |                                  |        | event JSON `e` (libs/transcript); never folded       |
 * | baton:{b:7}:ttc:<taskId>         | stream | the transcript's front compacted: per range, its     |
 * |                                  |        | first id `f`, its events compacted, zlib `z` (id:    |
 * |                                  |        | the range's last id)                                 |
 * | baton:{b:7}:dead                 | stream | dead letters: `src` key, `id`, `reason`, `raw`       |
 * | baton:{b:7}:deadidx              | hash   | source entries already dead-lettered                 |
 * | baton:{b:7}:xleases              | zset   | execution leases: [task, session, exec] -> expiry  |
 * | baton:{b:7}:xleasettl            | hash   | execution leases: [task, session, exec] -> ttl ms  |
 * | baton:{b:7}:xgen:<taskId>        | hash   | session id -> last execution generation handed out   |
 * | baton:{b:7}:views                | hash   | task id -> current TaskView JSON (the read model)    |
 * |                                  |        | (its version is the task's `useq`: see commit-6.lua) |
 * | baton:{b:7}:tn:<tenant>          | set    | the task ids (a client's, not keys) of one tenant    |
 * |                                  |        | in this shard                                        |
 * | baton:{t:<tenant>}:tasks         | set    | before `tn`: a tenant's task ids across shards; read |
 * |                                  |        | only, for the tasks recorded there                   |
 * | baton:{t:<tenant>}:stored        | hash   | bytes the tenant's clients appended, by time bucket  |
 * |                                  |        | (server ms): its quota of stored bytes               |
 * | baton:{b:7}:live                 | set    | the task ids a new owner loads: every task appended  |
 * |                                  |        | to (append-4.lua) and not put away since             |
 * | baton:{b:7}:livei                | string | the live set was started from `tasks` (liveInit)     |
 * | baton:{b:7}:tasks                | set    | before `live`: every task id its owners had loaded   |
 * | baton:{b:7}:trims                | zset   | task put away -> server time (ms) its retention      |
 * |                                  |        | trim is due                                          |
 * | baton:projectors                 | zset   | live projector instances -> heartbeat expiry         |
 *
 * A task id here is the task's key, `<tenant>/<client task id>` (libs/protocol task-key.ts): the
 * hash tag comes first, so a `/` or a brace inside a key never changes the slot. Ids come last in
 * every key and each kind has its own infix, so no task or execution id (which may contain `:`)
 * can make one key collide with another. An execution's keys live in its task's
 * shard so the owner's fenced inbox write is one slot with the lease.
 */

export const DEFAULT_SHARDS = 64;
export const DEFAULT_PREFIX = 'baton';

/** FNV-1a, 32 bit, over the UTF-8 bytes of `s`. Stable across processes, versions and platforms. */
export function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(s, 'utf8')) {
    h ^= byte;
    // h * 16777619 mod 2^32, split so the product stays exact in a double.
    h = (h + (h << 1) + (h << 4) + (h << 7) + (h << 8) + (h << 24)) >>> 0;
  }
  return h >>> 0;
}

export class KeyLayout {
  constructor(
    readonly shards: number = DEFAULT_SHARDS,
    readonly prefix: string = DEFAULT_PREFIX,
  ) {
    if (!Number.isInteger(shards) || shards < 1 || shards > 16_384) {
      throw new RangeError(`shard count must be an integer in 1..16384, got ${shards}`);
    }
    // A brace in the prefix would become the hash tag and put every shard in one slot.
    if (/[{}]/.test(prefix)) throw new RangeError(`key prefix must not contain braces: ${prefix}`);
  }

  shardOf(taskId: string): number {
    return fnv1a32(taskId) % this.shards;
  }

  /** Prefix of every key of a shard, hash tag included. */
  shardBase(shard: number): string {
    return `${this.prefix}:{b:${shard}}`;
  }

  taskStream(taskId: string): string {
    return `${this.shardBase(this.shardOf(taskId))}:ts:${taskId}`;
  }
  taskDedupe(taskId: string): string {
    return `${this.shardBase(this.shardOf(taskId))}:tw:${taskId}`;
  }
  snapshot(taskId: string): string {
    return `${this.shardBase(this.shardOf(taskId))}:tsnap:${taskId}`;
  }
  checkpoints(taskId: string): string {
    return `${this.shardBase(this.shardOf(taskId))}:tckpt:${taskId}`;
  }
  historySpans(taskId: string): string {
    return `${this.shardBase(this.shardOf(taskId))}:thist:${taskId}`;
  }
  feed(shard: number): string {
    return `${this.shardBase(shard)}:feed`;
  }
  lease(shard: number): string {
    return `${this.shardBase(shard)}:lease`;
  }
  epoch(shard: number): string {
    return `${this.shardBase(shard)}:epoch`;
  }
  epochs(shard: number): string {
    return `${this.shardBase(shard)}:epochs`;
  }
  updates(shard: number): string {
    return `${this.shardBase(shard)}:updates`;
  }
  updateSeqs(shard: number): string {
    return `${this.shardBase(shard)}:useq`;
  }
  // Execution ids are chosen by clients, so they are named under their task: two tenants (or two
  // tasks) using one execution id never share an inbox. The task is escaped (no `:` left in it),
  // which keeps the two parts apart.
  inbox(taskId: string, executionId: string): string {
    return `${this.shardBase(this.shardOf(taskId))}:xi:${encodeURIComponent(taskId)}:${executionId}`;
  }
  rawFrames(taskId: string, executionId: string): string {
    return `${this.shardBase(this.shardOf(taskId))}:xr:${encodeURIComponent(taskId)}:${executionId}`;
  }
  /** Beside the task stream, in its shard: a Cluster keeps a task's transcript with its facts. */
  transcript(taskId: string): string {
    return `${this.shardBase(this.shardOf(taskId))}:tt:${taskId}`;
  }
  /** The transcript's compacted front, beside it. */
  transcriptCompacted(taskId: string): string {
    return `${this.shardBase(this.shardOf(taskId))}:ttc:${taskId}`;
  }
  deadLetters(shard: number): string {
    return `${this.shardBase(shard)}:dead`;
  }
  deadIndex(shard: number): string {
    return `${this.shardBase(shard)}:deadidx`;
  }
  executionLeases(shard: number): string {
    return `${this.shardBase(shard)}:xleases`;
  }
  executionLeaseTtls(shard: number): string {
    return `${this.shardBase(shard)}:xleasettl`;
  }
  executionGenerations(taskId: string): string {
    return `${this.shardBase(this.shardOf(taskId))}:xgen:${taskId}`;
  }
  views(shard: number): string {
    return `${this.shardBase(shard)}:views`;
  }
  /**
   * The task set of the versions before the live set: every task its owners had loaded, put away
   * or not. Read once, to start the live set (liveInit-3.lua).
   */
  shardTasks(shard: number): string {
    return `${this.shardBase(shard)}:tasks`;
  }
  /**
   * Task ids of a shard appended to and not put away since: what a new owner loads (their feed
   * notes may have been cut). A task put away is at rest in its snapshot; its next append puts it
   * back.
   */
  shardLive(shard: number): string {
    return `${this.shardBase(shard)}:live`;
  }
  /** Set once the live set was started from the older task set. */
  shardLiveStarted(shard: number): string {
    return `${this.shardBase(shard)}:livei`;
  }
  /** Tasks put away whose streams the retention still has to trim, by when (server ms). */
  shardTrims(shard: number): string {
    return `${this.shardBase(shard)}:trims`;
  }
  /** Not in a shard: projector instances of the deployment, for balancing shards among them. */
  projectors(): string {
    return `${this.prefix}:projectors`;
  }
  /**
   * A tenant's tasks in one shard: recorded and checked on the master of the task itself, so a
   * lost Cluster master costs the tenant only the tasks that lived on it.
   */
  tenantShardTasks(shard: number, tenant: string): string {
    return `${this.shardBase(shard)}:tn:${tenant}`;
  }
  /**
   * Not in a shard: a tenant's task list of the versions before {@link tenantShardTasks}, read
   * for the tasks recorded there. Braces in a tenant id are refused.
   */
  tenantTasks(tenant: string): string {
    if (/[{}]/.test(tenant)) throw new RangeError(`tenant id must not contain braces: ${tenant}`);
    return `${this.prefix}:{t:${tenant}}:tasks`;
  }
  /** Beside the tenant's task list, in its slot. */
  tenantStored(tenant: string): string {
    if (/[{}]/.test(tenant)) throw new RangeError(`tenant id must not contain braces: ${tenant}`);
    return `${this.prefix}:{t:${tenant}}:stored`;
  }
}
