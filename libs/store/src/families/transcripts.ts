import { compactTranscript, TranscriptEvent, type CompactedEvent } from '@baton/transcript';
import { promisify } from 'node:util';
import { deflate, inflate } from 'node:zlib';
import { idTime } from '../ids';
import { InvalidEntryError } from '../errors';
import { zodReason } from '../stored';
import { field, Refused, type Decode, type Fields, type Page, type StoreContext } from './shared';

const deflated = promisify(deflate);
const inflated = promisify(inflate);

/** Events compacted at most in one chunk (one script call); a longer front takes several. */
const CHUNK_EVENTS = 20_000;
/** Decoded chunks kept for readers paging through one (a chunk is read once per page). */
const CHUNKS_CACHED = 16;

type XEntry = [string, Fields];
/** A compacted event as a chunk stores it: id, session, execution, event, last id if another. */
type ChunkRow = [string, string, string, TranscriptEvent, string?];
/** A chunk decoded: its id (its range's last id) and its events, in order. */
interface Chunk {
  id: string;
  events: (StoredTranscriptEvent & { lastId: string })[];
}

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
 *
 * Its front, older than the hot window, is kept compacted (`ttc:`, {@link compact}): each range
 * compacted is one entry holding the range's events with every item's deltas or patches joined
 * into its first event (which keeps its id), zlib-compressed. Reads go through the compacted
 * front, then the stream after it: a reader from the start gets whole items, then deltas; ids
 * stay cursors, and a session's (or a turn's) events fold to the same items as before. A cursor
 * inside an item that was compacted since cannot have the rest of that item: see
 * {@link compactedAcross}.
 */
