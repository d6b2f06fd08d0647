import { Update, type StreamEntry, type TaskView } from '@baton/protocol';
import { GapError, InvalidEntryError } from '../errors';
import type { ScriptArgs } from '../scripts';
import { decodeStoredUpdate, zodReason } from '../stored';
import type { StreamTail } from '../tail';
import { fenceToken, stampedWithFence, type Lease } from './leases';
import { validateEntries } from './task-streams';
import { field, Refused, type Fields, type Page, type StoreContext } from './shared';

/**
 * What one owner step writes (see {@link EventStore.commit}). `updates` are ascending by seq; an
 * update of one of `entries` is given as `{ of: k, update }` (k from 1), since its entry's id is
 * only known once appended.
 */
export interface Step {
  readonly expectedLastId?: string;
  readonly entries?: readonly StreamEntry[];
  readonly updates: readonly (Update | { readonly of: number; readonly update: Update })[];
  readonly view?: TaskView;
}

export interface Committed {
  /** The ids of `entries`, in order. */
  ids: string[];
  published: number;
  lastSeq: number;
  viewStored: boolean;
}

/** One task's step without decisions, for {@link EventStore.publishMany}. */
export interface Publication {
  readonly taskId: string;
  readonly updates: readonly Update[];
  readonly view?: TaskView;
}

/** Tasks per publishMany call: bounds the script's ARGV and its unpack of the task ids. */
export const PUBLISH_MANY_TASKS = 64;

export interface StoredUpdate {
  id: string;
  update: Update;
}

/**
 * The notice that a task's published history was rewritten: Redis lost writes it had
 * acknowledged and the owner loaded the task again from what Redis holds, so updates a client was
 * sent may be gone and their seqs are used again. Whoever follows the task starts again from its
 * view (at `seq`).
 */
export interface HistoryRewritten {
  id: string;
  rewritten: { taskId: string; seq: number };
}

/** What a follower of the update streams reads: updates, and the notices among them. */
export type UpdateStreamItem = StoredUpdate | HistoryRewritten;

function checkView(taskId: string, view: TaskView | undefined): void {
  if (view && view.taskId !== taskId) {
    throw new InvalidEntryError(0, `view of ${view.taskId} written for ${taskId}`);
  }
}

/** An update of `taskId` to publish; `complete`: it names its entry (not one appended with it). */
function validUpdate(taskId: string, u: unknown, index: number, complete: boolean): Update {
  const r = Update.safeParse(u);
  if (!r.success) throw new InvalidEntryError(index, zodReason(r.error));
  if (r.data.last === undefined || (complete && r.data.entry === undefined)) {
    throw new InvalidEntryError(index, 'an update must name its entry and mark its last');
  }
  if (r.data.taskId !== taskId) {
    throw new InvalidEntryError(index, `update of ${r.data.taskId} published for ${taskId}`);
  }
  return r.data;
}

function decodeUpdate(id: string, fields: Fields): StoredUpdate | Refused {
  const r = decodeStoredUpdate(field(fields, 'u'));
  return r.ok ? { id, update: r.value } : new Refused(r.reason);
}

function decodeItem(id: string, fields: Fields): UpdateStreamItem | Refused {
  if (field(fields, 'rw') === undefined) return decodeUpdate(id, fields);
  const taskId = field(fields, 't');
  const seq = Number(field(fields, 's'));
  return taskId !== undefined && Number.isSafeInteger(seq) && seq >= 0
    ? { id, rewritten: { taskId, seq } }
    : new Refused('a rewritten-history notice without its task or seq');
}

/**
 * Client updates: each shard's update stream (`updates`) and the last seq per task (`useq`); and
 * the owner's step write, which appends its decisions and stores the view with them.
 */
export class Updates {
  constructor(private readonly ctx: StoreContext) {}

  /** See {@link EventStore.publishUpdates}. */
  async publish(
    lease: Lease,
    taskId: string,
    updates: readonly Update[],
  ): Promise<{ published: number; lastSeq: number }> {
    const { published, lastSeq } = await this.commit(lease, taskId, { updates });
    return { published, lastSeq };
  }

