import { backoffDelay } from '@baton/backoff';
import { endsGroup, type SubscribeResult, type TaskView, type Update } from '@baton/protocol';
import { UpdateFrame } from '../updates/update-hub';
import { CatchUpLoop, RETRY, delay, type CatchUpWork } from './catch-up-loop';

/** Where a subscription reads what it needs to bring a client up to date. */
export interface UpdateSource {
  /**
   * The task's current view (an empty one with seq 0 when no owner has written it yet); with
   * `maxAgeMs`, one that was current at most that long ago will do.
   */
  view(taskId: string, maxAgeMs?: number): Promise<TaskView>;
  /** The task's last published update seq. */
  lastSeq(taskId: string): Promise<number>;
  /** The retained updates after a seq, gapless; null when some are no longer retained. */
  missed(taskId: string, afterSeq: number): Promise<Update[] | null>;
  /** The view with only one session in it (shared among the subscribers of a version). */
  session?(view: TaskView, sessionId: string): TaskView;
}

/** The connection side of a subscription: how it sends, and whether it may. */
export interface SubscriptionSink {
  /**
   * Room for `bytes` more? False once the connection has fallen behind: the subscription then
   * waits for a resync.
   */
  writable(bytes: number): boolean;
  /** Sends the view; false when there is no room for it (the subscription then waits too). */
  snapshot(view: TaskView, resync: boolean): boolean;
  update(frame: UpdateFrame): void;
}

/** The connection had no room for what a starting subscription had to send it. */
export class BehindError extends Error {
  override readonly name = 'BehindError';
}

export interface SubscriptionHooks {
  onResync(reason: ResyncReason): void;
  /** Catching up failed (it is retried); `taskId` is the subscription's. */
  onError(err: unknown, taskId: string): void;
  onDelivered(): void;
}

type State = 'catching_up' | 'live' | 'behind' | 'closed';
export type ResyncReason = 'not_retained' | 'slow_consumer' | 'history_rewritten';

/** Updates buffered while catching up; past this the buffer is dropped and read back from Redis. */
const MAX_BUFFERED = 10_000;
/**
 * A snapshot may start from a view up to this old (the updates after it are filled in from the
 * update stream): many subscribers of a busy task then share one read of its view.
 */
const SNAPSHOT_VIEW_MAX_AGE_MS = 500;

/**
 * One client's subscription to a task (or one of its sessions): a snapshot or the missed updates,
 * then every update in seq order. The task's seq has no gaps, so a gap in what arrives is noticed
 * and filled from the shard's update stream — or, when those updates are no longer retained,
 * replaced by a snapshot flagged `resync`. Nothing is ever dropped silently.
 *
 * The updates of one stream entry form a group that clients apply on its `last` update. A
 * subscription to one session does not send the other sessions' updates, so the group's last
 * update may be one the client never gets: the subscription then marks the last update it does
 * send of the group. It holds each visible update back until the next update of the task shows
 * whether the group goes on (the group is published in one write, so that one is at hand), and
 * sends it as it is, or with `last: true` when the group ended without another visible update.
 *
 * All catching up runs in one worker at a time (`work`); events that arrive meanwhile only leave
 * a note (buffered updates, a wanted resync) that the worker picks up before it goes live.
 */
export class Subscription implements CatchUpWork {
  /** The last task seq the client has (or, for updates of other sessions, has skipped). */
  lastSeq = 0;
  private state: State = 'catching_up';
  private buffer: UpdateFrame[] = [];
  private overflowed = false;
  private wantResync: ResyncReason | undefined;
  private readonly loop = new CatchUpLoop(this);
  /** The sink had no room for a snapshot (the client waits for a resync, or is refused). */
  private snapshotRefused = false;
  /**
   * A session subscription's last visible update of a group still open (its lastSeq is counted):
   * sent once it is known whether it is the last the client gets of its group.
   */
  private held: UpdateFrame | undefined;

  constructor(
    readonly taskId: string,
    readonly sessionId: string | undefined,
    private readonly source: UpdateSource,
    private readonly sink: SubscriptionSink,
    private readonly hooks: SubscriptionHooks,
  ) {}

  get closed(): boolean {
    return this.state === 'closed';
  }

  /** {@link CatchUpWork}: settles what arrived while it was not live. */
  runCatchUp(): Promise<void> {
    return this.settle();
  }

