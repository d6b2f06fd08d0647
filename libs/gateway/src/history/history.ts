import {
  entryTime,
  fold,
  initialTaskState,
  stateFromSnapshot,
  taskHistory,
  type TaskState,
} from '@baton/activity';
import type { StreamEntry, TaskHistory } from '@baton/protocol';
import type { EventStore } from '@baton/store';
import { z } from 'zod';
import { WireFailure } from '../errors';

/** ms since the epoch, or an ISO 8601 time. */
const Time = z
  .string()
  .trim()
  .transform((v, ctx) => {
    const ms = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
    if (!Number.isSafeInteger(ms) || ms < 0) {
      ctx.addIssue({ code: 'custom', message: 'a time: ms since the epoch, or ISO 8601' });
      return z.NEVER;
    }
    return ms;
  });

/** The widest range one query may ask for. */
export const MAX_HISTORY_RANGE_MS = 31 * 24 * 3600 * 1000;

export const HistoryQuery = z.strictObject({
  /** Start of the range (default: the range's end minus one day). */
  since: Time.optional(),
  /** End of the range, inclusive (default: now). */
  until: Time.optional(),
});

export interface HistoryLimits {
  /** Entries one query folds inside its range at most; past it the answer is `truncated`. */
  maxEntries: number;
  /** Items per list of a session at most. */
  maxItems: number;
}

/**
 * The history query: reads the task stream and folds it with libs/activity's taskHistory. A range
 * that starts after the task's snapshot folds from the snapshot, so a long stream is not folded
 * from zero for every request; a stream trimmed behind the range's start says so (`trimmed`).
 */
export class History {
  constructor(
    private readonly store: EventStore,
    private readonly limits: HistoryLimits = { maxEntries: 200_000, maxItems: 10_000 },
  ) {}

  async query(
    key: string,
    clientTaskId: string,
    q: { since?: number; until?: number; sessionId?: string },
  ): Promise<TaskHistory> {
    const until = q.until ?? Date.now();
    const since = q.since ?? until - 24 * 3600 * 1000;
    if (since > until) throw new WireFailure('invalid_message', 'since is after until', 'since');
    if (until - since > MAX_HISTORY_RANGE_MS) {
      throw new WireFailure(
        'invalid_message',
        `a history range is at most ${MAX_HISTORY_RANGE_MS / 86_400_000} days`,
        'since',
      );
    }
    let start: TaskState = initialTaskState(key);
    let after = '0-0';
    let from = since;
    const [snap, checkpoints, trimmedStream] = await Promise.all([
      this.store.snapshots.read(key),
      this.store.snapshots.checkpoints(key),
      this.store.wasTrimmed(key),
    ]);
    // States to fold forward from, oldest first: the checkpoints, then the latest snapshot.
    const bases = [...checkpoints, ...(snap ? [snap] : [])].flatMap((b) => {
      const state = stateFromSnapshot(b.state, key);
      return state ? [{ id: b.id, state }] : [];
    });
    // The newest state at or before the range's start saves folding what comes before it. A
    // trimmed stream cannot be folded from its start: then the oldest state there is, and what
    // happened before it is gone (`trimmed`).
    let base = bases.filter((b) => entryTime(b.id) <= since).at(-1);
    let trimmed = false;
    if (!base && trimmedStream) {
      base = bases[0];
      trimmed = true;
      if (base) from = Math.max(since, entryTime(base.id));
    }
    if (base) {
      start = base.state;
      after = base.id;
    }
    const entries: { id: string; entry: StreamEntry }[] = [];
    let inRange = 0;
    let truncated = false;
    let next: number | undefined;
    for (;;) {
      const page = await this.store.readTask(key, after, 1_000);
      let done = page.items.length === 0;
      for (const item of page.items) {
        const at = entryTime(item.id);
        if (at > until) {
          done = true;
          break;
        }
        // Before the range: folded at once into the state the range starts from, not kept.
        if (at < from) {
          start = fold(start, item.entry).state;
          continue;
        }
        if (++inRange > this.limits.maxEntries) {
          // Pages meet at a millisecond: what shares this one goes to the next page.
          while (entries.length > 0 && entryTime(entries[entries.length - 1]!.id) === at) {
            entries.pop();
          }
          truncated = true;
          next = at;
          done = true;
          break;
        }
        entries.push({ id: item.id, entry: item.entry });
      }
      if (done || page.lastId === after) break;
      after = page.lastId;
    }
    const h = taskHistory(
      key,
      entries,
      {
        from,
        to: next !== undefined ? next - 1 : until,
        maxItems: this.limits.maxItems,
        ...(q.sessionId !== undefined ? { sessionId: q.sessionId } : {}),
      },
      start,
    );
    return {
      ...h,
      taskId: clientTaskId,
      truncated: h.truncated || truncated,
      ...(next !== undefined ? { next } : {}),
      ...(trimmed ? { trimmed: true } : {}),
    };
  }
}
