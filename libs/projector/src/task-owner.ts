import { backoffDelay } from '@baton/backoff';
import {
  STATE_VERSION,
  atRest,
  decisionFenceRefusal,
  dueTimers,
  fenceFloorAfter,
  fold,
  outbox,
  own,
  snapshotOf,
  stateFromSnapshot,
  taskDecider,
  taskView,
  type AdmissionLimits,
  type DecisionDraft,
  type FenceHistory,
  type TaskState,
  type TimerBounds,
  type Timer,
} from '@baton/activity';
import { startSpan, traceparentOf } from '@baton/health';
import type { Span } from '@opentelemetry/api';
import { SCHEMA_VERSION, type InboxMessage, type StreamEntry, type Update } from '@baton/protocol';
import {
  compareIds,
  idTime,
  ConflictError,
  FencedError,
  GapError,
  StaleSnapshotError,
  StreamBehindError,
  type Committed,
  type EventStore,
  type ExecutionRef,
  type Lease,
  type Page,
  type Publication,
  type StoredEntry,
  type Step,
} from '@baton/store';
import type { Logger } from '@baton/health';
import type { Metrics } from './metrics';
import type { Periods } from './options';

/** What a task needs from the shard it belongs to. */
export interface TaskContext {
  readonly store: EventStore;
  readonly instanceId: string;
  readonly shard: number;
  readonly metrics: Metrics;
  readonly log: Logger;
  readonly snapshotEntries: number;
  readonly periods: Periods;
  /** The bounds on what the task's prompts may hold waiting. */
  readonly limits: AdmissionLimits;
  /** The shard lease (its epoch fences every write). */
  lease(): Lease;
  /**
   * The leases the shard has had, read once the shard is taken: every lease whose decisions a
   * task of it can hold (a later one fences this owner's writes anyway).
   */
  fenceHistory(): Promise<FenceHistory>;
  /** False once the shard is lost or released: stop writing. */
  active(): boolean;
  nextWriterSeq(): number;
  /** Runs one task step under the projector-wide concurrency limit. */
  limit<T>(fn: () => Promise<T>): Promise<T>;
  /** A write was fenced: the shard is lost. */
  fenced(err: FencedError): void;
  /** Task loops running in this shard: +1 when one starts, -1 when it ends. */
  busy(delta: 1 | -1): void;
  /**
   * Writes a step without decisions (updates and view), fenced by the shard lease, possibly in
   * one call with other tasks' steps; rejects as store.commit would ({@link GapError},
   * {@link FencedError}).
   */
  publish(step: Publication): Promise<Published>;
  /**
   * store.readTaskAfterFolded of this task, a page of {@link TASK_PAGE}, possibly in one command
   * with other tasks' reads.
   */
  readAfterFolded(taskId: string, foldedId: string): Promise<Page<StoredEntry>>;
}

/** What a step without decisions wrote. */
export type Published = Omit<Committed, 'ids'>;

/** The periods that bound the waits the core times (libs/activity's dueTimers). */
const timerBounds = (p: Periods): TimerBounds => ({
  stallMs: p.turnStall,
  cancelGraceMs: p.cancelAnswer,
  permissionTimeoutMs: p.permissionAnswer,
  parkIdleMs: p.parkIdle,
  quietMs: p.outputQuiet,
  executionStartMs: p.executionStart,
});

/** Entries read of a task stream at once. */
export const TASK_PAGE = 1_000;
const PUBLISH_CHUNK = 500;
const MAX_CONFLICTS = 100;

/**
 * One task under its shard's lease: its folded state (a fold of the task stream and nothing
 * else), and the steps that keep the world in line with it — publish its updates and view, decide
 * with a fenced expected-version append, hand admitted prompts to executions, snapshot.
 *
 * Every step runs in one serial loop per task, so one task never has two steps in flight; work
 * requested meanwhile (a feed note, a timer) runs in the next turn of the loop.
 */
