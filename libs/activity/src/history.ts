import type {
  ActivityInterval,
  ActivityLane,
  BackgroundRecord,
  ExecutionRecord,
  PromptHistory,
  SessionHistory,
  StreamEntry,
  TaskHistory,
  TurnRecord,
} from '@baton/protocol';
import { evolve } from './evolve';
import { initialTaskState, type SessionState, type TaskState } from './state';
import { activityInputsMoved, attention, backgroundWork, foregroundActivity } from './views';
import { own } from './records';

/**
 * What happened in a task, when: computed from its stream by the same fold that makes the live
 * state (no second source of truth). Every entry's time is its stream id's (Redis's clock, ms).
 * Each lane records a change of what the folded state shows — an activity interval, a turn, a
 * background item — so the history says exactly what a client watching live would have seen.
 */

export interface HistoryOptions {
  /** Only this session (default: every session of the task). */
  sessionId?: string;
  /** ms since the epoch; entries before it only build the state the range starts from. */
  from?: number;
  /** ms since the epoch (inclusive); entries after it are not read. */
  to?: number;
  /** Most items per list of a session (default 10,000). */
  maxItems?: number;
}

/** The ms part of a Redis stream id (`<ms>-<seq>`). */
export function entryTime(id: string): number {
  // Digit by digit: Number(id.slice(…)) allocates a string per entry read, and a history reads
  // every entry of its range. Anything but up to 15 digits (exact in a double) before the '-'
  // takes the slow path.
  let ms = 0;
  for (let i = 0; i < id.length && i <= 15; i++) {
    const c = id.charCodeAt(i);
    if (c === 45) return i === 0 ? 0 : ms;
    if (c < 48 || c > 57) break;
    ms = ms * 10 + (c - 48);
  }
  return Number(id.slice(0, id.indexOf('-')));
}

export function activityLane(s: SessionState): { state: ActivityLane; reason?: string } {
  const a = attention(s);
  if (a?.kind === 'failed') return { state: 'failed', reason: a.reason };
  if (a?.kind === 'needs_person') {
    return { state: 'waiting_for_person', reason: a.reason };
  }
  const fg = foregroundActivity(s);
  if (fg === 'generating') return { state: 'generating' };
  if (fg === 'background') return { state: 'background' };
  if (a) return { state: 'waiting', reason: a.reason };
  return { state: 'idle' };
}

/** A session's turn as the history tells turns apart. */
export interface TurnRef {
  promptId: string;
  generation: number;
}

/** A background item as the history records it. */
export interface BackgroundRef {
  id: string;
  kind: string;
  label: string;
}

/**
 * What the history's lanes show of one session at one point: all a recorder needs to open a range
 * there, and what it compares to tell a change.
 */
export interface SessionMarks {
  lane: { state: ActivityLane; reason?: string };
  turn: TurnRef | null;
  background: readonly BackgroundRef[];
  /** The execution not yet ended, if any. */
  execution: string | null;
  deleted: boolean;
}

/** A prompt or execution entry, as much of it as the history reads. */
export type HistoryEvent =
  | { k: 'submit'; p: string; key: string; known?: true }
  | { k: 'admitted' | 'queued' | 'removed' | 'dispatched'; p: string }
  | { k: 'rejected'; p: string; r: string }
  | { k: 'requested' | 'request_expired' | 'started' | 'lost'; x: string }
  | { k: 'ended'; x: string; r: string };

/**
 * What one entry changed of one session, as the recorder reads it: only what moved. A history is
 * these, in stream order, read by {@link HistoryReplay}; they are its read model, stored per
 * span between two checkpoints ({@link HistorySpan}), so a query over a day reads the few
 * hundred changes of the day instead of refolding its fifty thousand entries.
 */
export interface Observation {
  /** The session. */
  s: string;
  lane?: SessionMarks['lane'];
  turn?: TurnRef | null;
  /** What ended the turn that ended here (with `turn`). */
  end?: string;
  background?: readonly BackgroundRef[];
  /** How the background items that ended here ended (with `background`). */
  by?: NonNullable<BackgroundRecord['endedBy']>;
  execution?: string | null;
  deleted?: boolean;
  ev?: HistoryEvent;
}

