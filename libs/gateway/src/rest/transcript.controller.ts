import { Controller, Get, Inject, Param, Query, UsePipes } from '@nestjs/common';
import { TranscriptCursor, type TranscriptEntry } from '@baton/protocol';
import type { EventStore, StoredTranscriptEvent } from '@baton/store';
import { foldTranscript, type TranscriptItem } from '@baton/transcript';
import { z } from 'zod';
import { WireFailure } from '../errors';
import { STORE } from '../options';
import { Scoped, TaskKey } from './decorators';
import { PathIds, ZodPipe } from './zod-pipe';

const SESSION = ':taskId/sessions/:sessionId';

const TranscriptQuery = z.strictObject({
  after: TranscriptCursor.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

const entryOf = (e: StoredTranscriptEvent): TranscriptEntry => ({
  id: e.id,
  executionId: e.executionId,
  event: e.event,
});

/**
 * A session's transcript over REST, in pages by cursor (the contract /ws shares: docs/protocol.md,
 * "Transcript"). The task is looked up as for its view: another tenant's task is a 404.
 */
@Controller('v1/tasks')
@UsePipes(PathIds)
export class TranscriptController {
  constructor(@Inject(STORE) private readonly store: EventStore) {}

  @Get(`${SESSION}/transcript`)
  @Scoped('read')
  async page(
    @TaskKey() key: string,
    @Param('sessionId') sessionId: string,
    @Query(new ZodPipe(TranscriptQuery)) q: z.infer<typeof TranscriptQuery>,
  ): Promise<{ events: TranscriptEntry[]; cursor: string }> {
    const page = await this.store.transcripts.read(key, {
      ...(q.after !== undefined ? { after: q.after } : {}),
      limit: q.limit,
      sessionId,
    });
    return { events: page.items.map(entryOf), cursor: page.lastId };
  }

  @Get(`${SESSION}/transcript/turns/:promptId`)
  @Scoped('read')
  async turn(
    @TaskKey() key: string,
    @Param('sessionId') sessionId: string,
    @Param('promptId') promptId: string,
  ): Promise<{ promptId: string; events: TranscriptEntry[]; items: TranscriptItem[] }> {
    const events = await this.store.transcripts.readTurn(key, sessionId, promptId);
    if (events.length === 0) throw new WireFailure('not_found', `turn ${promptId} not found`);
    return {
      promptId,
      events: events.map(entryOf),
      items: foldTranscript(events.map((e) => e.event)),
    };
  }
}