export class TaskOwner {
  state: TaskState;
  /** Id of the last stream entry folded ('0-0': none). */
  lastId = '0-0';
  loaded = false;
  private loadedAt = 0;
  /** Highest last id a feed note announced. */
  private notedId = '0-0';
  /** Local time since when the stream has had entries not folded yet (null: caught up). */
  behindSince: number | null = null;
  /** Last update seq known published: updates up to it are not sent again. */
  private publishedSeq = 0;
  private readonly unpublished: Update[] = [];
  private viewSeq = -1;
  /** Inbox deliveries done by this owner (claims and cancels), so each is written once per owner. */
  private delivered = new Set<string>();
  private readonly timers: Timer[] = [];
  /**
   * Local monotonic time this owner first saw each wait that a timer bounds (a cancel, output
   * outside a turn, an execution request), by key. A new owner starts the clocks afresh, so a
   * bound is at most its period plus one failover.
   */
  private waitingSince = new Map<string, number>();
  private readonly leaseDrops = new Map<string, ExecutionRef>();
  private entriesSinceSnapshot = 0;
  private lastSnapshotAt = 0;
  /** The leases decisions may name (see decisionFenceRefusal), read at load. */
  private fences: FenceHistory = { owners: new Map() };
  /** Epoch of the last decision counted: a decision naming an older lease is forged. */
  private fenceFloor = 0;
  /** Local monotonic time of the last agent fact, per session: the stall watchdog's clock. */
  private readonly lastAgentAt = new Map<string, number>();
  private running = false;
  private wanted = false;
  private failures = 0;
  private retry: NodeJS.Timeout | undefined;
  private gapRebuilt = false;
  /** Redis was found to have lost writes: the next load checks the snapshot is of the stream. */
  private afterLostWrites = false;
  /** Local monotonic time of the last entry folded (or of the load): what eviction waits on. */
  quietSince = performance.now();

  constructor(
    readonly taskId: string,
    private readonly ctx: TaskContext,
  ) {
    this.state = taskDecider.initialState(taskId);
  }

  /** A feed note: the stream has entries up to `lastId`. */
  noted(lastId: string): void {
    if (compareIds(lastId, this.notedId) > 0) this.notedId = lastId;
    if (compareIds(lastId, this.lastId) > 0) {
      this.behindSince ??= performance.now();
      this.request();
    }
  }

  behind(): boolean {
    return !this.loaded || compareIds(this.notedId, this.lastId) > 0;
  }

  idle(): boolean {
    return !this.running;
  }

  /** Asks for a step (catch up, publish, decide, deliver, snapshot), with a timer to raise. */
  request(timer?: Timer): void {
    if (timer && !this.timers.some((t) => sameTimer(t, timer))) this.timers.push(timer);
    this.wanted = true;
    if (!this.running) void this.loop();
  }

  /** The execution's lease lapsed: declare it lost if it is live, then drop the lease. */
  leaseExpired(ref: ExecutionRef): void {
    this.leaseDrops.set(ref.executionId, ref);
    this.request({
      type: 'execution_lease_expired',
      sessionId: ref.sessionId,
      executionId: ref.executionId,
    });
  }

  /**
   * Clock-driven work, called every renew tick: time-based snapshots, and the timers that bound
   * every wait (dueTimers says which are due); decide turns each into a decision, or nothing.
   */
  tick(now: number): void {
    if (!this.loaded) return;
    if (
      this.entriesSinceSnapshot > 0 &&
      now - this.lastSnapshotAt >= this.ctx.periods.snapshotDelay
    ) {
      this.request();
    }
    const due = dueTimers(this.state, timerBounds(this.ctx.periods), {
      now,
      loadedAt: this.loadedAt,
      lastAgentAt: this.lastAgentAt,
      waitingSince: this.waitingSince,
    });
    this.waitingSince = due.waitingSince;
    for (const timer of due.timers) this.request(timer);
  }

