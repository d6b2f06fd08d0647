import { compareIds, type EventStore, type StoredTranscriptEvent } from '@baton/store';
import { CatchUpLoop, type CatchUpWork } from '../subscriptions/catch-up-loop';
import { TranscriptFrame, type TranscriptFollower, type TranscriptHub } from './transcript-hub';

/** The connection side of a transcript subscription. */
export interface TranscriptSink {
  /** Room for `bytes` more? False once the connection has fallen behind. */
  writable(bytes: number): boolean;
  sendFrame(data: string, bytes: number): void;
}

export interface TranscriptHooks {
  /** Catching up failed (it is retried). */
  onError(err: unknown, taskId: string): void;
  onResync(): void;
}

type State = 'catching_up' | 'live' | 'behind' | 'closed';

/** Events per read while catching up (and so at most per message). */
const PAGE = 200;
/** Tail entries held while catching up; past this they are dropped and read back from Redis. */
const MAX_BUFFERED = 10_000;

/**
 * One client's subscription to a session's transcript: the events after its cursor read from the
 * stream, then the hub's tail of it. It follows the tail before it reads, holding what the tail
 * offers meanwhile, and delivers an entry only when its id is above the last it delivered: what
 * the read and the tail both cover goes once, and what lies between the end of the read and the
 * tail's first offer cannot be missed (the tail's position was fixed before the read began).
 *
 * A connection that falls behind drops what it could not take; once it has drained, the client
 * is told (`resync`, with the cursor it has) and the subscription catches up again from there.
 * Each catch-up first checks that the stream still holds what follows the cursor: events the
 * transcript's retention removed are announced (`gap`), and the cursor moves past them.
 */
export class TranscriptSubscription implements TranscriptFollower, CatchUpWork {
  /** The id of the last entry the client has (or skipped as another session's). */
  cursor: string;
  private state: State = 'catching_up';
  private buffer: TranscriptFrame[] = [];
  private overflowed = false;
  private readonly loop = new CatchUpLoop(this);
  private resync = false;
  /** The message's head, the same for every message of the subscription. */
  private readonly head: string;

  constructor(
    /** The task key (tenant and task). */
    readonly key: string,
    readonly clientTaskId: string,
    readonly sessionId: string,
    after: string | undefined,
    private readonly store: EventStore,
    private readonly hub: TranscriptHub,
    private readonly sink: TranscriptSink,
    private readonly hooks: TranscriptHooks,
  ) {
    this.cursor = after ?? '0-0';
    this.head =
      `{"v":1,"type":"transcript","taskId":${JSON.stringify(clientTaskId)},` +
      `"sessionId":${JSON.stringify(sessionId)}`;
  }

  get closed(): boolean {
    return this.state === 'closed';
  }

  get live(): boolean {
    return this.state === 'live';
  }

  /** Follows the tail; `onReady` (the reply) runs before any message of the subscription. */
  async start(onReady: (cursor: string) => void): Promise<void> {
    await this.hub.follow(this.key, this);
    if (this.closed) return;
    onReady(this.cursor);
    this.kick();
  }

  close(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.buffer = [];
    this.hub.unfollow(this.key, this);
  }

  offer(frames: readonly TranscriptFrame[]): void {
    switch (this.state) {
      case 'closed':
      case 'behind':
        return;
      case 'catching_up':
        if (this.buffer.length + frames.length > MAX_BUFFERED) {
          this.buffer = [];
          this.overflowed = true;
          return;
        }
        for (const f of frames) this.buffer.push(f);
        return;
      case 'live':
        this.deliver(frames);
    }
  }

  /** The connection drained after falling behind: tell the client, then catch up from its cursor. */
  resyncAfterBehind(): void {
    if (this.state !== 'behind') return;
    this.state = 'catching_up';
    this.buffer = [];
    this.resync = true;
    this.kick();
  }

  /** Catches up until live, retrying on Redis errors (the client waits rather than loses). */
  private kick(): void {
    this.loop.kick();
  }

  /** {@link CatchUpWork}: one catch-up from the cursor. */
  runCatchUp(): Promise<void> {
    return this.catchUp();
  }

