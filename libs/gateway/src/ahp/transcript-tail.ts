import type { EventStore, StoredTranscriptEvent } from '@baton/store';
import type { Logger } from '../logger';
import type {
  TranscriptFollower,
  TranscriptFrame,
  TranscriptHub,
} from '../transcripts/transcript-hub';

/**
 * AHP chats' view of tasks' transcripts: the gateway's {@link TranscriptHub} (one reader per
 * task per gateway, shared with `/ws` transcript subscriptions) handing each chat the events,
 * decoded, of what the workers append. A listener that needs what came before reads it itself
 * ({@link catchUp}); overlaps are the reader's to drop (by stream id).
 */

type Listener = (items: readonly StoredTranscriptEvent[]) => void;

const PAGE = 500;

export class TranscriptTail {
  constructor(
    private readonly hub: TranscriptHub,
    private readonly store: EventStore,
    private readonly log: Logger,
  ) {}

  /**
   * Listens to task `taskId`'s transcript from now on; resolves once the listener is in place
   * (what is appended after that is delivered). Returns the function that stops listening.
   */
  async listen(taskId: string, listener: Listener): Promise<() => void> {
    const log = this.log;
    const follower: TranscriptFollower = {
      offer(frames: readonly TranscriptFrame[]) {
        const items: StoredTranscriptEvent[] = [];
        for (const f of frames) {
          const e = f.stored;
          if (e !== null) items.push(e);
        }
        if (items.length === 0) return;
        try {
          listener(items);
        } catch (err) {
          log.warn({ err, taskId }, 'AHP transcript listener failed');
        }
      },
    };
    await this.hub.follow(taskId, follower);
    return () => this.hub.unfollow(taskId, follower);
  }

  /**
   * Every event of one session after `after` (from the start by default), page by page, until
   * the stream's end as it is now.
   */
  async catchUp(
    taskId: string,
    sessionId: string,
    onPage: (items: readonly StoredTranscriptEvent[]) => void,
  ): Promise<void> {
    let after = '0-0';
    for (;;) {
      const page = await this.store.transcripts.read(taskId, { after, limit: PAGE, sessionId });
      if (page.items.length > 0) onPage(page.items);
      if (!page.lastId || page.lastId === after) return;
      after = page.lastId;
    }
  }
}