  /**
   * Nothing of this task is held only here: it is folded up to what was noted, published, its
   * view written and its snapshot current, no step runs, waits or retries, no timer or lease drop
   * is queued, and its state is at rest (no clock of the owner has anything to raise for it). A
   * new owner loaded from the snapshot then reaches this very state, and publishes on from the
   * same seq (it reads the last published one). What the owner keeps beside the state (its
   * clocks, deliveries done, agent times) matters only for work a task at rest does not have.
   */
  mayEvict(): boolean {
    return (
      this.loaded &&
      !this.running &&
      !this.wanted &&
      this.failures === 0 &&
      this.timers.length === 0 &&
      this.leaseDrops.size === 0 &&
      this.unpublished.length === 0 &&
      this.entriesSinceSnapshot === 0 &&
      this.viewSeq === this.state.seq &&
      !this.behind() &&
      atRest(this.state)
    );
  }

  /** The shard put this task away: a retry timer left from a step that since succeeded goes. */
  putAway(): void {
    clearTimeout(this.retry);
  }

  /**
   * Live executions in the folded state, and replaced ones still owed a stop (for the shard's
   * missing-lease check).
   */
  liveExecutions(): ExecutionRef[] {
    const out: ExecutionRef[] = [];
    for (const s of Object.values(this.state.sessions)) {
      for (const r of s.replacedStops ?? [])
        out.push({ taskId: this.taskId, sessionId: s.id, executionId: r.executionId });
      const x = s.execution;
      if (x && x.phase !== 'ended') {
        out.push({ taskId: this.taskId, sessionId: s.id, executionId: x.id });
      }
    }
    return out;
  }

  private async loop(): Promise<void> {
    this.running = true;
    this.ctx.busy(1);
    try {
      while (this.wanted && this.ctx.active()) {
        this.wanted = false;
        try {
          await this.ctx.limit(() => this.step());
          this.failures = 0;
        } catch (err) {
          if (!this.ctx.active()) break;
          if (err instanceof RestartStep) {
            this.wanted = true;
            continue;
          }
          if (err instanceof FencedError) {
            this.ctx.fenced(err);
            break;
          }
          this.failures += 1;
          this.ctx.metrics.errors.inc({ op: 'task_step' });
          this.ctx.log.warn(
            { err, taskId: this.taskId, shard: this.ctx.shard, failures: this.failures },
            'task step failed; retrying',
          );
          clearTimeout(this.retry);
          this.retry = setTimeout(
            () => this.request(),
            backoffDelay(this.failures, { initialMs: 50, maxMs: 5_000, jitter: false }),
          );
          this.retry.unref();
          break;
        }
      }
    } finally {
      this.running = false;
      this.ctx.busy(-1);
    }
  }

  private async step(): Promise<void> {
    if (!this.loaded) await this.load();
    await this.catchUp();
    await this.decideAndCommit();
    await this.deliver();
    await this.dropLeases();
    await this.maybeSnapshot();
  }

  private async load(): Promise<void> {
    const { store } = this.ctx;
    const [snap, published, fences] = await Promise.all([
      store.snapshots.read(this.taskId),
      store.lastUpdateSeq(this.taskId),
      this.ctx.fenceHistory(),
    ]);
    this.fences = fences;
    this.fenceFloor = 0;
    const restored = snap && stateFromSnapshot(snap.state, this.taskId);
    if (this.afterLostWrites && snap && !(await store.hasEntry(this.taskId, snap.id))) {
      // A snapshot at an entry the stream does not hold (an earlier version wrote it after Redis
      // lost writes): it holds entries that are gone. The stream rebuilds the task, unless it was
      // trimmed; then the task waits, loudly, as below.
      if (await store.wasTrimmed(this.taskId)) {
        throw new Error(
          `task ${this.taskId}: its snapshot is at ${snap.id}, an entry its stream does not hold, and the stream is trimmed; it cannot be rebuilt`,
        );
      }
      this.ctx.log.warn(
        { taskId: this.taskId, snapshotId: snap.id },
        'snapshot at an entry the stream does not hold; replaying the stream from its start',
      );
    } else if (snap && restored) {
      this.state = restored;
      this.lastId = snap.id;
      // Its writer had folded every entry of an older lease before writing it (it read to the
      // stream's end once it held the lease), so no real decision after it names an older one.
      this.fenceFloor = Number.isSafeInteger(snap.epoch) ? snap.epoch : 0;
    } else if (snap) {
      // Another version's state (or not this task's): the stream rebuilds it, unless it was
      // trimmed behind that snapshot. Then no state is better than a wrong one: the task waits,
      // loudly, for an operator (a migration) instead of publishing what it cannot know.
      if (await store.wasTrimmed(this.taskId)) {
        throw new Error(
          `task ${this.taskId}: its snapshot is not a state of version ${STATE_VERSION} and its stream is trimmed behind it; it cannot be rebuilt`,
        );
      }
      this.ctx.log.warn(
        { taskId: this.taskId, snapshotId: snap.id },
        'snapshot is not a state of this version or task; replaying the stream from its start',
      );
    }
    this.publishedSeq = published;
    if (this.afterLostWrites) {
      // What clients were sent past what Redis holds is gone, and its seqs are used again from
      // here: every follower starts again from the view.
      await store.announceRewritten(this.taskId, published);
    }
    this.afterLostWrites = false;
    this.loaded = true;
    this.loadedAt = performance.now();
    // Quiet since its last entry (a stream id is the server's time): a takeover then puts away
    // at once the tasks that were long quiet, instead of holding every one for the idle period.
    const lastAt = this.lastId === '0-0' ? Date.now() : idTime(this.lastId);
    this.quietSince = this.loadedAt - Math.max(0, Date.now() - lastAt);
    this.lastSnapshotAt = this.loadedAt;
  }