/** The marks of a session as its state shows them. */
export function marksOf(s: SessionState): SessionMarks {
  const x = s.execution;
  return {
    lane: activityLane(s),
    turn: s.turn ? { promptId: s.turn.promptId, generation: s.turn.generation } : null,
    background: backgroundRefs(s),
    execution: x && x.phase !== 'ended' ? x.id : null,
    deleted: s.deleted,
  };
}

function backgroundRefs(s: SessionState): BackgroundRef[] {
  return backgroundWork(s).map((w) => ({ id: w.id, kind: w.kind, label: w.label }));
}

const sameLane = (a: SessionMarks['lane'], b: SessionMarks['lane']) =>
  a.state === b.state && a.reason === b.reason;
const sameTurn = (a: TurnRef | null, b: TurnRef | null) =>
  a === b || (!!a && !!b && a.promptId === b.promptId && a.generation === b.generation);
const sameBackground = (a: readonly BackgroundRef[], b: readonly BackgroundRef[]) =>
  a.length === b.length &&
  a.every((w, i) => w.id === b[i]!.id && w.kind === b[i]!.kind && w.label === b[i]!.label);

/**
 * Folds entries with `evolve` and says, per entry, what changed of each session's marks. Cheap
 * where nothing moved (most entries: output, tool frames): parts of a session evolve did not touch
 * are the same objects, so a change is first told by identity.
 */
export class HistoryObserver {
  private state: TaskState;
  /** Per session, the state its marks were last taken from, and those marks. */
  private readonly seen = new Map<string, { from: SessionState; marks: SessionMarks }>();

  constructor(start: TaskState) {
    this.state = start;
    for (const s of Object.values(start.sessions)) {
      this.seen.set(s.id, { from: s, marks: marksOf(s) });
    }
  }

  get current(): TaskState {
    return this.state;
  }

  /** The marks of every session now (copies: the observer moves its own as it goes). */
  marks(): Map<string, SessionMarks> {
    return new Map([...this.seen].map(([id, { marks }]) => [id, { ...marks }]));
  }

  observe(entry: StreamEntry): Observation[] {
    const before = this.state;
    // evolve, not fold: the history reads the states, never the updates fold would number.
    const state = (this.state = evolve(before, entry));
    const out: Observation[] = [];
    if ('sessionId' in entry) this.session(entry.sessionId, before, state, entry, out);
    else for (const sessionId in state.sessions) this.session(sessionId, before, state, entry, out);
    return out;
  }

  private session(
    sessionId: string,
    before: TaskState,
    state: TaskState,
    entry: StreamEntry,
    out: Observation[],
  ): void {
    const after = own(state.sessions, sessionId);
    if (!after) return;
    const prev = own(before.sessions, sessionId);
    if (after === prev) {
      // Nothing moved, but an entry that names a session gives it a history: a session not
      // deleted has one from the range's start, a deleted one from here.
      if (after.deleted) out.push({ s: sessionId });
      return;
    }
    const o: Observation = { s: sessionId };
    const ev = historyEvent(entry, prev);
    if (ev) o.ev = ev;
    const seen = this.seen.get(sessionId);
    if (!seen) {
      const marks = marksOf(after);
      this.seen.set(sessionId, { from: after, marks });
      Object.assign(o, marks);
      if (marks.turn) o.end = endReason(entry);
      o.by = endedBy(entry);
      out.push(o);
      return;
    }
    const m = seen.marks;
    // Most entries leave every input of the lane the same object: then it is the lane already
    // seen, and deriving it again is most of the cost of a history. Property 11
    // (test/properties.spec.ts) checks this against deriving it after every entry.
    if (activityInputsMoved(seen.from, after)) {
      seen.from = after;
      const lane = activityLane(after);
      if (!sameLane(lane, m.lane)) o.lane = m.lane = lane;
    }
    const now = after.turn;
    if (now !== prev?.turn) {
      const turn = now ? { promptId: now.promptId, generation: now.generation } : null;
      if (!sameTurn(turn, m.turn)) {
        o.turn = m.turn = turn;
        o.end = endReason(entry);
      }
    }
    if (after.background !== prev?.background) {
      const background = backgroundRefs(after);
      if (!sameBackground(background, m.background)) {
        o.background = m.background = background;
        o.by = endedBy(entry);
      }
    }
    if (after.execution !== prev?.execution) {
      const x = after.execution;
      const execution = x && x.phase !== 'ended' ? x.id : null;
      if (execution !== m.execution) o.execution = m.execution = execution;
    }
    if (after.deleted !== m.deleted) o.deleted = m.deleted = after.deleted;
    // Most changes (output, tool frames) move no mark: nothing to say, but that a deleted session
    // was named (its history starts here, as above).
    if (
      o.ev ||
      o.lane ||
      o.turn !== undefined ||
      o.background ||
      o.execution !== undefined ||
      o.deleted !== undefined ||
      after.deleted
    ) {
      out.push(o);
    }
  }
}

