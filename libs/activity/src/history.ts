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
import { initialTaskState, type SessionState, type TaskState, type Turn } from './state';
import { activityInputsMoved, attention, backgroundWork, foregroundActivity } from './views';

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

class SessionRecorder {
  readonly out: SessionHistory;
  private readonly turns = new Map<string, TurnRecord>();
  private readonly items = new Map<string, BackgroundRecord>();
  private readonly prompts = new Map<string, PromptHistory>();
  private readonly executions = new Map<string, ExecutionRecord>();
  /** The state the activity lane was last derived from. */
  private laneOf: SessionState | undefined;
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
  open(s: SessionState, at: number): void {
    this.activity(s, at);
    this.turn(null, s, at, undefined);
    this.background(undefined, s, at, undefined);
    const x = s.execution;
    if (x && x.phase !== 'ended') this.execution(x.id).start = at;
  }

  activity(s: SessionState, at: number): void {
    // Most entries (output, tool frames) leave every input of the lane the same object: then the
    // lane is the one already open (or the list is full), and deriving it again is most of the
    // cost of a history. Property 11 (test/properties.spec.ts) checks this against deriving it
    // after every entry.
    if (this.laneOf !== undefined && !activityInputsMoved(this.laneOf, s)) return;
    this.laneOf = s;
    const next = activityLane(s);
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

  turn(before: Turn | null, after: SessionState, at: number, entry: StreamEntry | undefined) {
    const now = after.turn;
    // A turn is its prompt and generation; evolve copies it on most entries of a turn (output
    // moves its epoch), and comparing the two fields spares building two keys for each of them.
    if (
      now === before ||
      (now && before && now.promptId === before.promptId && now.generation === before.generation)
    )
      return;
    const key = (t: Turn) => `${t.promptId}\n${t.generation}`;
    if (before) {
      const r = this.turns.get(key(before));
      if (r && r.end === null) {
        r.end = at;
        r.stopReason = endReason(entry);
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

  background(
    before: SessionState | undefined,
    after: SessionState,
    at: number,
    entry: StreamEntry | undefined,
  ): void {
    // evolve shares every part of a session it did not change: same registrations, same items.
    if (before && before.background === after.background) return;
    const was = before ? backgroundWork(before) : [];
    const is = backgroundWork(after);
    if (was.length === 0 && is.length === 0) return;
    const now = new Set(is.map((w) => w.id));
    for (const w of was) {
      if (now.has(w.id)) continue;
      const r = this.items.get(w.id);
      if (!r || r.end !== null) continue;
      r.end = at;
      r.endedBy =
        entry?.type === 'background.ended' && (entry.data.workId || entry.data.toolCallId)
          ? 'identified'
          : entry?.type === 'execution.ended' || entry?.type === 'execution.lost'
            ? 'execution'
            : 'unidentified';
    }
    const prev = new Set(was.map((w) => w.id));
    for (const w of is) {
      if (prev.has(w.id) && this.items.has(w.id)) continue;
      if (this.items.get(w.id)?.end === null) continue;
      const r: BackgroundRecord = { id: w.id, kind: w.kind, label: w.label, start: at, end: null };
      if (this.push(this.out.background, r)) this.items.set(w.id, r);
    }
  }

  entry(e: StreamEntry, at: number, before: SessionState | undefined): void {
    switch (e.type) {
      case 'prompt.submit': {
        // A key the session knew makes no second prompt: the owner answers with what it decided.
        if (this.prompts.has(e.data.promptId) || before?.promptByKey[e.data.idempotencyKey]) return;
        const p: PromptHistory = {
          promptId: e.data.promptId,
          idempotencyKey: e.data.idempotencyKey,
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
      case 'prompt.admitted': {
        const p = this.prompts.get(e.data.promptId);
        if (!p) return;
        if (p.decision === null) {
          p.decision = 'admitted';
          p.decidedAt = at;
        } else if (p.decision === 'queued' && p.queueWaitMs === null) {
          p.queueWaitMs = at - p.decidedAt!;
        }
        p.admittedAt ??= at;
        return;
      }
      case 'prompt.queued': {
        const p = this.prompts.get(e.data.promptId);
        if (p && p.decision === null) {
          p.decision = 'queued';
          p.decidedAt = at;
        }
        return;
      }
      case 'prompt.rejected': {
        const p = this.prompts.get(e.data.promptId);
        if (!p) return;
        if (p.decision === null) {
          p.decision = 'rejected';
          p.decidedAt = at;
        }
        p.reason = e.data.reason;
        return;
      }
      case 'prompt.removed': {
        const p = this.prompts.get(e.data.promptId);
        if (p) p.reason ??= 'removed';
        return;
      }
      case 'prompt.dispatched': {
        const p = this.prompts.get(e.data.promptId);
        if (p) p.dispatchedAt ??= at;
        return;
      }
      case 'execution.requested':
        this.execution(e.data.executionId).requestedAt ??= at;
        return;
      case 'execution.request_expired': {
        const x = this.execution(e.data.executionId);
        x.end ??= at;
        x.reason ??= 'no_worker';
        return;
      }
      case 'execution.started':
        this.execution(e.executionId).start ??= at;
        return;
      case 'execution.ended': {
        const x = this.execution(e.executionId);
        x.end ??= at;
        x.reason ??= e.data.reason;
        return;
      }
      case 'execution.lost': {
        const x = this.execution(e.data.executionId);
        x.end ??= at;
        x.reason ??= 'lost';
        return;
      }
      default:
        return;
    }
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

function endReason(entry: StreamEntry | undefined): string | undefined {
  if (!entry) return undefined;
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

/**
 * Folds a task's entries into its history one at a time, as they are read: `add` each entry in
 * stream order (its time is its stream id's, {@link entryTime}), then `finish`. Entries before
 * `from` only build the state the range starts from; the caller stops at the range's end.
 */
export class HistoryFold {
  private readonly from: number;
  private readonly maxItems: number;
  private readonly recorders = new Map<string, SessionRecorder>();
  private state: TaskState;
  private opened = false;
  private last: number;
  private count = 0;

  constructor(
    private readonly taskId: string,
    private readonly options: Omit<HistoryOptions, 'to'> = {},
    /** The state before the first entry added: the initial state, or a snapshot's. */
    start: TaskState = initialTaskState(taskId),
  ) {
    this.from = options.from ?? 0;
    this.maxItems = options.maxItems ?? 10_000;
    this.state = start;
    this.last = this.from;
  }

  add(at: number, entry: StreamEntry): void {
    if (at >= this.from && !this.opened) this.openAll();
    const before = this.state;
    // evolve, not fold: the history reads the states, never the updates fold would number.
    const state = (this.state = evolve(before, entry));
    if (at < this.from) return;
    this.count++;
    this.last = at;
    if ('sessionId' in entry) this.record(entry.sessionId, before, state, entry, at);
    else for (const sessionId in state.sessions) this.record(sessionId, before, state, entry, at);
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

  private record(
    sessionId: string,
    before: TaskState,
    state: TaskState,
    entry: StreamEntry,
    at: number,
  ): void {
    const after = state.sessions[sessionId];
    if (!after) return;
    // Before the check for a change: a session an entry names gets its (maybe empty) history.
    const r = this.recorder(sessionId);
    const prev = before.sessions[sessionId];
    if (!r || after === prev) return;
    r.entry(entry, at, prev);
    r.activity(after, at);
    r.turn(prev?.turn ?? null, after, at, entry);
    r.background(prev, after, at, entry);
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
    for (const s of Object.values(this.state.sessions)) {
      if (!s.deleted) this.recorder(s.id)?.open(s, this.from);
    }
  }
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