  /** Folds everything after lastId, to the end of the stream (which must still hold lastId). */
  private async catchUp(): Promise<void> {
    const { metrics } = this.ctx;
    for (;;) {
      let page;
      try {
        page = await this.ctx.readAfterFolded(this.taskId, this.lastId);
      } catch (err) {
        // The last entry folded is gone: Redis lost writes (an entry of another writer folded
        // here, then lost before its replica had it).
        if (err instanceof StreamBehindError) this.reload({ streamLastId: err.lastId });
        throw err;
      }
      this.assertActive();
      const forged: { id: string; entry: StreamEntry; reason: string }[] = [];
      for (const { id, entry } of page.items) {
        const reason = decisionFenceRefusal(entry, id, this.fenceFloor, this.fences);
        if (reason === undefined) this.apply(id, entry);
        else forged.push({ id, entry, reason });
      }
      for (const { id, entry, reason } of forged) await this.refuse(id, entry, reason);
      if (page.items.length > 0)
        metrics.entriesFolded.inc({ shard: String(this.ctx.shard) }, page.items.length);
      // Past dead-lettered entries too: the expected last id of a fenced append counts them, and
      // so must the next snapshot (or each reload of the task would read and refuse them again).
      if (compareIds(page.lastId, this.lastId) > 0) {
        this.lastId = page.lastId;
        this.entriesSinceSnapshot += 1;
      }
      if (page.items.length < TASK_PAGE) break;
    }
    // This read reached the stream's end after the lease was taken: whatever is appended from
    // here on was appended while the lease is this owner's, so no real decision names an older one.
    this.fenceFloor = Math.max(this.fenceFloor, this.ctx.lease().epoch);
    if (compareIds(this.lastId, this.notedId) >= 0) this.behindSince = null;
  }

  /**
   * A decision its owner did not write: dead-lettered, never folded. The catch-up moves past it
   * like past an entry that failed to decode.
   */
  private async refuse(id: string, entry: StreamEntry, reason: string): Promise<void> {
    const { store, shard, log } = this.ctx;
    log.warn({ taskId: this.taskId, entryId: id, reason }, 'decision refused: not its owner’s');
    await store.deadLetters.add(
      shard,
      store.keys.taskStream(this.taskId),
      id,
      reason,
      JSON.stringify(entry),
    );
  }

  private apply(id: string, entry: StreamEntry): void {
    this.fenceFloor = fenceFloorAfter(entry, this.fenceFloor);
    const f = fold(this.state, entry);
    this.state = f.state;
    // The entry's updates are one group (groupOf): each names the entry, the last closes it.
    const n = f.updates.length;
    for (let i = 0; i < n; i++) {
      const u = f.updates[i]!;
      if (u.seq > this.publishedSeq) this.unpublished.push({ ...u, entry: id, last: i === n - 1 });
    }
    this.folded(id, entry);
  }