export class Transcripts {
  private readonly chunks = new Map<string, Chunk>();

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
      [keys.transcript(taskId), keys.transcriptCompacted(taskId)],
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
  ): Promise<TranscriptPage<StoredTranscriptEvent>> {
    const page = await this.pageAcross(
      taskId,
      opts.after ?? '0-0',
      opts.limit ?? 500,
      decode,
      same,
    );
    if (opts.sessionId === undefined) return page;
    return { ...page, items: page.items.filter((e) => e.sessionId === opts.sessionId) };
  }

  /**
   * Whether `cursor` is one the transcript could have handed out: at or before the last id it
   * ever generated (trimming keeps that id; a transcript that expired whole knows no ids, and
   * takes any cursor as its start).
   */
  async issued(taskId: string, cursor: string): Promise<boolean> {
    const last = (await this.ctx.streamInfo(this.ctx.keys.transcript(taskId)))?.(
      'last-generated-id',
    );
    return last === undefined || compareIds(cursor, String(last)) <= 0;
  }

  /**
   * Whether the transcript's retention (its age or length bound) removed events after `cursor`:
   * the id of the last event it removed when one of them came after the cursor, so a reader
   * there has lost what lies between, else null. Read off `max-deleted-entry-id` (Redis 7);
   * a transcript that expired whole knows no ids, and reports nothing.
   */
  async trimmedAfter(taskId: string, cursor: string): Promise<string | null> {
    const { keys } = this.ctx;
    // The stream's trims, and the compacted front's (its chunks' retention).
    const removed = await Promise.all(
      [keys.transcript(taskId), keys.transcriptCompacted(taskId)].map(async (key) => {
        const id = (await this.ctx.streamInfo(key))?.('max-deleted-entry-id');
        return id === undefined ? null : String(id);
      }),
    );
    const last = removed
      .filter((id): id is string => id !== null)
      .reduce<string | null>((a, b) => (a === null || compareIds(b, a) > 0 ? b : a), null);
    return last !== null && compareIds(last, cursor) > 0 ? last : null;
  }

  /**
   * Whether `cursor` lies inside an item compacted since it was handed out: the id of the last
   * event merged into such items (the reader got their events up to the cursor; the rest, up to
   * that id, is only in their first event, which lies before the cursor), else null. What comes
   * after the cursor is still read whole; a reader that wants those items whole reads again from
   * before them (from the start).
   */
  async compactedAcross(taskId: string, cursor: string): Promise<string | null> {
    if (cursor === '0-0') return null;
    return mergedAcross((await this.chunkAfter(taskId, cursor))?.events ?? [], cursor);
  }

  /**
   * What a reader at `cursor` lost, if anything: events after it the retention removed
   * ({@link trimmedAfter}), or the rest of items it was inside that were compacted since
   * ({@link compactedAcross}). `through` is the last event lost; `resume` the cursor to read on
   * from: past what the retention removed, and else the cursor itself, as the items begun after
   * it are still read whole.
   */
  async lostAfter(
    taskId: string,
    cursor: string,
  ): Promise<{ through: string; resume: string } | null> {
    const removed = await this.trimmedAfter(taskId, cursor);
    const resume = removed ?? cursor;
    const across = await this.compactedAcross(taskId, resume);
    if (across === null) return removed === null ? null : { through: removed, resume };
    return { through: across, resume };
  }

  /**
   * Compacts the transcript's front older than `beforeMs` (stream ids' time) into the compacted
   * front, a chunk of up to {@link CHUNK_EVENTS} events per call of the script, atomically each:
   * the number of events compacted (0 when none are that old, or another compaction or a trim
   * moved the front meanwhile: the next call takes it from there). The task's owner calls it as it
   * trims the task stream behind its hot window.
   */
  async compact(taskId: string, beforeMs: number): Promise<number> {
    const { keys, opts, redis } = this.ctx;
    const key = keys.transcript(taskId);
    let compacted = 0;
    if (beforeMs <= 0) return compacted;
    for (;;) {
      const raw = (await redis.xrange(
        key,
        '-',
        `${beforeMs - 1}`,
        'COUNT',
        CHUNK_EVENTS,
      )) as XEntry[];
      if (raw.length === 0) return compacted;
      const placed: StoredTranscriptEvent[] = [];
      // What does not decode (never validated, or torn) is not kept: no reader could read it.
      for (const [id, fields] of raw) {
        const e = decode(id, fields);
        if (!(e instanceof Refused)) placed.push(e);
      }
      const rows = compactTranscript(placed).map(rowOf);
      const chunk = await deflated(JSON.stringify(rows));
      const done = await this.ctx.scripts.transcriptCompact(
        [key, keys.transcriptCompacted(taskId)],
        [raw[0]![0], raw[raw.length - 1]![0], opts.transcriptRetentionMs, chunk],
      );
      if (done !== 1) return compacted;
      compacted += raw.length;
      if (raw.length < CHUNK_EVENTS) return compacted;
    }
  }

  /** Every event of one turn (the prompt id) of a session, in order: the turn whole. */
  async readTurn(
    taskId: string,
    sessionId: string,
    promptId: string,
  ): Promise<StoredTranscriptEvent[]> {
    const out: StoredTranscriptEvent[] = [];
    for await (const page of this.pagesAcross(taskId, '0-0', 1_000, decode, same))
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
    // Exclusive of everything before `sinceMs`; a bare ms as the end takes all of that ms.
    const after = sinceMs <= 0 ? '0-0' : `${sinceMs - 1}-18446744073709551615`;
    const out = new Map<string, { first: string; last: string }>();
    for await (const page of this.pagesAcross(taskId, after, 1_000, sessionOf, whose, untilMs))
      for (const e of page.items) {
        const seen = out.get(e.sessionId);
        if (seen) seen.last = e.id;
        else out.set(e.sessionId, { first: e.id, last: e.id });
      }
    return out;
  }

  /**
   * One page after `after`: from the first chunk of the compacted front that ends after it when
   * there is one, else from the stream.
   */
  private async pageAcross<T>(
    taskId: string,
    after: string,
    limit: number,
    decodeLive: Decode<T>,
    fromChunk: (e: StoredTranscriptEvent) => T,
  ): Promise<TranscriptPage<T>> {
    // The stream is read before the compacted front (in order, on one connection): a compaction
    // between the two reads shows in the front, and the stream's page is then not used.
    const live = this.ctx.page(
      this.ctx.keys.transcript(taskId),
      this.ctx.shardOf(taskId),
      after,
      limit,
      decodeLive,
    );
    const [page, chunk] = await Promise.all([live, this.chunkAfter(taskId, after)]);
    if (chunk === null) return page;
    // Compacted since the reader's last check (a page before this one, or lostAfter): read off
    // the very chunk this page comes from, so no compaction can fall in between.
    const across = after === '0-0' ? null : mergedAcross(chunk.events, after);
    const rest = chunk.events.filter((e) => compareIds(e.id, after) > 0);
    // A page of the front ends only where every item it holds ended before the next one began,
    // and hands out the last event merged into them as its cursor: a cursor inside an item the
    // reader got whole would read as one inside an item compacted since (a gap that is none).
    let end = Math.min(limit, rest.length);
    let merged = after;
    for (const e of rest.slice(0, end)) if (compareIds(e.lastId, merged) > 0) merged = e.lastId;
    while (end < rest.length && compareIds(rest[end]!.id, merged) <= 0) {
      if (compareIds(rest[end]!.lastId, merged) > 0) merged = rest[end]!.lastId;
      end++;
    }
    return {
      items: rest.slice(0, end).map(({ lastId: _l, ...e }) => fromChunk(e)),
      lastId: end < rest.length ? merged : chunk.id,
      ...(across === null ? {} : { compactedThrough: across }),
    };
  }

  /** The pages after `after`, as {@link read} reads them, up to `untilMs` (ids' time). */
  private async *pagesAcross<T extends { id: string }>(
    taskId: string,
    after: string,
    count: number,
    decodeLive: Decode<T>,
    fromChunk: (e: StoredTranscriptEvent) => T,
    untilMs = Infinity,
  ): AsyncGenerator<Page<T>, void, undefined> {
    let cursor = after;
    for (;;) {
      const page = await this.pageAcross(taskId, cursor, count, decodeLive, fromChunk);
      yield { items: page.items.filter((e) => idTime(e.id) <= untilMs), lastId: page.lastId };
      if (page.lastId === cursor || idTime(page.lastId) > untilMs) return;
      cursor = page.lastId;
    }
  }

  /** The first chunk of the compacted front whose range ends after `after`, decoded. */
  private async chunkAfter(taskId: string, after: string): Promise<Chunk | null> {
    const key = this.ctx.keys.transcriptCompacted(taskId);
    const start = after === '0-0' ? '-' : `(${after}`;
    const [entry] = (await this.ctx.redis.xrangeBuffer(key, start, '+', 'COUNT', 1)) as [
      Buffer,
      Buffer[],
    ][];
    if (entry === undefined) return null;
    const id = entry[0].toString();
    const fields = entry[1];
    let blob: Buffer | undefined;
    for (let i = 0; i < fields.length; i += 2)
      if (fields[i]!.toString() === 'z') blob = fields[i + 1];
    // A chunk is written once under its id: the id and its size name it in the cache.
    const name = `${key}\n${id}\n${blob?.length ?? 0}`;
    const cached = this.chunks.get(name);
    if (cached) return cached;
    const chunk: Chunk = { id, events: blob ? await eventsOf(blob) : [] };
    if (this.chunks.size >= CHUNKS_CACHED) this.chunks.delete(this.chunks.keys().next().value!);
    this.chunks.set(name, chunk);
    return chunk;
  }
}