  /** See {@link EventStore.commit}. */
  async commit(lease: Lease, taskId: string, step: Step): Promise<Committed> {
    this.ctx.checkLease(lease, taskId);
    const { keys, opts } = this.ctx;
    const entries = stampedWithFence(lease, validateEntries(taskId, step.entries ?? []));
    const view = step.view;
    checkView(taskId, view);
    const args: ScriptArgs<'commit'> = [
      fenceToken(lease),
      taskId,
      step.expectedLastId ?? '',
      opts.feedMaxLen,
      opts.updatesMaxLen,
      entries.length,
      view ? view.seq : '',
      view ? JSON.stringify(view) : '',
    ];
    for (const e of entries) args.push(JSON.stringify(e));
    step.updates.forEach((item, index) => {
      const of = 'of' in item ? item.of : 0;
      const u = 'of' in item ? item.update : item;
      const r = validUpdate(taskId, u, index, of === 0);
      if (of === 0) {
        args.push(r.seq, 0, JSON.stringify(r));
        return;
      }
      if (!Number.isInteger(of) || of < 1 || of > entries.length) {
        throw new InvalidEntryError(index, `update of entry ${of} of ${entries.length} appended`);
      }
      // Its entry's id is Redis's to choose: the script closes the JSON with it.
      const { entry: _entry, ...rest } = r;
      const open = JSON.stringify({ ...rest, entry: '' });
      args.push(r.seq, of, open.slice(0, -2));
    });
    const [published, lastSeq, stored, ...ids] = await this.ctx.scripts.commit(
      [
        keys.lease(lease.shard),
        keys.taskStream(taskId),
        keys.feed(lease.shard),
        keys.updates(lease.shard),
        keys.updateSeqs(lease.shard),
        keys.views(lease.shard),
      ],
      args,
    );
    return { ids, published, lastSeq, viewStored: stored === 1 };
  }

  /** See {@link EventStore.publishMany}. */
  async publishMany(
    lease: Lease,
    steps: readonly Publication[],
  ): Promise<(Omit<Committed, 'ids'> | GapError)[]> {
    if (steps.length === 0) return [];
    if (steps.length > PUBLISH_MANY_TASKS) {
      throw new RangeError(
        `${steps.length} tasks in one publishMany, at most ${PUBLISH_MANY_TASKS}`,
      );
    }
    const { keys, opts } = this.ctx;
    const seen = new Set<string>();
    const args: ScriptArgs<'publishMany'> = [fenceToken(lease), opts.updatesMaxLen, steps.length];
    for (const { taskId, updates, view } of steps) {
      this.ctx.checkLease(lease, taskId);
      if (seen.has(taskId)) throw new Error(`task ${taskId} twice in one publishMany`);
      seen.add(taskId);
      checkView(taskId, view);
      args.push(taskId, view ? view.seq : '', view ? JSON.stringify(view) : '', updates.length);
      updates.forEach((u, index) => {
        const r = validUpdate(taskId, u, index, true);
        args.push(r.seq, JSON.stringify(r));
      });
    }
    const replies = await this.ctx.scripts.publishMany(
      [
        keys.lease(lease.shard),
        keys.updates(lease.shard),
        keys.updateSeqs(lease.shard),
        keys.views(lease.shard),
      ],
      args,
    );
    return replies.map((r) =>
      r[0] === 1
        ? { published: r[1], lastSeq: r[2], viewStored: r[3] === 1 }
        : new GapError(r[1], r[2]),
    );
  }

  /**
   * Tells every follower of `taskId` that its published history was rewritten (see
   * {@link StoredUpdate}): its view is now at `seq`. Not fenced: a stale owner's notice costs a
   * snapshot, nothing more.
   */
  async announceRewritten(taskId: string, seq: number): Promise<void> {
    const { keys, opts, redis } = this.ctx;
    const shard = this.ctx.shardOf(taskId);
    await redis.xadd(
      keys.updates(shard),
      'MAXLEN',
      '~',
      opts.updatesMaxLen,
      '*',
      't',
      taskId,
      's',
      String(seq),
      'rw',
      '1',
    );
  }

  /** A page of updates (the notices among them left out; the cursor moves past them). */
  async read(shard: number, afterId: string, count: number): Promise<Page<StoredUpdate>> {
    const page = await this.ctx.page(
      this.ctx.keys.updates(shard),
      shard,
      afterId,
      count,
      decodeItem,
    );
    return { ...page, items: page.items.filter((i): i is StoredUpdate => 'update' in i) };
  }

  tail(
    shards: readonly number[],
    from: Readonly<Record<number, string>>,
  ): StreamTail<UpdateStreamItem> {
    const stream = (shard: number) => this.ctx.keys.updates(shard);
    return this.ctx.followShards(shards, from, stream, decodeItem);
  }

  async lastSeq(taskId: string): Promise<number> {
    const v = await this.ctx.redis.hget(this.ctx.keys.updateSeqs(this.ctx.shardOf(taskId)), taskId);
    return Number(v ?? 0);
  }
}