  /** What folding an entry means besides the state and its updates. */
  private folded(id: string, entry: StreamEntry): void {
    // An answer to a permission request wakes the agent: its silence until then was ours.
    if ('executionId' in entry || entry.type === 'permission.answered')
      this.lastAgentAt.set(entry.sessionId, performance.now());
    this.lastId = id;
    this.entriesSinceSnapshot += 1;
    this.quietSince = performance.now();
  }

  /**
   * Writes the step in one fenced call (store.commit): the decisions `entries` (appended right
   * after lastId), every update not published yet — the folded entries' and the decisions' — and
   * the view, when its seq moved. The decisions are folded ahead, on a copy: their updates go in
   * the same call, and the state is ours only once they are in the stream. Only a catch-up too
   * large for one call (bounded ARGV) publishes its first chunks in calls of their own.
   */
  private async commit(entries: readonly StreamEntry[]): Promise<void> {
    let state = this.state;
    const ahead: { of: number; update: Update }[] = [];
    entries.forEach((e, k) => {
      const f = fold(state, e);
      state = f.state;
      const n = f.updates.length;
      for (let i = 0; i < n; i++) {
        const u = f.updates[i]!;
        if (u.seq > this.publishedSeq)
          ahead.push({ of: k + 1, update: { ...u, last: i === n - 1 } });
      }
    });
    while (this.unpublished.length > 0 && this.unpublished.length + ahead.length > PUBLISH_CHUNK) {
      const chunk = this.unpublished.slice(0, PUBLISH_CHUNK);
      await this.write({ updates: chunk });
      this.unpublished.splice(0, chunk.length);
    }
    const view = state.seq > this.viewSeq ? taskView(state) : undefined;
    if (entries.length === 0 && this.unpublished.length === 0 && !view) return;
    const r = await this.write({
      ...(entries.length > 0 ? { expectedLastId: this.lastId, entries } : {}),
      updates: ahead.length > 0 ? [...this.unpublished, ...ahead] : this.unpublished,
      ...(view ? { view } : {}),
    });
    this.unpublished.length = 0;
    if (entries.length > 0) {
      this.state = state;
      // Appended right after lastId, in this order: folding them is folding the stream.
      entries.forEach((e, i) => this.folded(r.ids[i]!, e));
      this.ctx.metrics.entriesFolded.inc({ shard: String(this.ctx.shard) }, entries.length);
    }
    if (view) this.viewSeq = state.seq;
  }

  private async write(step: Step): Promise<Committed> {
    const { store, metrics } = this.ctx;
    let r: Committed;
    try {
      r =
        step.entries && step.entries.length > 0
          ? await store.commit(this.ctx.lease(), this.taskId, step)
          : { ids: [], ...(await this.ctx.publish(publicationOf(this.taskId, step))) };
    } catch (err) {
      if (err instanceof GapError) {
        // Redis's last published seq is behind one it acknowledged to us: it lost writes.
        if (err.lastPublished < this.publishedSeq)
          this.reload({ published: this.publishedSeq, redisPublished: err.lastPublished });
        this.onGap(err);
      }
      throw err;
    }
    this.publishedSeq = Math.max(this.publishedSeq, r.lastSeq);
    if (r.published > 0)
      metrics.updatesPublished.inc({ shard: String(this.ctx.shard) }, r.published);
    return r;
  }

  /**
   * Updates from our fold would leave clients a gap: the state we folded from (a snapshot) is
   * ahead of what was published. Replay the stream from its start once; if it still gaps (the
   * stream was trimmed), keep retrying loudly rather than publish a hole.
   */
  private onGap(err: GapError): never {
    this.ctx.metrics.errors.inc({ op: 'publish_gap' });
    if (this.gapRebuilt) throw err;
    this.ctx.log.error(
      { taskId: this.taskId, lastPublished: err.lastPublished, seq: err.seq },
      'update sequence gap; replaying the task stream from its start',
    );
    this.gapRebuilt = true;
    this.state = taskDecider.initialState(this.taskId);
    this.lastId = '0-0';
    this.unpublished.length = 0;
    this.entriesSinceSnapshot = 0;
    throw new RestartStep();
  }

