import { SubscribeResult, type TaskView, type Update } from '@baton/protocol';
import type { Connection } from './connection';
import { BatonError } from './errors';
import { GroupBuffer, stepUpdate } from './reducer';
import { parseResult, RETRYABLE, type Outgoing, type Requests } from './requests';

/** Why a subscription's view changed. */
export type ViewCause = 'snapshot' | 'resync' | 'update';

export interface SubscribeOptions {
  /** Watch one session: the snapshot holds it only and other sessions' updates are not sent. */
  readonly sessionId?: string;
  /**
   * Every new view: the snapshot, then once per applied group (the updates of one stream entry,
   * applied together: never a view between two updates of one entry).
   */
  readonly onView?: (view: TaskView, cause: ViewCause) => void;
  /** Each update applied to the view, with the view after its whole group. */
  readonly onUpdate?: (update: Update, view: TaskView) => void;
  /** The view was replaced by a fresh snapshot because updates were missed or no longer retained. */
  readonly onResync?: (view: TaskView) => void;
  /** The server refused the subscription (forbidden, not_found, …); the subscription is over. */
  readonly onError?: (error: BatonError) => void;
}

export type SubscriptionState = 'subscribing' | 'live' | 'resyncing' | 'closed';

export interface Subscription {
  readonly taskId: string;
  readonly sessionId: string | undefined;
  readonly state: SubscriptionState;
  /** The local view: null until the first snapshot; always after a whole group of updates. */
  readonly view: TaskView | null;
  /** The last applied sequence (0 before the first snapshot): the end of a whole group. */
  readonly seq: number;
  /** Resolves with the first view; rejects if the server refuses the subscription. */
  readonly ready: Promise<TaskView>;
  unsubscribe(): Promise<void>;
}

/**
 * The client's subscriptions, one per task: each is renewed after a reconnect from its last
 * applied seq, so it gets what it missed or, when that is no longer retained, a fresh snapshot.
 */
export class Subscriptions {
  private readonly subs = new Map<string, SubscriptionImpl>();

  constructor(
    private readonly connection: Pick<Connection, 'open' | 'later'>,
    private readonly requests: Pick<Requests, 'request'>,
    /** A reply that does not match the protocol. */
    private readonly report: (error: BatonError) => void,
  ) {}

  subscribe(taskId: string, options: SubscribeOptions): Subscription {
    if (this.subs.has(taskId)) throw new Error(`BatonClient: already subscribed to task ${taskId}`);
    const sub = new SubscriptionImpl(this, taskId, options);
    this.subs.set(taskId, sub);
    if (this.connection.open) this.send(sub, sub.resumeFrom());
    return sub;
  }

  async unsubscribe(taskId: string): Promise<void> {
    const sub = this.subs.get(taskId);
    if (!sub) return;
    this.subs.delete(taskId);
    sub.end();
    if (this.connection.open)
      await this.requests.request({ op: 'unsubscribe', taskId }, 'reject').catch(() => {});
  }

  /** A snapshot came for a task. */
  snapshot(task: TaskView, resync: boolean): void {
    this.subs.get(task.taskId)?.snapshot(task, resync);
  }

  /**
   * Takes an update in groups (one stream entry's): nothing of a group is told or applied before
   * its last update arrives, so no listener and no view ever sees part of a group. Each update of
   * a whole group goes to `tell`, then the group is applied to the task's subscription.
   */
  receive(update: Update, tell: (u: Update) => void): void {
    const sub = this.subs.get(update.taskId);
    for (const group of sub ? sub.receive(update) : [[update]]) {
      for (const u of group) tell(u);
      sub?.apply(group);
    }
  }

  /** After (re)connecting: every subscription is renewed. */
  resume(): void {
    for (const sub of this.subs.values()) this.send(sub, sub.resumeFrom());
  }

  /** The connection dropped: every subscription waits to be renewed. */
  lost(): void {
    for (const s of this.subs.values()) s.state = 'subscribing';
  }