  catchUpFailed(err: unknown): void {
    this.hooks.onError(err, this.taskId);
  }

  get live(): boolean {
    return this.state === 'live';
  }

  close(): void {
    this.state = 'closed';
    this.buffer = [];
    this.held = undefined;
  }

  /**
   * Brings the client up to date (snapshot, or resume after `afterSeq`) and goes live. `onReady`
   * runs synchronously at the moment the subscription goes live, so its reply precedes every live
   * update. Throws when Redis fails; the caller closes the subscription.
   */
  async start(
    afterSeq: number | undefined,
    onReady: (r: Pick<SubscribeResult, 'mode' | 'seq'>) => void,
  ): Promise<void> {
    await this.loop.exclusive(() => this.begin(afterSeq, onReady));
    // A resync asked for while starting (the connection drained after falling behind).
    if (this.state === 'catching_up') this.kick();
  }

  private async begin(
    afterSeq: number | undefined,
    onReady: (r: Pick<SubscribeResult, 'mode' | 'seq'>) => void,
  ): Promise<void> {
    let mode: SubscribeResult['mode'];
    if (afterSeq === undefined) {
      await this.snapshot(false);
      mode = 'snapshot';
    } else {
      const last = await this.source.lastSeq(this.taskId);
      if (this.closed) return;
      this.lastSeq = afterSeq;
      if (afterSeq > last || (afterSeq < last && !(await this.fill()))) {
        // Asked for more than was ever published (data lost) or for what is gone.
        await this.snapshot(true);
        this.hooks.onResync('not_retained');
        mode = 'resync';
      } else mode = 'resumed';
    }
    await this.settle();
    if (this.closed) return;
    // The reply would tell of a snapshot the client did not get: refuse rather than mislead.
    if (this.snapshotRefused && this.state === 'behind') {
      // Refused is final: a drain that comes before the caller closes it sends nothing.
      this.close();
      throw new BehindError('no room for the snapshot');
    }
    // A held update is not sent yet: the client's seq is the one before it.
    onReady({ mode, seq: this.held ? this.held.update.seq - 1 : this.lastSeq });
  }

  /** Every update of the task, from the tail, in the order the shard stream has them. */
  offer(frame: UpdateFrame): void {
    const u = frame.update;
    switch (this.state) {
      case 'closed':
      case 'behind':
        return;
      case 'catching_up':
        if (this.buffer.length >= MAX_BUFFERED) {
          this.buffer = [];
          this.overflowed = true;
        }
        this.buffer.push(frame);
        return;
      case 'live':
        if (u.seq <= this.lastSeq) return;
        if (u.seq === this.lastSeq + 1) {
          this.deliver(frame);
          return;
        }
        this.state = 'catching_up';
        this.buffer.push(frame);
        this.kick();
    }
  }

  /**
   * Redis lost writes it had acknowledged and the task's owner loaded it again: updates this
   * client was sent may be gone, and their seqs will be used again for other ones. The client
   * gets the task's view again, flagged `resync`, whatever it has.
   */
  rewritten(): void {
    // Behind, it gets a fresh snapshot once it drains anyway; closed, nothing.
    if (this.state === 'closed' || this.state === 'behind') return;
    this.state = 'catching_up';
    this.buffer = [];
    this.held = undefined;
    this.wantResync = 'history_rewritten';
    this.kick();
  }

  /** The connection drained after falling behind: the client gets a fresh snapshot. */
  resyncAfterBehind(): void {
    if (this.state !== 'behind') return;
    this.state = 'catching_up';
    this.buffer = [];
    this.held = undefined;
    this.wantResync = 'slow_consumer';
    this.kick();
  }

  /** Catches up until live, retrying on Redis errors (the client waits rather than loses). */
  private kick(): void {
    this.loop.kick();
  }

  /** Resyncs if asked, applies what is buffered, and flips live with nothing left to do. */
  private async settle(): Promise<void> {
    for (;;) {
      if (this.state !== 'catching_up') return;
      const reason = this.wantResync;
      if (reason) {
        this.wantResync = undefined;
        this.buffer = [];
        await this.snapshot(true);
        this.hooks.onResync(reason);
        continue;
      }
      if (await this.catchUp()) continue;
      if (this.state !== 'catching_up') return;
      // Synchronous from the last check of the buffer: nothing can slip in between.
      this.state = 'live';
      return;
    }
  }