  /**
   * Redis holds less than it acknowledged — the stream no longer holds the last entry folded (or
   * ends before it), or the published seq is behind one it returned: it lost writes (a failover
   * to a replica that had not received them, a restart from an older dump) while the lease held.
   * What was lost is nowhere any more, nor anything written after it (a replica keeps a prefix of
   * the writes), so the task is loaded again from what Redis holds — its snapshot, its published
   * seq, its stream — as a new owner would load it. Deciding on the folded state would conflict
   * for as long as nothing is appended, publishing from it would leave a gap, and a snapshot of
   * it would make every later load start from entries that are gone.
   */
  private reload(
    found: { streamLastId: string } | { published: number; redisPublished: number },
  ): never {
    this.ctx.metrics.errors.inc({ op: 'redis_lost_writes' });
    this.ctx.log.error(
      { taskId: this.taskId, folded: this.lastId, ...found },
      'Redis holds less of the task than it acknowledged (lost writes); loading the task again',
    );
    this.state = taskDecider.initialState(this.taskId);
    this.lastId = '0-0';
    this.loaded = false;
    this.publishedSeq = 0;
    this.unpublished.length = 0;
    this.viewSeq = -1;
    this.entriesSinceSnapshot = 0;
    // A note of a lost entry is as gone as the entry: catching up reads the stream to its end.
    this.notedId = '0-0';
    // As a new owner would: the inbox writes went with the rest (the worker ignores a prompt it
    // already has), and the clocks of the waits start afresh.
    this.delivered.clear();
    this.waitingSince.clear();
    this.lastAgentAt.clear();
    this.gapRebuilt = false;
    this.afterLostWrites = true;
    throw new RestartStep();
  }

  /**
   * Decides on the folded state and writes what the step owes in one call per round of decisions
   * (see commit): with no decision, the updates and view of what was folded. A conflict (someone
   * appended after what we folded) writes nothing: catch up and decide again.
   */
  private async decideAndCommit(): Promise<void> {
    const { metrics } = this.ctx;
    for (let conflicts = 0; ;) {
      const timer = this.timers[0];
      const drafts = taskDecider.decide(this.state, timer, this.ctx.limits);
      if (drafts.length === 0) {
        if (timer) {
          this.timers.shift();
          continue;
        }
        await this.commit([]);
        return;
      }
      const decidedAt = Date.now();
      const traced = this.tracedPrompts(drafts);
      const entries = drafts.map(
        (d) =>
          ({
            v: SCHEMA_VERSION,
            taskId: this.taskId,
            writer: {
              role: 'projector',
              instance: this.ctx.instanceId,
              seq: this.ctx.nextWriterSeq(),
            },
            ...d,
          }) as StreamEntry,
      );
      try {
        await this.commit(entries);
      } catch (err) {
        const outcome =
          err instanceof ConflictError ? 'conflict' : err instanceof FencedError ? 'fenced' : null;
        if (outcome) for (const d of drafts) metrics.decisions.inc({ type: d.type, outcome });
        if (!(err instanceof ConflictError)) throw err;
        if (compareIds(err.actualLastId, this.lastId) < 0)
          this.reload({ streamLastId: err.actualLastId });
        if (++conflicts > MAX_CONFLICTS) {
          // Publish what is folded; the next turn of the loop decides again.
          await this.commit([]);
          this.wanted = true;
          return;
        }
        await this.catchUp();
        continue;
      }
      for (const d of drafts) metrics.decisions.inc({ type: d.type, outcome: 'appended' });
      this.traceDecisions(traced, decidedAt);
      if (timer) {
        this.timers.shift();
        metrics.timers.inc({ type: timer.type });
      }
    }
  }