const rowOf = (e: CompactedEvent): ChunkRow =>
  e.lastId === e.id
    ? [e.id, e.sessionId, e.executionId, e.event]
    : [e.id, e.sessionId, e.executionId, e.event, e.lastId];

/** A chunk's events; a chunk that does not decode (torn, or another version's) reads as none. */
async function eventsOf(blob: Buffer): Promise<Chunk['events']> {
  try {
    const rows = JSON.parse((await inflated(blob)).toString('utf8')) as ChunkRow[];
    return rows.map(([id, sessionId, executionId, event, lastId]) => ({
      id,
      sessionId,
      executionId,
      event,
      lastId: lastId ?? id,
    }));
  } catch {
    return [];
  }
}

/** Orders two stream ids (`<ms>-<seq>`, each up to 20 digits). */
function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split('-').map(BigInt) as [bigint, bigint];
  return am !== bm ? (am < bm ? -1 : 1) : as === bs ? 0 : as < bs ? -1 : 1;
}

const same = (e: StoredTranscriptEvent): StoredTranscriptEvent => e;
const whose = (e: StoredTranscriptEvent) => ({ id: e.id, sessionId: e.sessionId });

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

/**
 * A page of the transcript. `compactedThrough`: the cursor it was read after lies inside items
 * compacted since the cursor was handed out; their rest, through this id, is only in their first
 * events, which lie before the cursor (what {@link Transcripts.compactedAcross} says).
 */
export type TranscriptPage<T> = Page<T> & { compactedThrough?: string };

/** The last event merged into items of `events` that began at or before `cursor` and end after. */
function mergedAcross(
  events: readonly { id: string; lastId: string }[],
  cursor: string,
): string | null {
  let through: string | null = null;
  for (const e of events)
    if (compareIds(e.id, cursor) <= 0 && compareIds(e.lastId, cursor) > 0)
      if (through === null || compareIds(e.lastId, through) > 0) through = e.lastId;
  return through;
}
