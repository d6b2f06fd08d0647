import { historyQuery, stateFromSnapshot, type HistorySpan } from '@baton/activity';
import type { TaskHistory } from '@baton/protocol';
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
 * The history query (libs/activity historyQuery): from the newest checkpoint or snapshot at or
 * before the range's start, through the history spans between checkpoints (the read model the
 * owner writes), then the task stream after the last of them. A long stream is therefore neither
 * folded from zero nor refolded between checkpoints; a stream trimmed behind the range's start
 * says so (`trimmed`).
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
    const [snap, checkpoints, spans, trimmed] = await Promise.all([
      this.store.snapshots.read(key),
      this.store.snapshots.checkpoints(key),
      this.store.historySpans.read(key),
      this.store.wasTrimmed(key),
    ]);
    // States to fold forward from, oldest first: the checkpoints, then the latest snapshot.
    const bases = [
      ...checkpoints.map((c) => ({ ...c, checkpoint: true })),
      ...(snap ? [{ id: snap.id, state: snap.state, checkpoint: false }] : []),
    ].flatMap((b) => {
      const state = stateFromSnapshot(b.state, key);
      return state ? [{ id: b.id, state, checkpoint: b.checkpoint }] : [];
    });
    const built: HistorySpan[] = [];
    const history = await historyQuery({
      taskId: key,
      since,
      until,
      ...(q.sessionId !== undefined ? { sessionId: q.sessionId } : {}),
      maxEntries: this.limits.maxEntries,
      maxItems: this.limits.maxItems,
      bases,
      spans,
      trimmed,
      read: (after) => this.entries(key, after, until),
      built: (span) => built.push(span),
    });
    // Spans the owner had not written (the query folded their entries): kept for the next query.
    for (const span of built) await this.store.historySpans.write(key, span);
    const positions = await this.store.transcripts.positions(key, since, until);
    const sessions = history.sessions.map((s) => {
      const at = positions.get(s.sessionId);
      return at ? { ...s, transcript: at } : s;
    });
    return { ...history, sessions, taskId: clientTaskId };
  }

  /** The stream after `after` up to `until`, page by page; the next page is read meanwhile. */
  private async *entries(key: string, after: string, until: number) {
    for await (const page of this.store.readTaskPages(key, after, { count: PAGE, until })) {
      yield page.items;
    }
  }
}