  /** The client is closed: every subscription is over. */
  endAll(): void {
    for (const s of this.subs.values()) s.end();
    this.subs.clear();
  }

  /** Subscribes `sub` again: from `afterSeq`, or for a fresh snapshot when it is undefined. */
  send(sub: SubscriptionImpl, afterSeq: number | undefined): void {
    sub.state = afterSeq === undefined && sub.view ? 'resyncing' : 'subscribing';
    // The server starts again after the view's seq, a group boundary: a group under way comes again.
    sub.dropPending();
    const message: Outgoing = {
      op: 'subscribe',
      taskId: sub.taskId,
      ...(sub.sessionId !== undefined ? { sessionId: sub.sessionId } : {}),
      ...(afterSeq !== undefined ? { afterSeq } : {}),
    };
    this.requests.request(message, 'reject').then(
      (raw) => {
        if (this.subs.get(sub.taskId) !== sub) return;
        let result: SubscribeResult;
        try {
          result = parseResult(SubscribeResult, raw);
        } catch (err) {
          this.report(err as BatonError);
          return;
        }
        sub.confirmed(result);
      },
      (err: BatonError) => {
        if (this.subs.get(sub.taskId) !== sub) return;
        if (err.code === 'disconnected' || err.code === 'closed') return; // renewed on reconnect
        if (RETRYABLE.has(err.code)) {
          this.connection.later(sub.retries++, () => {
            if (this.subs.get(sub.taskId) === sub && this.connection.open)
              this.send(sub, sub.resumeFrom());
          });
          return;
        }
        this.subs.delete(sub.taskId);
        sub.fail(err);
      },
    );
  }
}

class SubscriptionImpl implements Subscription {
  state: SubscriptionState = 'subscribing';
  /** Refusals in a row that are worth another try (rate limited, store unavailable). */
  retries = 0;
  /** The view is known to be wrong: the next subscribe asks for a snapshot, not a resume. */
  private needsSnapshot = false;
  view: TaskView | null = null;
  readonly sessionId: string | undefined;
  readonly ready: Promise<TaskView>;
  /** The group under way: applied once its last update is here. */
  private readonly groups = new GroupBuffer();
  /**
   * A session subscription's seq as the server confirmed it while a group was under way (the
   * task moved on in other sessions): taken once that group is applied.
   */
  private confirmedSeq = 0;
  private resolveReady!: (v: TaskView) => void;
  private rejectReady!: (e: BatonError) => void;
  private isReady = false;

