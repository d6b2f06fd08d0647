import {
  HistorySpanBuilder,
  spanFromJson,
  stateFromSnapshot,
  type HistorySpan,
} from '@baton/activity';
import type { StoreContext } from './shared';
import type { TaskStreams } from './task-streams';

/**
 * History spans (`thist:`): the history's read model, one per pair of consecutive checkpoints of
 * a task (libs/activity HistorySpan). Derived from the stream by the same fold whoever builds
 * them, so they are written unfenced, and only while both their checkpoints are kept.
 */
export class HistorySpans {
  constructor(
    private readonly ctx: StoreContext,
    private readonly tasks: TaskStreams,
  ) {}

  /** The task's spans, by the checkpoint each starts after; one unreadable is left out. */
  async read(taskId: string): Promise<Map<string, HistorySpan>> {
    const flat = await this.ctx.redis.hgetall(this.ctx.keys.historySpans(taskId));
    const spans = new Map<string, HistorySpan>();
    for (const [from, json] of Object.entries(flat)) {
      // Another version (or a torn value) is built again by the next query that needs it.
      const span = spanFromJson(json, from);
      if (span) spans.set(from, span);
    }
    return spans;
  }

  /** Keeps `span` while both its checkpoints are kept; false when one is gone. */
  async write(taskId: string, span: HistorySpan): Promise<boolean> {
    const { keys } = this.ctx;
    const kept = await this.ctx.scripts.historySpanWrite(
      [keys.checkpoints(taskId), keys.historySpans(taskId)],
      [span.from, span.to, JSON.stringify(span)],
    );
    return kept === 1;
  }

  /**
   * Builds the span from checkpoint `from` to checkpoint `to` by folding the stream between them
   * from `from`'s state; null when that state is gone or of another version, or the stream no
   * longer holds the entries up to `to`.
   */
  async build(taskId: string, from: string, to: string): Promise<HistorySpan | null> {
    const json = await this.ctx.redis.hget(this.ctx.keys.checkpoints(taskId), from);
    const state = json === null ? null : stateFromSnapshot(JSON.parse(json) as unknown, taskId);
    if (!state) return null;
    const builder = new HistorySpanBuilder(from, state);
    // `to` itself may be an entry the fold refused (dead-lettered): the page says it was read.
    for await (const page of this.tasks.pages(taskId, from, 1_000, to)) {
      for (const { id, entry } of page.items) builder.add(id, entry);
      if (page.lastId === to) return builder.finish(to);
      if (page.items.length === 0) break;
    }
    return null;
  }
}
