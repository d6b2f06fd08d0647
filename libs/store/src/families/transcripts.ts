import { TranscriptEvent } from '@baton/transcript';
import { InvalidEntryError } from '../errors';
import { zodReason } from '../stored';
import { field, Refused, type Fields, type Page, type StoreContext } from './shared';

/** An event of a task's transcript as stored: its stream id is the reader's cursor. */
export interface StoredTranscriptEvent {
  id: string;
  sessionId: string;
  executionId: string;
  event: TranscriptEvent;
}

export interface TranscriptWrite {
  sessionId: string;
  executionId: string;
  event: TranscriptEvent;
}

/**
 * Each task's transcript (`tt:`): what its agents said and did, as events of libs/transcript,
 * written by the workers beside the task stream. Neither the fold nor admission reads it: the task
 * stream stays the source of activity.
 */
export class Transcripts {
  constructor(private readonly ctx: StoreContext) {}

  /**
   * Appends a window of events, validated, in one round trip; the stream is bounded by
   * `transcriptMaxLen` and by `transcriptRetentionMs`.
   */
  async append(taskId: string, events: readonly TranscriptWrite[]): Promise<string | null> {
    if (events.length === 0) return null;
    const args: string[] = [];
    events.forEach((w, index) => {
      const r = TranscriptEvent.safeParse(w.event);
      if (!r.success) throw new InvalidEntryError(index, zodReason(r.error));
      args.push(w.sessionId, w.executionId, JSON.stringify(r.data));
    });
    const { keys, opts } = this.ctx;
    return this.ctx.scripts.transcriptAppend(
      [keys.transcript(taskId)],
      [opts.transcriptMaxLen, opts.transcriptRetentionMs, ...args],
    );
  }

  /**
   * Up to `limit` events after the cursor `after` (a stream id, exclusive; `'0-0'` from the
   * start), of one session when `sessionId` is given. `lastId` is the next cursor: it moves past
   * entries of other sessions too, so paging never reads one twice.
   */
  async read(
    taskId: string,
    opts: { after?: string; limit?: number; sessionId?: string } = {},
  ): Promise<Page<StoredTranscriptEvent>> {
    const key = this.ctx.keys.transcript(taskId);
    const page = await this.ctx.page(
      key,
      this.ctx.shardOf(taskId),
      opts.after ?? '0-0',
      opts.limit ?? 500,
      decode,
    );
    if (opts.sessionId === undefined) return page;
    return { items: page.items.filter((e) => e.sessionId === opts.sessionId), lastId: page.lastId };
  }

  /**
   * Whether `cursor` is one the transcript could have handed out: at or before the last id it
   * ever generated (trimming keeps that id; a transcript that expired whole knows no ids, and
   * takes any cursor as its start).
   */
  async issued(taskId: string, cursor: string): Promise<boolean> {
    const key = this.ctx.keys.transcript(taskId);
    let info: unknown[];
    try {
      info = (await this.ctx.redis.xinfo('STREAM', key)) as unknown[];
    } catch (err) {
      if (/no such key/i.test(String(err))) return true;
      throw err;
    }
    const last = String(info[info.indexOf('last-generated-id') + 1]);
    return compareIds(cursor, last) <= 0;
  }

  /** Every event of one turn (the prompt id) of a session, in order: the turn whole. */
  async readTurn(
    taskId: string,
    sessionId: string,
    promptId: string,
  ): Promise<StoredTranscriptEvent[]> {
    const key = this.ctx.keys.transcript(taskId);
    const out: StoredTranscriptEvent[] = [];
    for await (const page of this.ctx.pages(key, this.ctx.shardOf(taskId), '0-0', 1_000, decode))
      for (const e of page.items)
        if (e.sessionId === sessionId && e.event.turn === promptId) out.push(e);
    return out;
  }
  /**
   * Where each session's transcript events of a time range are: the first and last stream id of
   * the events whose id's time falls in `[sinceMs, untilMs]` (the cursor range a reader pages
   * through: `after` just before the first, up to the last). Sessions without events there are
   * absent. Reads only the ids and session fields, page by page.
   */
  async positions(
    taskId: string,
    sinceMs: number,
    untilMs: number,
  ): Promise<Map<string, { first: string; last: string }>> {
    const key = this.ctx.keys.transcript(taskId);
    // Exclusive of everything before `sinceMs`; a bare ms as the end takes all of that ms.
    const after = sinceMs <= 0 ? '0-0' : `${sinceMs - 1}-18446744073709551615`;
    const out = new Map<string, { first: string; last: string }>();
    const pages = this.ctx.pages(
      key,
      this.ctx.shardOf(taskId),
      after,
      1_000,
      sessionOf,
      `${untilMs}`,
    );
    for await (const page of pages)
      for (const e of page.items) {
        const seen = out.get(e.sessionId);
        if (seen) seen.last = e.id;
        else out.set(e.sessionId, { first: e.id, last: e.id });
      }
    return out;
  }
}

/** Orders two stream ids (`<ms>-<seq>`, each up to 20 digits). */
function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split('-').map(BigInt) as [bigint, bigint];
  return am !== bm ? (am < bm ? -1 : 1) : as === bs ? 0 : as < bs ? -1 : 1;
}

function sessionOf(id: string, fields: Fields): { id: string; sessionId: string } | Refused {
  const sessionId = field(fields, 's');
  return sessionId === undefined ? new Refused('missing fields') : { id, sessionId };
}

/** Entries were validated on their way in: a parse is enough, what fails it is refused. */
function decode(id: string, fields: Fields): StoredTranscriptEvent | Refused {
  const raw = field(fields, 'e');
  const sessionId = field(fields, 's');
  if (raw === undefined || sessionId === undefined) return new Refused('missing fields');
  try {
    return {
      id,
      sessionId,
      executionId: field(fields, 'x') ?? '',
      event: JSON.parse(raw) as TranscriptEvent,
    };
  } catch {
    return new Refused('event is not JSON');
  }
}