function historyEvent(e: StreamEntry, before: SessionState | undefined): HistoryEvent | undefined {
  switch (e.type) {
    case 'prompt.submit':
      // A key the session knew makes no second prompt: the owner answers with what it decided.
      return before && own(before.promptByKey, e.data.idempotencyKey)
        ? { k: 'submit', p: e.data.promptId, key: e.data.idempotencyKey, known: true }
        : { k: 'submit', p: e.data.promptId, key: e.data.idempotencyKey };
    case 'prompt.admitted':
      return { k: 'admitted', p: e.data.promptId };
    case 'prompt.queued':
      return { k: 'queued', p: e.data.promptId };
    case 'prompt.rejected':
      return { k: 'rejected', p: e.data.promptId, r: e.data.reason };
    case 'prompt.removed':
      return { k: 'removed', p: e.data.promptId };
    case 'prompt.dispatched':
      return { k: 'dispatched', p: e.data.promptId };
    case 'execution.requested':
      return { k: 'requested', x: e.data.executionId };
    case 'execution.request_expired':
      return { k: 'request_expired', x: e.data.executionId };
    case 'execution.started':
      return { k: 'started', x: e.executionId };
    case 'execution.ended':
      return { k: 'ended', x: e.executionId, r: e.data.reason };
    case 'execution.lost':
      return { k: 'lost', x: e.data.executionId };
    default:
      return undefined;
  }
}

function endedBy(entry: StreamEntry): NonNullable<BackgroundRecord['endedBy']> {
  return entry.type === 'background.ended' && (entry.data.workId || entry.data.toolCallId)
    ? 'identified'
    : entry.type === 'execution.ended' || entry.type === 'execution.lost'
      ? 'execution'
      : 'unidentified';
}

function endReason(entry: StreamEntry): string {
  switch (entry.type) {
    case 'turn.ended':
      return entry.data.stopReason;
    case 'turn.abandoned':
      return 'abandoned';
    case 'turn.cancel_timed_out':
      return 'cancel_timeout';
    case 'session.force_released':
      return 'force_released';
    case 'execution.ended':
    case 'execution.lost':
      return 'execution_ended';
    case 'prompt.released':
      return 'released';
    default:
      return entry.type;
  }
}

class SessionRecorder {
  readonly out: SessionHistory;
  private readonly turns = new Map<string, TurnRecord>();
  private readonly items = new Map<string, BackgroundRecord>();
  private readonly prompts = new Map<string, PromptHistory>();
  private readonly executions = new Map<string, ExecutionRecord>();
  truncated = false;

  constructor(
    sessionId: string,
    private readonly maxItems: number,
  ) {
    this.out = {
      sessionId,
      activity: [],
      turns: [],
      background: [],
      prompts: [],
      executions: [],
    };
  }

  private push<T>(list: T[], item: T): boolean {
    if (list.length >= this.maxItems) {
      this.truncated = true;
      return false;
    }
    list.push(item);
    return true;
  }

  /** What is open when the range starts, as if it began then. */
  open(m: SessionMarks, at: number): void {
    this.activity(m.lane, at);
    this.turn(null, m.turn, at, undefined);
    this.background([], m.background, at, 'unidentified');
    if (m.execution !== null) this.execution(m.execution).start = at;
  }

  /** What moved, `before` being the marks the session had. */
  apply(o: Observation, before: SessionMarks | undefined, at: number): void {
    if (o.ev) this.entry(o.ev, at);
    if (o.lane) this.activity(o.lane, at);
    if (o.turn !== undefined) this.turn(before?.turn ?? null, o.turn, at, o.end);
    if (o.background) this.background(before?.background ?? [], o.background, at, o.by!);
  }

