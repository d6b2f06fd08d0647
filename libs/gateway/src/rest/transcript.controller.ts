import { Controller, Get, Inject, Param, Query, UsePipes } from '@nestjs/common';
import type { TranscriptGap } from '@baton/protocol';
import type { EventStore, StoredTranscriptEvent } from '@baton/store';
import { foldTranscript, type TranscriptEvent, type TranscriptItem } from '@baton/transcript';
import { z } from 'zod';
import { WireFailure } from '../errors';
import { STORE } from '../options';
import { Scoped, TaskKey } from './decorators';
import { PathIds, ZodPipe } from './zod-pipe';

const SESSION = 'v1/tasks/:taskId/sessions/:sessionId/transcript';

/** The largest part of a stream id Redis takes (an unsigned 64-bit integer). */
const U64 = 2n ** 64n - 1n;

/** A stream id the transcript handed out: `<ms>-<seq>`, each part a 64-bit unsigned integer. */
const Cursor = z.string().refine(
  (v) => {
    const m = /^(\d{1,20})-(\d{1,20})$/.exec(v);
    return m !== null && BigInt(m[1]!) <= U64 && BigInt(m[2]!) <= U64;
  },
  { message: 'a transcript cursor: the `cursor` of an earlier answer (a stream id `<ms>-<seq>`)' },
);

export const TranscriptQuery = z.strictObject({
  after: Cursor.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

/** One stored event as the reader gets it: its stream id is the cursor past it. */
export interface TranscriptEntry {
  id: string;
  executionId: string;
  event: TranscriptEvent;
}

export interface TranscriptPage {
  events: TranscriptEntry[];
  cursor: string;
  /** The transcript's retention removed events after `after`: they are lost to this reader. */
  gap?: TranscriptGap;
}

export interface TranscriptTurn {
  promptId: string;
  events: TranscriptEntry[];
  items: TranscriptItem[];
}

/** Pages read at most to fill one answer when other sessions' entries come between. */
const MAX_ROUNDS = 20;

const entry = (e: StoredTranscriptEvent): TranscriptEntry => ({
  id: e.id,
  executionId: e.executionId,
  event: e.event,
});

/**
 * A session's transcript (libs/transcript events), read page by page with a cursor or one turn
 * whole. A task the tenant does not have (another tenant's of that id included) is a 404 `task
 * <id> not found`, as for every read of a task.
 */
@Controller(SESSION)
@UsePipes(PathIds)
export class TranscriptController {
  constructor(@Inject(STORE) private readonly store: EventStore) {}

  /**
   * Up to `limit` events of the session after `after`. The task's transcript interleaves its
   * sessions: pages are read on past other sessions' entries until the answer has events or the
   * stream ends, so an empty answer means nothing more for now, and `cursor` always moves past
   * what was read.
   */
  @Get()
  @Scoped('read')
  async page(
    @TaskKey() key: string,
    @Param('sessionId') sessionId: string,
    @Query(new ZodPipe(TranscriptQuery)) q: z.infer<typeof TranscriptQuery>,
  ): Promise<TranscriptPage> {
    let cursor = q.after ?? '0-0';
    // Checked before the read: what retention removed after the cursor, or compacted away
    // from inside an item the cursor is in, is said, not skipped.
    const lost = await this.store.transcripts.lostAfter(key, cursor);
    let gap: TranscriptGap | undefined =
      lost === null ? undefined : { reason: 'retention', after: cursor, through: lost.through };
    if (lost !== null) cursor = lost.resume;
    const events: TranscriptEntry[] = [];
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const page = await this.store.transcripts.read(key, {
        after: cursor,
        limit: q.limit,
        sessionId,
      });
      // Compacted since the check above: the rest of an item the cursor is inside, said too.
      if (gap === undefined && page.compactedThrough !== undefined)
        gap = { reason: 'retention', after: cursor, through: page.compactedThrough };
      // A page holds at most `limit` entries: the first with any of this session's is the answer.
      for (const e of page.items) events.push(entry(e));
      const moved = page.lastId !== cursor;
      cursor = page.lastId;
      if (events.length > 0 || !moved) break;
    }
    // An empty answer past a cursor the transcript never reached: a cursor not of this stream.
    if (
      events.length === 0 &&
      q.after !== undefined &&
      !(await this.store.transcripts.issued(key, q.after))
    ) {
      throw new WireFailure(
        'invalid_message',
        `after: cursor ${q.after} is past the end of this transcript: pass the \`cursor\` of an earlier answer`,
        'after',
      );
    }
    return gap ? { events, cursor, gap } : { events, cursor };
  }

  /** Every event of one turn (the Baton prompt id) and the items they fold to. */
  @Get('turns/:promptId')
  @Scoped('read')
  async turn(
    @TaskKey() key: string,
    @Param('sessionId') sessionId: string,
    @Param('promptId') promptId: string,
  ): Promise<TranscriptTurn> {
    const stored = await this.store.transcripts.readTurn(key, sessionId, promptId);
    if (stored.length === 0)
      throw new WireFailure('not_found', `turn ${promptId} of session ${sessionId} not found`);
    return {
      promptId,
      events: stored.map(entry),
      items: foldTranscript(stored.map((e) => e.event)),
    };
  }
}