  constructor(
    private readonly subscriptions: Subscriptions,
    readonly taskId: string,
    private readonly options: SubscribeOptions,
  ) {
    this.sessionId = options.sessionId;
    this.ready = new Promise((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    // Unobserved refusals are reported through onError; do not make them unhandled rejections.
    this.ready.catch(() => {});
  }

  get seq(): number {
    return this.view?.seq ?? 0;
  }

  /** What to subscribe with: the last applied seq, or nothing when a snapshot is needed. */
  resumeFrom(): number | undefined {
    return this.view && !this.needsSnapshot ? this.view.seq : undefined;
  }

  unsubscribe(): Promise<void> {
    return this.subscriptions.unsubscribe(this.taskId);
  }

  snapshot(task: TaskView, resync: boolean): void {
    if (this.state === 'closed') return;
    // Updates after a snapshot start at its seq, a group boundary: a group under way comes again.
    this.dropPending();
    const local = this.view;
    // A resync, or a fresh snapshot we asked for, replaces the view; an older one does not.
    const replace = resync || this.state === 'resyncing' || !local || task.seq >= local.seq;
    if (!replace) return;
    const cause: ViewCause =
      local && (resync || this.state === 'resyncing') ? 'resync' : 'snapshot';
    this.view = task;
    this.needsSnapshot = false;
    this.options.onView?.(task, cause);
    if (cause === 'resync' || resync) this.options.onResync?.(task);
    this.markReady(task);
  }

  /** Forgets the group under way. */
  dropPending(): void {
    this.groups.clear();
    this.confirmedSeq = 0;
  }

  /** The last seq received: of the group under way, else of the view. */
  private received(view: TaskView): number {
    const pending = this.groups.pending;
    return pending.length > 0 ? pending[pending.length - 1]!.seq : view.seq;
  }

  /**
   * Takes one update of this task; returns the groups it completes. Duplicates are dropped here,
   * and a gap asks for what was missed (the group under way is then sent again).
   */
  receive(u: Update): Update[][] {
    const view = this.view;
    // Nothing to keep consistent yet (or any more): told as it comes, applied to nothing.
    if (this.state === 'closed' || !view) return [[u]];
    if (u.taskId !== view.taskId) return [];
    const last = this.received(view);
    if (u.seq <= last) return [];
    // A session subscription skips the task's other sessions' seqs by design; the server checks
    // the gaplessness of the task's sequence for it.
    if (u.seq > last + 1 && this.sessionId === undefined) {
      this.dropPending();
      // Missed updates: ask for them (or a resync snapshot) from the last applied seq.
      if (this.state !== 'subscribing') this.subscriptions.send(this, view.seq);
      return [];
    }
    return this.groups.push(u);
  }

  /** Applies one whole group to the view: one new view, one onView. */
  apply(group: readonly Update[]): void {
    if (this.state === 'closed' || !this.view) return;
    const before = this.view;
    let v = before;
    for (const u of group) {
      let r = stepUpdate(v, u);
      if (this.sessionId !== undefined && (r.kind === 'gap' || r.kind === 'duplicate')) {
        // Seqs of other sessions were skipped (and receive() dropped real duplicates).
        r = stepUpdate({ ...v, seq: u.seq - 1 }, u);
        if (r.kind === 'applied' && r.view.seq < v.seq)
          r = { ...r, view: { ...r.view, seq: v.seq } };
      }
      switch (r.kind) {
        case 'applied':
          v = r.view;
          continue;
        case 'duplicate':
        case 'other_task':
          continue;
        case 'gap':
          // Missed updates: ask for them (or a resync snapshot) from the last applied seq.
          this.dropPending();
          if (this.state !== 'subscribing') this.subscriptions.send(this, before.seq);
          return;
        case 'unknown_session':
          // The view itself is wrong: start over from a snapshot.
          this.dropPending();
          this.needsSnapshot = true;
          if (this.state !== 'resyncing') this.subscriptions.send(this, undefined);
          return;
      }
    }
    if (this.confirmedSeq > v.seq && this.groups.pending.length === 0) {
      v = { ...v, seq: this.confirmedSeq };
      this.confirmedSeq = 0;
    }
    if (v === before) return;
    this.view = v;
    for (const u of group) this.options.onUpdate?.(u, v);
    this.options.onView?.(v, 'update');
  }

  confirmed(result: SubscribeResult): void {
    if (this.state === 'closed') return;
    this.retries = 0;
    const view = this.view;
    if (view && result.seq > this.received(view)) {
      if (this.sessionId !== undefined) {
        // The task moved on in other sessions only; this session's view is current (once the
        // group under way, if any, is applied: until then a resume must start before it).
        if (this.groups.pending.length > 0) this.confirmedSeq = result.seq;
        else this.view = { ...view, seq: result.seq };
      } else {
        this.subscriptions.send(this, view.seq);
        return;
      }
    }
    this.state = 'live';
    if (this.view) this.markReady(this.view);
  }

  fail(error: BatonError): void {
    this.state = 'closed';
    this.rejectReady(error);
    this.options.onError?.(error);
  }

  end(): void {
    this.state = 'closed';
    if (!this.isReady) this.rejectReady(new BatonError('closed', 'unsubscribed'));
  }

  private markReady(view: TaskView): void {
    if (this.isReady) return;
    this.isReady = true;
    this.resolveReady(view);
  }
}