  /** The decisions on prompts submitted under a trace, read before they change the state. */
  private tracedPrompts(drafts: readonly DecisionDraft[]): TracedDecision[] {
    const traced: TracedDecision[] = [];
    for (const d of drafts) {
      if (!('sessionId' in d) || !('promptId' in d.data)) continue;
      const { sessionId, type } = d;
      const promptId = d.data.promptId;
      const prompts = own(this.state.sessions, sessionId)?.prompts;
      const traceparent = prompts && own(prompts, promptId)?.traceparent;
      if (traceparent) traced.push({ type, sessionId, promptId, traceparent });
    }
    return traced;
  }

  /**
   * A span per prompt handed to an execution, a child of its submit; the delivery then carries
   * the dispatch's own context, so the worker's turn hangs under it.
   */
  private traceDispatches(executionId: string, messages: InboxMessage[]): Span[] {
    const spans: Span[] = [];
    messages.forEach((m, i) => {
      if (m.type !== 'prompt.deliver' || !m.data.traceparent) return;
      const span = startSpan(
        'baton.prompt.dispatch',
        {
          'baton.task': this.taskId,
          'baton.session': m.sessionId,
          'baton.prompt': m.data.promptId,
          'baton.execution': executionId,
          'baton.owner': this.ctx.instanceId,
        },
        m.data.traceparent,
      );
      const traceparent = traceparentOf(span);
      if (traceparent) messages[i] = { ...m, data: { ...m.data, traceparent } };
      spans.push(span);
    });
    return spans;
  }

  /**
   * One span per decision on a traced prompt, a child of its submit (the traceparent its entry
   * carried, kept in the state: a new owner after a failover continues the same trace).
   */
  private traceDecisions(traced: readonly TracedDecision[], startTime: number): void {
    for (const { type, sessionId, promptId, traceparent } of traced) {
      startSpan(
        'baton.prompt.decide',
        {
          'baton.task': this.taskId,
          'baton.session': sessionId,
          'baton.prompt': promptId,
          'baton.decision': type,
          'baton.owner': this.ctx.instanceId,
        },
        traceparent,
        startTime,
      ).end();
    }
  }

  /**
   * Sends what the state owes the workers (outbox: stops, claims, cancels, permission answers),
   * each once per owner: a new owner delivers them all again (the worker ignores a promptId +
   * generation it has already sent), since its predecessor may have died between the decision
   * and the inbox write.
   */
  private async deliver(): Promise<void> {
    const { store, metrics } = this.ctx;
    const owed = outbox(this.state);
    for (const { sessionId, promptId } of owed.textless)
      this.ctx.log.error(
        { taskId: this.taskId, sessionId, promptId },
        'claimed prompt has no text to deliver',
      );
    const boxes = new Map<string, { messages: InboxMessage[]; keys: string[] }>();
    const wanted = new Set<string>();
    for (const { executionId, key, message } of owed.owed) {
      wanted.add(key);
      if (this.delivered.has(key)) continue;
      const box = boxes.get(executionId) ?? { messages: [], keys: [] };
      box.messages.push(message);
      box.keys.push(key);
      boxes.set(executionId, box);
    }
    for (const [executionId, box] of boxes) {
      const dispatches = this.traceDispatches(executionId, box.messages);
      await store.inbox.append(this.ctx.lease(), this.taskId, executionId, box.messages);
      for (const span of dispatches) span.end();
      for (const k of box.keys) this.delivered.add(k);
      for (const m of box.messages) metrics.inboxMessages.inc({ type: m.type });
    }
    // Forget deliveries whose claim, cancel or stop is settled.
    if (this.delivered.size > wanted.size) {
      this.delivered = new Set([...this.delivered].filter((k) => wanted.has(k)));
    }
  }

  /** Execution leases whose end is now recorded in the state (or that it never knew) go. */
  private async dropLeases(): Promise<void> {
    for (const [executionId, ref] of this.leaseDrops) {
      const x = this.state.sessions[ref.sessionId]?.execution;
      if (x && x.id === executionId && x.phase !== 'ended') continue;
      this.assertActive();
      await this.ctx.store.executions.dropLease(ref);
      this.leaseDrops.delete(executionId);
    }
  }