  /**
   * Applies the buffered updates in seq order, filling a gap from Redis (or resyncing when that
   * is impossible). Returns true when it awaited, so the caller looks at the buffer again.
   */
  private async catchUp(): Promise<boolean> {
    this.buffer.sort((a, b) => a.update.seq - b.update.seq);
    let i = 0;
    let gap = false;
    for (; i < this.buffer.length; i++) {
      const frame = this.buffer[i]!;
      const seq = frame.update.seq;
      if (seq <= this.lastSeq) continue;
      if (seq !== this.lastSeq + 1) {
        gap = true;
        break;
      }
      this.deliver(frame);
      if (this.state !== 'catching_up') return false;
    }
    this.buffer = this.buffer.slice(i);
    if (!gap && !this.overflowed) return false;
    this.overflowed = false;
    if (!(await this.fill()) && this.state === 'catching_up') {
      await this.snapshot(true);
      this.hooks.onResync('not_retained');
    }
    return true;
  }

  /** Delivers the retained updates after lastSeq; false when they are no longer retained. */
  private async fill(): Promise<boolean> {
    const missed = await this.source.missed(this.taskId, this.lastSeq);
    if (this.state !== 'catching_up') return true;
    if (missed === null) return false;
    for (const u of missed) {
      if (u.seq !== this.lastSeq + 1) continue;
      this.deliver(new UpdateFrame(u));
      if (this.state !== 'catching_up') return true;
    }
    return true;
  }

  /**
   * Sends the task's current view and continues from its seq. When the published updates are
   * ahead of the view they are filled in; when the view is older than every retained update (its
   * owner has not written the newer one yet), a newer view is awaited.
   */
  private async snapshot(resync: boolean): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const [view, last] = await Promise.all([
        this.source.view(this.taskId, attempt === 0 ? SNAPSHOT_VIEW_MAX_AGE_MS : 0),
        this.source.lastSeq(this.taskId),
      ]);
      if (this.state !== 'catching_up') return;
      // The snapshot is a view at a group boundary: what was held is in it.
      this.held = undefined;
      if (!this.sink.snapshot(this.filter(view), resync || attempt > 0)) {
        this.snapshotRefused = true;
        this.state = 'behind';
        this.buffer = [];
        return;
      }
      this.lastSeq = view.seq;
      if (last <= view.seq || (await this.fill())) return;
      if (this.state !== 'catching_up') return;
      await delay(backoffDelay(attempt, RETRY));
    }
  }

  private deliver(frame: UpdateFrame): void {
    this.lastSeq = frame.update.seq;
    if (this.sessionId === undefined) {
      this.send(frame);
      return;
    }
    const u = frame.update;
    const held = this.held;
    if (held && held.update.entry !== u.entry) {
      // Never so with groups published whole; an update of another entry closes the group anyway.
      this.held = undefined;
      if (!this.send(closing(held))) return;
    }
    const s = frame.sessionId;
    if (s === undefined || s === this.sessionId) {
      if (this.held) {
        const previous = this.held;
        this.held = undefined;
        if (!this.send(previous)) return;
      }
      if (endsGroup(u)) this.send(frame);
      else this.held = frame;
    } else if (endsGroup(u) && this.held) {
      // The group ends with an update this client does not get: what it got last ends it.
      const last = this.held;
      this.held = undefined;
      this.send(closing(last));
    }
  }

  private send(frame: UpdateFrame): boolean {
    if (!this.sink.writable(frame.bytes)) {
      this.state = 'behind';
      this.buffer = [];
      this.held = undefined;
      return false;
    }
    this.sink.update(frame);
    this.hooks.onDelivered();
    return true;
  }

  private filter(view: TaskView): TaskView {
    if (this.sessionId === undefined) return view;
    if (this.source.session) return this.source.session(view, this.sessionId);
    return { ...view, sessions: view.sessions.filter((s) => s.sessionId === this.sessionId) };
  }
}

/** The frame as the last update of its group. */
function closing(frame: UpdateFrame): UpdateFrame {
  return frame.update.last === true ? frame : new UpdateFrame({ ...frame.update, last: true });
}
