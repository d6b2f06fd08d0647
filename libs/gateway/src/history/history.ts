import {
  entryTime,
  HistoryFold,
  initialTaskState,
  stateFromSnapshot,
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

/** Entries per XRANGE page of a history query. */
const PAGE = 1_000;

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
    const h = new HistoryFold(
      key,
      {
        from,
        maxItems: this.limits.maxItems,
        ...(q.sessionId !== undefined ? { sessionId: q.sessionId } : {}),
      },
      start,
    );
    // Folded page by page while the next page is read. The entries of one millisecond wait until
    // a later one comes: a cut by maxEntries never splits a millisecond (the next query starts
    // at it), so what shares the cut's millisecond is never folded.
    const held: StreamEntry[] = [];
    let heldAt = -1;
    let inRange = 0;
    let truncated = false;
    let next: number | undefined;
    read: for await (const page of this.store.readTaskPages(key, after, { count: PAGE, until })) {
      if (page.items.length === 0) break;
      for (const item of page.items) {
        const at = entryTime(item.id);
        if (at > until) break read;
        // Before the range: folded into the state the range starts from.
        if (at < from) {
          h.add(at, item.entry);
          continue;
        }
        if (++inRange > this.limits.maxEntries) {
          if (heldAt === at) held.length = 0;
          truncated = true;
          next = at;
          break read;
        }
        if (at !== heldAt) {
          for (const e of held) h.add(heldAt, e);
          held.length = 0;
          heldAt = at;
        }
        held.push(item.entry);
      }
    }
    for (const e of held) h.add(heldAt, e);
    const history = h.finish(next !== undefined ? next - 1 : until);
    return {
      ...history,
      taskId: clientTaskId,
      truncated: history.truncated || truncated,
      ...(next !== undefined ? { next } : {}),
      ...(trimmed ? { trimmed: true } : {}),
    };
  }
}