  private activity(next: SessionMarks['lane'], at: number): void {
    const list = this.out.activity;
    const same = (a: ActivityInterval | undefined) =>
      a !== undefined && a.state === next.state && a.reason === next.reason;
    const last = list[list.length - 1];
    if (last && last.to === null && same(last)) return;
    if (last && last.to === null && last.from === at) {
      // Opened this very millisecond (two entries at one time, or the range's start): it never
      // lasted. It is replaced, and a lane that comes back to the one before continues it.
      list.pop();
      const prev = list[list.length - 1];
      if (prev && prev.to === at && same(prev)) {
        prev.to = null;
        return;
      }
    } else if (last && last.to === null) last.to = at;
    this.push(list, { ...next, from: at, to: null });
  }

  private turn(
    before: TurnRef | null,
    now: TurnRef | null,
    at: number,
    endReason: string | undefined,
  ): void {
    if (sameTurn(before, now)) return;
    const key = (t: TurnRef) => `${t.promptId}\n${t.generation}`;
    if (before) {
      const r = this.turns.get(key(before));
      if (r && r.end === null) {
        r.end = at;
        r.stopReason = endReason;
      }
    }
    if (now && !this.turns.has(key(now))) {
      const r: TurnRecord = {
        promptId: now.promptId,
        generation: now.generation,
        start: at,
        end: null,
      };
      if (this.push(this.out.turns, r)) this.turns.set(key(now), r);
    }
  }

  private background(
    was: readonly BackgroundRef[],
    is: readonly BackgroundRef[],
    at: number,
    endedBy: NonNullable<BackgroundRecord['endedBy']>,
  ): void {
    if (was.length === 0 && is.length === 0) return;
    const now = new Set(is.map((w) => w.id));
    for (const w of was) {
      if (now.has(w.id)) continue;
      const r = this.items.get(w.id);
      if (!r || r.end !== null) continue;
      r.end = at;
      r.endedBy = endedBy;
    }
    const prev = new Set(was.map((w) => w.id));
    for (const w of is) {
      if (prev.has(w.id) && this.items.has(w.id)) continue;
      if (this.items.get(w.id)?.end === null) continue;
      const r: BackgroundRecord = { id: w.id, kind: w.kind, label: w.label, start: at, end: null };
      if (this.push(this.out.background, r)) this.items.set(w.id, r);
    }
  }

  private entry(e: HistoryEvent, at: number): void {
    switch (e.k) {
      case 'submit': {
        if (this.prompts.has(e.p) || e.known) return;
        const p: PromptHistory = {
          promptId: e.p,
          idempotencyKey: e.key,
          submittedAt: at,
          decision: null,
          decidedAt: null,
          queueWaitMs: null,
          admittedAt: null,
          dispatchedAt: null,
        };
        if (this.push(this.out.prompts, p)) this.prompts.set(p.promptId, p);
        return;
      }
      case 'admitted': {
        const p = this.prompts.get(e.p);
        if (!p) return;
        if (
          !firstDecision(p, 'admitted', at) &&
          p.decision === 'queued' &&
          p.queueWaitMs === null
        ) {
          p.queueWaitMs = at - p.decidedAt!;
        }
        p.admittedAt ??= at;
        return;
      }
      case 'queued': {
        const p = this.prompts.get(e.p);
        if (p) firstDecision(p, 'queued', at);
        return;
      }
      case 'rejected': {
        const p = this.prompts.get(e.p);
        if (!p) return;
        firstDecision(p, 'rejected', at);
        p.reason = e.r;
        return;
      }
      case 'removed': {
        const p = this.prompts.get(e.p);
        if (p) p.reason ??= 'removed';
        return;
      }
      case 'dispatched': {
        const p = this.prompts.get(e.p);
        if (p) p.dispatchedAt ??= at;
        return;
      }
      case 'requested':
        this.execution(e.x).requestedAt ??= at;
        return;
      case 'request_expired':
        this.ended(e.x, at, 'no_worker');
        return;
      case 'started':
        this.execution(e.x).start ??= at;
        return;
      case 'ended':
        this.ended(e.x, at, e.r);
        return;
      case 'lost':
        this.ended(e.x, at, 'lost');
        return;
    }
  }

