import type { StreamEntry, TaskHistory } from '@baton/protocol';
import {
  entryTime,
  HistoryObserver,
  HistoryReplay,
  HistorySpanBuilder,
  spanEntries,
  type HistorySpan,
  type Observation,
} from './history';
import { initialTaskState, type TaskState } from './state';

/** A state the history can fold forward from: a checkpoint, or the task's latest snapshot. */
export interface HistoryBase {
  /** The stream id it covers. */
  id: string;
  state: TaskState;
  /** Kept as a checkpoint (spans run between checkpoints); the snapshot is not. */
  checkpoint: boolean;
}

/** The stream's start, as the id a span from it is kept under. */
const START = '0-0';

export interface HistoryQueryInput {
  taskId: string;
  /** ms since the epoch, both inclusive. */
  since: number;
  until: number;
  sessionId?: string;
  /** Entries folded inside the range at most; past it the answer is cut (`next`). */
  maxEntries: number;
  /** Items per list of a session at most. */
  maxItems: number;
  /** The checkpoints and the snapshot, oldest first. */
  bases: readonly HistoryBase[];
  /** The stored spans, by the checkpoint they start after (`'0-0'`: the stream's start). */
  spans: ReadonlyMap<string, HistorySpan>;
  /** Whether the stream has been trimmed (its start is gone). */
  trimmed: boolean;
  /** The stream's entries after `afterId`, in pages, up to `until` or a little past it. */
  read(afterId: string): AsyncIterable<readonly { id: string; entry: StreamEntry }[]>;
  /** A span folded from the stream between two checkpoints, for the caller to keep. */
  built?(span: HistorySpan): void;
}

/**
 * The history query: the task's history over `[since, until]`, from the newest base at or before
 * `since`, through the stored spans while there are any, then folding the stream. The answer is
 * the one folding every entry from the task's start gives (checked over generated histories in
 * test/properties.spec.ts), whichever of the two each part came from.
 *
 * A stream trimmed behind the range's start cannot be folded from its start: then the history
 * begins at the oldest base there is, and says `trimmed`. Past `maxEntries` entries in the range
 * the answer is cut before the millisecond of the first one left out (`next`), so the next query,
 * from `next`, neither repeats nor misses one.
 */
export async function historyQuery(q: HistoryQueryInput): Promise<TaskHistory> {
  let from = q.since;
  let base = q.bases.filter((b) => entryTime(b.id) < q.since).at(-1);
  let trimmed = false;
  // A stream trimmed behind its first checkpoint still answers from its start through the span
  // kept from there (a hot-window trim keeps it while the retention keeps the start).
  if (!base && q.trimmed && !q.spans.has(START)) {
    base = q.bases[0];
    trimmed = true;
    if (base) from = Math.max(q.since, entryTime(base.id));
  }
  const start = base?.state ?? initialTaskState(q.taskId);
  const replay = new HistoryReplay(
    q.taskId,
    {
      from,
      maxItems: q.maxItems,
      ...(q.sessionId !== undefined ? { sessionId: q.sessionId } : {}),
    },
    new HistoryObserver(start).marks(),
  );

  // The entries of one millisecond wait until a later one comes: a cut by maxEntries never
  // splits a millisecond (the next query starts at it), so what shares the cut's millisecond is
  // never recorded.
  const held: Observation[][] = [];
  let heldAt = -1;
  let inRange = 0;
  let next: number | undefined;
  /** One entry; false once the range or the cut is reached. */
  const take = (at: number, observations: Observation[]): boolean => {
    if (at > q.until) return false;
    if (at < from) {
      replay.add(at, observations);
      return true;
    }
    if (++inRange > q.maxEntries) {
      if (heldAt === at) held.length = 0;
      next = at;
      return false;
    }
    if (at !== heldAt) {
      for (const o of held) replay.add(heldAt, o);
      held.length = 0;
      heldAt = at;
    }
    held.push(observations);
    return true;
  };

  const checkpoints = new Map(q.bases.filter((b) => b.checkpoint).map((b) => [b.id, b]));
  // The stream's start counts as a checkpoint: a span runs from it to the first one.
  let cursor = { id: base?.id ?? START, state: start, checkpoint: base?.checkpoint ?? true };
  let stopped = false;
  // Through the stored spans, one checkpoint to the next.
  for (let span = q.spans.get(cursor.id); span; span = q.spans.get(cursor.id)) {
    const end = cursor.checkpoint ? checkpoints.get(span.to) : undefined;
    if (!end) break;
    for (const { at, observations } of spanEntries(span)) {
      if (!take(at, observations)) {
        stopped = true;
        break;
      }
    }
    if (stopped) break;
    cursor = end;
  }
  // Then the stream, building the spans it folds between checkpoints as it goes.
  if (!stopped) {
    let builder = new HistorySpanBuilder(cursor.id, cursor.state);
    let spanning = cursor.checkpoint;
    read: for await (const page of q.read(cursor.id)) {
      if (page.length === 0) break;
      for (const { id, entry } of page) {
        const at = entryTime(id);
        if (at > q.until) break read;
        if (!take(at, builder.add(id, entry))) break read;
        if (checkpoints.has(id)) {
          if (spanning) q.built?.(builder.finish());
          builder = new HistorySpanBuilder(id, builder.state);
          spanning = true;
        }
      }
    }
  }
  for (const o of held) replay.add(heldAt, o);
  const history = replay.finish(next !== undefined ? next - 1 : q.until);
  return {
    ...history,
    truncated: history.truncated || next !== undefined,
    ...(next !== undefined ? { next } : {}),
    ...(trimmed ? { trimmed: true } : {}),
  };
}