  private async maybeSnapshot(): Promise<void> {
    if (this.entriesSinceSnapshot === 0 || this.unpublished.length > 0) return;
    const now = performance.now();
    if (
      this.entriesSinceSnapshot < this.ctx.snapshotEntries &&
      now - this.lastSnapshotAt < this.ctx.periods.snapshotDelay
    ) {
      return;
    }
    const { store } = this.ctx;
    try {
      // With a retention, some snapshots stay as checkpoints (about 24 over the retention, 4
      // over a shorter hot window): the history query folds forward from them, and the trim
      // cuts the stream at one, so the stream keeps about its hot window.
      const { retention, hotWindow, snapshotDelay } = this.ctx.periods;
      const hot = hotWindow > 0 && hotWindow < retention ? hotWindow / 4 : Infinity;
      const checkpointEveryMs =
        retention > 0 ? Math.max(snapshotDelay, Math.floor(Math.min(retention / 24, hot))) : 0;
      const { previousCheckpoint } = await store.snapshots.write(
        this.ctx.lease(),
        this.taskId,
        this.lastId,
        snapshotOf(this.state),
        checkpointEveryMs,
      );
      if (previousCheckpoint !== null) {
        await this.keepHistorySpan(previousCheckpoint);
        await this.compactTranscript();
      }
    } catch (err) {
      if (err instanceof StreamBehindError) this.reload({ streamLastId: err.lastId });
      if (!(err instanceof StaleSnapshotError)) throw err;
    }
    await store.snapshots.trim(
      this.ctx.lease(),
      this.taskId,
      this.ctx.periods.retention,
      this.ctx.periods.hotWindow,
    );
    this.ctx.metrics.snapshots.inc({ shard: String(this.ctx.shard) });
    this.entriesSinceSnapshot = 0;
    this.lastSnapshotAt = now;
  }

  /**
   * A new checkpoint closes a span of the history's read model: what each entry since the one
   * before changed, so a history query reads that instead of folding the entries again. It is
   * derived: when it cannot be built here, the first history query that needs it builds it.
   */
  private async keepHistorySpan(previousCheckpoint: string): Promise<void> {
    const { store } = this.ctx;
    try {
      const span = await store.historySpans.build(this.taskId, previousCheckpoint, this.lastId);
      if (span) await store.historySpans.write(this.taskId, span);
    } catch (err) {
      this.ctx.log.warn(
        { err, taskId: this.taskId, from: previousCheckpoint, to: this.lastId },
        'history span not built (a history query will build it)',
      );
    }
  }

  /**
   * With a hot window shorter than the retention, the task's transcript older than it is kept
   * compacted (whole items, zlib: libs/store Transcripts.compact), as its stream is kept trimmed
   * behind it: once per checkpoint kept, by the task's owner alone. Compaction refuses a front
   * that moved meanwhile, so it needs no fence; when it fails the next checkpoint does it.
   */
  private async compactTranscript(): Promise<void> {
    const { retention, hotWindow } = this.ctx.periods;
    if (!(hotWindow > 0 && hotWindow < retention)) return;
    try {
      await this.ctx.store.transcripts.compact(this.taskId, Date.now() - hotWindow);
    } catch (err) {
      this.ctx.log.warn({ err, taskId: this.taskId }, 'transcript not compacted (retried later)');
    }
  }

  private assertActive(): void {
    if (!this.ctx.active()) throw new FencedError(`shard ${this.ctx.shard} is no longer owned`);
  }
}

/** A step that appends nothing, as a publication: its updates are all of folded entries. */
function publicationOf(taskId: string, step: Step): Publication {
  const updates = step.updates.map((u) => {
    if ('of' in u) throw new Error('an update of an entry not appended');
    return u;
  });
  return { taskId, updates, ...(step.view ? { view: step.view } : {}) };
}

/** The step's state was reset (replay from the stream's start): run the step again. */
class RestartStep extends Error {}

function sameTimer(a: Timer, b: Timer): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** A decision on a prompt that was submitted under a trace. */
interface TracedDecision {
  readonly type: string;
  readonly sessionId: string;
  readonly promptId: string;
  readonly traceparent: string;
}