  /** The execution's end, and why: the first seen stands. */
  private ended(executionId: string, at: number, reason: NonNullable<ExecutionRecord['reason']>) {
    const x = this.execution(executionId);
    x.end ??= at;
    x.reason ??= reason;
  }

  private execution(executionId: string): ExecutionRecord {
    let x = this.executions.get(executionId);
    if (!x) {
      // An execution seen only at its end still gets a record (its start is before the range).
      x = { executionId, requestedAt: null, start: null, end: null };
      if (this.push(this.out.executions, x)) this.executions.set(executionId, x);
    }
    return x;
  }
}

/** A prompt's first decision and when it came; a later one changes neither. */
function firstDecision(
  p: PromptHistory,
  decision: NonNullable<PromptHistory['decision']>,
  at: number,
): boolean {
  if (p.decision !== null) return false;
  p.decision = decision;
  p.decidedAt = at;
  return true;
}

/**
 * Reads a task's observations in stream order into its history: `add` each entry's time with
 * what it changed, then `finish`. Entries before `from` only move the marks the range starts
 * from. The observations may come from a fold of the stream ({@link HistoryFold}) or from the
 * stored spans ({@link HistorySpan}): the answer is the same.
 */
export class HistoryReplay {
  private readonly from: number;
  private readonly maxItems: number;
  private readonly recorders = new Map<string, SessionRecorder>();
  private readonly marks: Map<string, SessionMarks>;
  private opened = false;
  private last: number;
  private count = 0;

  constructor(
    private readonly taskId: string,
    private readonly options: Omit<HistoryOptions, 'to'> = {},
    /** Every session's marks before the first entry added. */
    marks: ReadonlyMap<string, SessionMarks> = new Map(),
  ) {
    this.from = options.from ?? 0;
    this.maxItems = options.maxItems ?? 10_000;
    this.marks = new Map(marks);
    this.last = this.from;
  }

  /** One entry: its time, and what it changed. */
  add(at: number, observations: readonly Observation[]): void {
    if (at >= this.from && !this.opened) this.openAll();
    if (at >= this.from) {
      this.count++;
      this.last = at;
    }
    for (const o of observations) {
      const before = this.marks.get(o.s);
      const after: SessionMarks = before ? { ...before } : { ...EMPTY_MARKS };
      if (o.lane) after.lane = o.lane;
      if (o.turn !== undefined) after.turn = o.turn;
      if (o.background) after.background = o.background;
      if (o.execution !== undefined) after.execution = o.execution;
      if (o.deleted !== undefined) after.deleted = o.deleted;
      this.marks.set(o.s, after);
      if (at < this.from) continue;
      const known = this.recorders.has(o.s);
      const r = this.recorder(o.s);
      if (!r) continue;
      // A session the range did not open (deleted at its start) that an entry names: its
      // history starts here, with what it showed before the entry.
      if (!known && before) r.open(before, at);
      r.apply(o, before, at);
    }
  }

  /** The history up to `to` (default: the last entry added's time). */
  finish(to?: number): TaskHistory {
    if (!this.opened) this.openAll();
    const sessions = [...this.recorders.values()]
      .map((r) => r.out)
      .sort((a, b) => (a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0));
    return {
      taskId: this.taskId,
      from: this.from,
      to: to ?? this.last,
      sessions,
      entries: this.count,
      truncated: [...this.recorders.values()].some((r) => r.truncated),
    };
  }

  private recorder(sessionId: string): SessionRecorder | undefined {
    if (this.options.sessionId !== undefined && sessionId !== this.options.sessionId) {
      return undefined;
    }
    let r = this.recorders.get(sessionId);
    if (!r) {
      r = new SessionRecorder(sessionId, this.maxItems);
      this.recorders.set(sessionId, r);
    }
    return r;
  }

  private openAll(): void {
    this.opened = true;
    for (const [sessionId, m] of this.marks) {
      if (!m.deleted) this.recorder(sessionId)?.open(m, this.from);
    }
  }
}

/** A session before anything moved: marks of a session the replay did not know. */
const EMPTY_MARKS: SessionMarks = {
  lane: { state: 'idle' },
  turn: null,
  background: [],
  execution: null,
  deleted: false,
};

/**
 * Folds a task's entries into its history one at a time, as they are read: `add` each entry in
 * stream order (its time is its stream id's, {@link entryTime}), then `finish`. Entries before
 * `from` only build the state the range starts from; the caller stops at the range's end.
 */