  catchUpFailed(err: unknown): void {
    this.hooks.onError(err, this.key);
  }

  private async catchUp(): Promise<void> {
    if (this.resync) {
      const text = `${this.head},"resync":true,"cursor":${JSON.stringify(this.cursor)}}`;
      const bytes = Buffer.byteLength(text);
      if (!this.sink.writable(bytes)) return this.fallBehind();
      this.resync = false;
      this.sink.sendFrame(text, bytes);
      this.hooks.onResync();
    }
    // Retention may have removed events after the cursor, or compaction the rest of an item
    // the cursor is inside: the client is told what it lost before it gets what follows, never
    // a silent jump.
    const lost = await this.store.transcripts.lostAfter(this.key, this.cursor);
    if (this.state !== 'catching_up') return;
    let told = lost?.through;
    if (lost !== null && !this.sendGap(lost.through, lost.resume)) return this.fallBehind();
    for (;;) {
      if (this.state !== 'catching_up') return;
      const page = await this.store.transcripts.read(this.key, {
        after: this.cursor,
        limit: PAGE,
        sessionId: this.sessionId,
      });
      if (this.state !== 'catching_up') return;
      // The owner compacted the rest of an item the cursor is inside since the check above.
      const across = page.compactedThrough;
      if (across !== undefined && (told === undefined || compareIds(across, told) > 0)) {
        if (!this.sendGap(across, this.cursor)) return this.fallBehind();
        told = across;
      }
      if (compareIds(page.lastId, this.cursor) <= 0) {
        // At the end of the stream as it was read. What the tail held meanwhile is the rest;
        // when it had to drop some, they are in the stream: read on.
        if (this.overflowed) {
          this.overflowed = false;
          continue;
        }
        const held = this.buffer;
        this.buffer = [];
        // Synchronous from here: nothing the tail offers can slip in between.
        this.state = 'live';
        this.deliver(held);
        return;
      }
      if (page.items.length > 0) {
        if (!this.send(page.items.map(storedFrame), page.lastId)) return;
      } else this.cursor = page.lastId;
    }
  }

  /** Tells the client what it lost after its cursor, through `through`; reads on from `resume`. */
  private sendGap(through: string, resume: string): boolean {
    const gap = { reason: 'retention', after: this.cursor, through };
    const text = `${this.head},"gap":${JSON.stringify(gap)},"cursor":${JSON.stringify(resume)}}`;
    const bytes = Buffer.byteLength(text);
    if (!this.sink.writable(bytes)) return false;
    this.sink.sendFrame(text, bytes);
    this.cursor = resume;
    return true;
  }

  /** Live: the entries after the cursor, of this session, as one message. */
  private deliver(frames: readonly TranscriptFrame[]): void {
    let mine: TranscriptFrame[] | undefined;
    let last: string | undefined;
    for (const f of frames) {
      if (compareIds(f.id, this.cursor) <= 0) continue;
      last = f.id;
      if (f.sessionId === this.sessionId) (mine ??= []).push(f);
    }
    if (last === undefined) return;
    if (mine) this.send(mine, last);
    else this.cursor = last;
  }

  private send(frames: readonly TranscriptFrame[], cursor: string): boolean {
    let text = `${this.head},"events":[`;
    for (let i = 0; i < frames.length; i++) text += (i > 0 ? ',' : '') + frames[i]!.json;
    text += `],"cursor":${JSON.stringify(cursor)}}`;
    const bytes = Buffer.byteLength(text);
    if (!this.sink.writable(bytes)) {
      this.fallBehind();
      return false;
    }
    this.sink.sendFrame(text, bytes);
    this.cursor = cursor;
    return true;
  }

  private fallBehind(): void {
    if (this.state === 'closed') return;
    this.state = 'behind';
    this.buffer = [];
    this.overflowed = false;
  }
}

function storedFrame(e: StoredTranscriptEvent): TranscriptFrame {
  return new TranscriptFrame(e.id, e.sessionId, e.executionId, JSON.stringify(e.event));
}
