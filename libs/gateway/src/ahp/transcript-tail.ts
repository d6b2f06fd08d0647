import type { EventStore, StoredTranscriptEvent } from '@baton/store';
import type { Logger } from '../logger';

/**
 * The live tail of tasks' transcripts, one per task per gateway, shared by every AHP chat of the
 * task this gateway serves: it reads what the workers append (`store.transcripts.read`) after
 * its cursor and hands each page to the task's listeners. A listener that needs what came before
 * reads it itself ({@link catchUp}); overlaps are the reader's to drop (by stream id).
 */

type Listener = (items: readonly StoredTranscriptEvent[]) => void;

interface Tail {
  cursor: string;
  listeners: Set<Listener>;
  timer: NodeJS.Timeout | undefined;
  idle: number;
  /** Set once the stream's end was read: nothing before it is delivered live. */
  ready: Promise<void>;
}

/** Polling while a task is busy; slower while its transcript is quiet. */
const FAST_MS = 40;
const SLOW_MS = 400;
const PAGE = 500;

export class TranscriptTail {
  private readonly tails = new Map<string, Tail>();
  private closed = false;

  constructor(
    private readonly store: EventStore,
    private readonly log: Logger,
  ) {}

  /**
   * Listens to task `taskId`'s transcript from now on; resolves once the listener is in place
   * (what is appended after that is delivered). Returns the function that stops listening.
   */
  async listen(taskId: string, listener: Listener): Promise<() => void> {
    let t = this.tails.get(taskId);
    if (!t) {
      const tail: Tail = {
        cursor: '0-0',
        listeners: new Set(),
        timer: undefined,
        idle: 0,
        ready: Promise.resolve(),
      };
      tail.ready = this.end(taskId).then((id) => {
        tail.cursor = id;
        this.schedule(taskId, tail, FAST_MS);
      });
      this.tails.set(taskId, tail);
      t = tail;
    }
    t.listeners.add(listener);
    await t.ready;
    const tail = t;
    return () => {
      tail.listeners.delete(listener);
      if (tail.listeners.size === 0 && this.tails.get(taskId) === tail) {
        clearTimeout(tail.timer);
        this.tails.delete(taskId);
      }
    };
  }

  /** Makes the task's tail read now (its stream was just written, or a reader is waiting). */
  poke(taskId: string): void {
    const t = this.tails.get(taskId);
    if (t && t.idle > 0) {
      t.idle = 0;
      clearTimeout(t.timer);
      this.schedule(taskId, t, 0);
    }
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

  close(): void {
    this.closed = true;
    for (const t of this.tails.values()) clearTimeout(t.timer);
    this.tails.clear();
  }

  /** The id of the stream's last entry (`0-0` for none): the tail starts after it. */
  private async end(taskId: string): Promise<string> {
    const key = this.store.keys.transcript(taskId);
    const last = await this.store.redis.xrevrange(key, '+', '-', 'COUNT', 1);
    return last[0]?.[0] ?? '0-0';
  }

  private schedule(taskId: string, t: Tail, ms: number): void {
    if (this.closed) return;
    t.timer = setTimeout(() => void this.poll(taskId, t), ms);
    t.timer.unref();
  }

  private async poll(taskId: string, t: Tail): Promise<void> {
    if (this.tails.get(taskId) !== t) return;
    let got = 0;
    try {
      for (;;) {
        const page = await this.store.transcripts.read(taskId, { after: t.cursor, limit: PAGE });
        if (this.tails.get(taskId) !== t) return;
        if (page.lastId) t.cursor = page.lastId;
        got += page.items.length;
        if (page.items.length > 0) {
          for (const l of [...t.listeners]) {
            try {
              l(page.items);
            } catch (err) {
              this.log.warn({ err, taskId }, 'AHP transcript listener failed');
            }
          }
        }
        if (page.items.length < PAGE) break;
      }
    } catch (err) {
      this.log.warn({ err, taskId }, 'AHP transcript tail read failed');
    }
    t.idle = got > 0 ? 0 : t.idle + 1;
    this.schedule(taskId, t, t.idle > 25 ? SLOW_MS : FAST_MS);
  }
}