export class HistoryFold {
  private readonly observer: HistoryObserver;
  private readonly replay: HistoryReplay;

  constructor(
    taskId: string,
    options: Omit<HistoryOptions, 'to'> = {},
    /** The state before the first entry added: the initial state, or a snapshot's. */
    start: TaskState = initialTaskState(taskId),
  ) {
    this.observer = new HistoryObserver(start);
    this.replay = new HistoryReplay(taskId, options, this.observer.marks());
  }

  add(at: number, entry: StreamEntry): void {
    this.replay.add(at, this.observer.observe(entry));
  }

  finish(to?: number): TaskHistory {
    return this.replay.finish(to);
  }
}

/**
 * A task's observations between two of its checkpoints: the history's read model. The owner
 * writes one when it keeps a checkpoint (and a history query that found none writes it); a query
 * then reads a day as its spans instead of refolding the day's entries. It is derived from the
 * stream by the same fold, and holds nothing the stream does not: any reader may build it again.
 */
export interface HistorySpan {
  v: 1;
  /** The checkpoint it starts after, and the one it ends at (stream ids). */
  from: string;
  to: string;
  /** Each entry's time: the first less `from`'s time, then each less the one before. */
  t: number[];
  /** What moved, as [index of the entry in `t`, what that entry changed]. */
  o: [number, Observation][];
}

/** Builds the span from a checkpoint's state: `add` every entry up to the next checkpoint. */
export class HistorySpanBuilder {
  private readonly observer: HistoryObserver;
  private readonly t: number[] = [];
  private readonly o: [number, Observation][] = [];
  private last: number;
  private lastId: string;

  constructor(
    private readonly from: string,
    start: TaskState,
  ) {
    this.observer = new HistoryObserver(start);
    this.last = entryTime(from);
    this.lastId = from;
  }

  /** One entry: its stream id, and what it changed (for a reader folding as it builds). */
  add(id: string, entry: StreamEntry): Observation[] {
    const at = entryTime(id);
    const observations = this.observer.observe(entry);
    for (const ob of observations) this.o.push([this.t.length, ob]);
    this.t.push(at - this.last);
    this.last = at;
    this.lastId = id;
    return observations;
  }

  /** The state after the last entry added. */
  get state(): TaskState {
    return this.observer.current;
  }

  /** The span up to the next checkpoint: the last entry added, or a refused one after it. */
  finish(to: string = this.lastId): HistorySpan {
    return { v: 1, from: this.from, to, t: this.t, o: this.o };
  }
}

/** A span's entries in order: each one's time and what it changed. */
export function* spanEntries(
  span: HistorySpan,
): Generator<{ at: number; observations: Observation[] }> {
  let at = entryTime(span.from);
  let k = 0;
  for (let i = 0; i < span.t.length; i++) {
    at += span.t[i]!;
    const observations: Observation[] = [];
    while (k < span.o.length && span.o[k]![0] === i) observations.push(span.o[k++]![1]);
    yield { at, observations };
  }
}

/** A span as read back: one of this version, of this range, whose parts are where they belong. */
export function spanFromJson(json: string, from: string): HistorySpan | undefined {
  let span: unknown;
  try {
    span = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof span !== 'object' || span === null) return undefined;
  const s = span as Partial<HistorySpan>;
  return s.v === 1 &&
    s.from === from &&
    typeof s.to === 'string' &&
    Array.isArray(s.t) &&
    Array.isArray(s.o)
    ? (s as HistorySpan)
    : undefined;
}

/**
 * The history of a task over `[from, to]`, from `start` (the state before the first of
 * `entries`: the initial state, or a snapshot's) and the stream entries after it, in order.
 */
export function taskHistory(
  taskId: string,
  entries: Iterable<{ id: string; entry: StreamEntry }>,
  options: HistoryOptions = {},
  start: TaskState = initialTaskState(taskId),
): TaskHistory {
  const to = options.to ?? Number.MAX_SAFE_INTEGER;
  const h = new HistoryFold(taskId, options, start);
  for (const { id, entry } of entries) {
    const at = entryTime(id);
    if (at > to) break;
    h.add(at, entry);
  }
  return h.finish(options.to);
}
