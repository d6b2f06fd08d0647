import {
  HistorySpanBuilder,
  initialTaskState,
  spanFromJson,
  stateFromSnapshot,
  type HistorySpan,
  type TaskState,
} from '@baton/activity';
import { promisify } from 'node:util';
import { deflate, inflate } from 'node:zlib';
import type { StoreContext } from './shared';
import type { TaskStreams } from './task-streams';

/** The stream's start: the span from it (to the first checkpoint) is kept under this id. */
const START = '0-0';

const deflated = promisify(deflate);
const inflated = promisify(inflate);
/** A span's JSON starts with `{`; its zlib form with 0x78 (the deflate method's header). */
const OPEN_BRACE = 0x7b;

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
    const flat = await this.ctx.redis.hgetallBuffer(this.ctx.keys.historySpans(taskId));
    const spans = new Map<string, HistorySpan>();
    await Promise.all(
      Object.entries(flat).map(async ([from, stored]) => {
        // Another version (or a torn value) is built again by the next query that needs it.
        const span = spanFromJson(await jsonOf(stored), from);
        if (span) spans.set(from, span);
      }),
    );
    return spans;
  }

  /** Keeps `span` while both its checkpoints are kept; false when one is gone. */
  async write(taskId: string, span: HistorySpan): Promise<boolean> {
    const { keys } = this.ctx;
    const kept = await this.ctx.scripts.historySpanWrite(
      [keys.checkpoints(taskId), keys.historySpans(taskId)],
      // Compressed: spans are most of what a day of history keeps in Redis, and zlib takes
      // their JSON to about a tenth.
      [span.from, span.to, await deflated(JSON.stringify(span))],
    );
    return kept === 1;
  }

  /**
   * Builds the span from checkpoint `from` (`'0-0'`: the stream's start) to checkpoint `to` by
   * folding the stream between them from `from`'s state; null when that state is gone or of
   * another version, or the stream no longer holds the entries up to `to`.
   */
  async build(taskId: string, from: string, to: string): Promise<HistorySpan | null> {
    let state: TaskState | null;
    if (from === START) {
      // From the stream's start: only while the stream still holds it.
      if (await this.tasks.wasTrimmed(taskId)) return null;
      state = initialTaskState(taskId);
    } else {
      const json = await this.ctx.redis.hget(this.ctx.keys.checkpoints(taskId), from);
      state = json === null ? null : stateFromSnapshot(JSON.parse(json) as unknown, taskId);
    }
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

/** A stored span's JSON: zlib-compressed, or plain as earlier versions wrote it. */
async function jsonOf(stored: Buffer): Promise<string> {
  if (stored[0] === OPEN_BRACE) return stored.toString('utf8');
  try {
    return (await inflated(stored)).toString('utf8');
  } catch {
    return '';
  }
}
