import {
  isTaskEntry,
  SCHEMA_VERSION,
  type ForegroundActivity,
  type PermissionRequestView,
  type PermissionSettled,
  type TaskEntry,
  type PromptOutcome,
  type QueueReason,
  type TaskActivityView,
  type SessionActivityView,
  type StreamEntry,
  type UnsequencedUpdate,
  type Update,
} from '@baton/protocol';
import { evolve, evolveSession, sessionOf, withSessions } from './evolve';
import { orderTowardBusy } from './order';
import { promptIdOfKey, promptOf, waitsForPerson } from './state';
import type { PromptRecord, SessionState, SettledPrompt, TaskState } from './state';
import {
  activeSubagentCount,
  activityInputsMoved,
  differIn,
  foregroundActivity,
  liveRegistrations,
  moreActive,
  parkedView,
  permissionsView,
  queueBlockedBy,
  queueEntries,
  sameAttention,
  sessionActivity,
  taskActivity,
} from './views';
import { copyRecord, own, put } from './records';

export interface Folded {
  readonly state: TaskState;
  /** Updates for clients, numbered with the task's next sequences. */
  readonly updates: Update[];
}

/**
 * fold(state, entry): evolve, then publish every change of what clients can see. The sequence
 * lives in the state, so a replica that folds the same stream numbers the same updates the same
 * way — a new owner continues it and never reuses a number. Unchanged values are not published.
 *
 * What changed is found by comparing what the entry touched rather than recomputing every view:
 * evolve shares every part of a session it did not change, so a view whose inputs are the same
 * objects is the same view. libs/client's reducer property checks it the naive way: a client that
 * applies every published update holds exactly taskView(state), recomputed, after every entry.
 */
export function fold(state: TaskState, entry: StreamEntry): Folded {
  if (entry.taskId !== state.taskId) {
    throw new Error(`entry of task ${entry.taskId} folded into task ${state.taskId}`);
  }
  if (isTaskEntry(entry)) return foldTask(state, entry);
  const sessionId = entry.sessionId;
  const before: SessionState | undefined = own(state.sessions, sessionId);
  const after = evolveSession(before ?? sessionOf(state, sessionId), entry, state.status);
  if (after === before) return repeatedSubmit(state, entry);
  const sessions = copyRecord(state.sessions);
  put(sessions, sessionId, after);
  // Its activity is a function of these fields alone (views.ts): unchanged, it is the same view.
  const moved = !before || activityInputsMoved(before, after);
  const a0 = moved && before ? sessionActivity(before) : undefined;
  const a1 = moved ? sessionActivity(after) : undefined;
  const drafts = sessionChanges(before, after, a0, a1, entry);
  // The aggregate can move only when this session's own tier, count or need of a person moved.
  if (
    a1 !== undefined &&
    (!a0 ||
      before!.deleted !== after.deleted ||
      a0.foregroundActivity !== a1.foregroundActivity ||
      a0.activeSubagentCount !== a1.activeSubagentCount ||
      waitsForPerson(before!) !== waitsForPerson(after))
  ) {
    const task = taskActivityChange(state, sessionId, before, a0, after, a1);
    if (task) drafts.push({ type: 'task.activity', data: task });
  }
  if (drafts.length === 0) return { state: withSessions(state, state.seq, sessions), updates: [] };
  const ordered =
    a1 === undefined
      ? drafts
      : orderTowardBusy(drafts, a0?.foregroundActivity ?? null, a1.foregroundActivity);
  const updates = sequenced(state, ordered);
  return { state: withSessions(state, state.seq + updates.length, sessions), updates };
}

function sequenced(state: TaskState, drafts: readonly UnsequencedUpdate[]): Update[] {
  let seq = state.seq;
  const updates: Update[] = [];
  for (const d of drafts) {
    // Spelled out: an object spread is several times slower in V8 than this literal.
    updates.push({
      v: SCHEMA_VERSION,
      taskId: state.taskId,
      seq: ++seq,
      type: d.type,
      data: d.data,
    } as Update);
  }
  return updates;
}

/** A task-wide entry (archive, delete): the task's status, then every session it closed. */
function foldTask(state: TaskState, entry: TaskEntry): Folded {
  const next = evolve(state, entry);
  if (next === state) return { state, updates: [] };
  const drafts: UnsequencedUpdate[] = [];
  if (next.status !== state.status)
    drafts.push({ type: 'task.status', data: { status: next.status } });
  for (const id in next.sessions) {
    const before = state.sessions[id]!;
    const after = next.sessions[id]!;
    if (before === after) continue;
    const moved = activityInputsMoved(before, after);
    drafts.push(
      ...sessionChanges(
        before,
        after,
        moved ? sessionActivity(before) : undefined,
        moved ? sessionActivity(after) : undefined,
        entry,
      ),
    );
  }
  const t0 = taskActivity(state);
  const t1 = taskActivity(next);
  if (differIn(t0, t1, TASK_ACTIVITY_FIELDS)) drafts.push({ type: 'task.activity', data: t1 });
  const updates = sequenced(state, drafts);
  return {
    state: { ...next, seq: state.seq + updates.length },
    updates,
  };
}

/**
 * The task aggregate after one session changed, the other sessions read once; null when it is the
 * same as before.
 */
function taskActivityChange(
  state: TaskState,
  sessionId: string,
  before: SessionState | undefined,
  a0: SessionActivityView | undefined,
  after: SessionState,
  a1: SessionActivityView,
): TaskActivityView | null {
  let others: ForegroundActivity = null;
  let count = 0;
  let needing = 0;
  for (const id in state.sessions) {
    const s = state.sessions[id]!;
    if (id === sessionId || s.deleted) continue;
    count += activeSubagentCount(s);
    others = moreActive(others, foregroundActivity(s));
    if (waitsForPerson(s)) needing++;
  }
  const wasVisible = before !== undefined && !before.deleted;
  const wasForeground = wasVisible ? moreActive(others, a0!.foregroundActivity) : others;
  const wasCount = wasVisible ? count + a0!.activeSubagentCount : count;
  const wasNeeding = wasVisible && waitsForPerson(before) ? needing + 1 : needing;
  const now: TaskActivityView = after.deleted
    ? { foregroundActivity: others, activeSubagentCount: count, sessionsNeedingPerson: needing }
    : {
        foregroundActivity: moreActive(others, a1.foregroundActivity),
        activeSubagentCount: count + a1.activeSubagentCount,
        sessionsNeedingPerson: waitsForPerson(after) ? needing + 1 : needing,
      };
  return wasForeground === now.foregroundActivity &&
    wasCount === now.activeSubagentCount &&
    wasNeeding === now.sessionsNeedingPerson
    ? null
    : now;
}

/**
 * A prompt submitted again under a key the session already knows changes nothing, but its sender
 * (a client retrying, perhaps through another gateway) is owed the answer: the prompt's decision
 * as it stands is announced again.
 */
function repeatedSubmit(state: TaskState, entry: StreamEntry): Folded {
  if (entry.type !== 'prompt.submit') return { state, updates: [] };
  const s = own(state.sessions, entry.sessionId);
  const promptId = s && promptIdOfKey(s, entry.data.idempotencyKey);
  const record = promptId === undefined ? undefined : promptOf(s!, promptId);
  const decision = record && outcome(s!, record, entry);
  if (!decision) return { state, updates: [] };
  const seq = state.seq + 1;
  const update = {
    v: SCHEMA_VERSION,
    taskId: state.taskId,
    seq,
    type: 'prompt.decided',
    data: {
      sessionId: s!.id,
      promptId: record.promptId,
      idempotencyKey: record.idempotencyKey,
      decision,
    },
  } as Update;
  return { state: withSessions(state, seq, state.sessions), updates: [update] };
}

/** What a client's `task.activity` tells: when one of them changed, it is published. */
const TASK_ACTIVITY_FIELDS = [
  'foregroundActivity',
  'activeSubagentCount',
  'sessionsNeedingPerson',
] as const satisfies readonly (keyof TaskActivityView)[];

/** What a client's `session.activity` tells besides the attention (compared by sameAttention). */
const ACTIVITY_FIELDS = [
  'state',
  'foregroundActivity',
  'activeSubagentCount',
  'supportsSteering',
  'runningGeneration',
  'admission',
  'waitingForPerson',
  'usage',
] as const satisfies readonly (keyof SessionActivityView)[];

function sessionChanges(
  before: SessionState | undefined,
  after: SessionState,
  a0: SessionActivityView | undefined,
  a1: SessionActivityView | undefined,
  entry: StreamEntry,
): UnsequencedUpdate[] {
  const sessionId = after.id;
  const out: UnsequencedUpdate[] = [];
  // The session of a deleted task is gone from views: only its prompts are still told.
  if (after.deleted) {
    if (before && !before.deleted) out.push({ type: 'session.deleted', data: { sessionId } });
    if (entry.type === 'command.rejected') out.push(commandFailed(entry));
    promptChanges(before, after, entry, out);
    return out;
  }
  if (
    a1 !== undefined &&
    (!a0 || differIn(a0, a1, ACTIVITY_FIELDS) || !sameAttention(a0.attention, a1.attention))
  ) {
    const data: Extract<UnsequencedUpdate, { type: 'session.activity' }>['data'] = {
      sessionId,
      state: a1.state,
      foregroundActivity: a1.foregroundActivity,
      activeSubagentCount: a1.activeSubagentCount,
      supportsSteering: a1.supportsSteering,
      runningGeneration: a1.runningGeneration,
      admission: a1.admission,
      attention: a1.attention,
      waitingForPerson: a1.waitingForPerson,
      // Only once reported; null tells a client that had it that it is gone.
      usage: a1.usage !== undefined || a0?.usage !== undefined ? (a1.usage ?? null) : undefined,
    };
    out.push({ type: 'session.activity', data });
  }
  // A new session's queue is published with it: a client that saw the task before the session
  // existed must not have to know the defaults (capacity) to build the session's view. Why its
  // head waits can change only with the activity's inputs or the head prompt's record.
  if (
    !before ||
    before.queue !== after.queue ||
    before.autoRun !== after.autoRun ||
    before.config.queueCapacity !== after.config.queueCapacity ||
    (after.queue.length > 0 &&
      (a1 !== undefined || before.prompts !== after.prompts) &&
      queueBlockedBy(before) !== queueBlockedBy(after))
  ) {
    out.push({
      type: 'session.queue',
      data: {
        sessionId,
        autoRun: after.autoRun,
        capacity: after.config.queueCapacity,
        entries: queueEntries(after),
        blockedBy: queueBlockedBy(after),
      },
    });
  }
  if (!before || before.background !== after.background)
    out.push(...backgroundChanges(before, after));
  if (
    before &&
    (before.parked !== after.parked || (after.parked && before.agentSession !== after.agentSession))
  ) {
    out.push({ type: 'session.parked', data: { sessionId, parked: parkedView(after) } });
  }
  if (before && before.permissions !== after.permissions) {
    const was = permissionsView(before);
    const now = permissionsView(after);
    if (
      was.length !== now.length ||
      was.some((p, i) => p.requestId !== now[i]!.requestId || p.executionId !== now[i]!.executionId)
    ) {
      const resolved = settledPermissions(was, now, after);
      out.push({
        type: 'session.permissions',
        data: { sessionId, requests: now, ...(resolved.length > 0 ? { resolved } : {}) },
      });
    }
  }
  promptChanges(before, after, entry, out);
  if (entry.type === 'command.rejected') out.push(commandFailed(entry));
  if (
    entry.type === 'turn.stalled' &&
    before &&
    (before.stallAdvised !== after.stallAdvised || (!before.turn?.stalled && after.turn?.stalled))
  ) {
    out.push({ type: 'turn.stalled', data: { sessionId, ...entry.data } });
  }
  return out;
}

/** AHP semantics: Set for new or changed entries (complete entries), Removed for finished ones. */
function backgroundChanges(
  before: SessionState | undefined,
  after: SessionState,
): UnsequencedUpdate[] {
  const sessionId = after.id;
  const was = new Map((before ? liveRegistrations(before) : []).map((r) => [r.work.id, r.work]));
  const now = liveRegistrations(after);
  const out: UnsequencedUpdate[] = [];
  const present = new Set<string>();
  for (const r of now) {
    present.add(r.work.id);
    if (was.get(r.work.id) !== r.work)
      out.push({ type: 'chat/backgroundWorkSet', data: { sessionId, work: r.work } });
  }
  for (const id of was.keys()) {
    if (!present.has(id)) out.push({ type: 'chat/backgroundWorkRemoved', data: { sessionId, id } });
  }
  return out;
}

function commandFailed(
  entry: Extract<StreamEntry, { type: 'command.rejected' }>,
): UnsequencedUpdate {
  const { commandId, reason, message } = entry.data;
  return {
    type: 'command.failed',
    data: { sessionId: entry.sessionId, commandId, reason, message },
  };
}

/**
 * Every change of a prompt's status is announced, correlated by its idempotency key. Only an open
 * prompt can change with other prompts in one entry (requeued claims, a deleted session's queue),
 * so those are compared in submission order; a remembered settled prompt changes only when an
 * entry names it.
 */
function promptChanges(
  before: SessionState | undefined,
  after: SessionState,
  entry: StreamEntry,
  out: UnsequencedUpdate[],
): void {
  // The request the queue waited for expired: each queued prompt is told what it waits for now,
  // so no last decision promises a worker that will not come.
  if (
    entry.type === 'execution.request_expired' &&
    before &&
    before.requested !== after.requested
  ) {
    for (const id of after.queue) {
      const record = own(after.prompts, id);
      if (record) announceAgain(after, record, entry, out);
    }
  }
  if (before && before.prompts === after.prompts && before.settled === after.settled) return;
  if (before) for (const id in before.prompts) announce(before, after, id, entry, out);
  const named = 'promptId' in entry.data ? entry.data.promptId : undefined;
  if (named !== undefined && !(before && own(before.prompts, named)))
    announce(before, after, named, entry, out);
  // A force-release, a cancel timeout, an abandoned turn or a deletion settles prompts of turns
  // it ends that no entry field names (the steer's, the turn a handoff claim would replace).
  if (
    before &&
    (entry.type === 'session.force_released' ||
      entry.type === 'turn.cancel_timed_out' ||
      entry.type === 'turn.abandoned' ||
      entry.type === 'session.deleted' ||
      entry.type === 'task.deleted')
  ) {
    for (const t of [before.turn, before.turn?.predecessor ?? null, before.steer])
      if (t && !own(before.prompts, t.promptId) && t.promptId !== named)
        announce(before, after, t.promptId, entry, out);
  }
}

function announce(
  before: SessionState | undefined,
  after: SessionState,
  promptId: string,
  entry: StreamEntry,
  out: UnsequencedUpdate[],
): void {
  const record = promptOf(after, promptId);
  if (!record || (before && promptOf(before, promptId)?.status === record.status)) return;
  const decision = outcome(after, record, entry);
  if (decision) {
    out.push({
      type: 'prompt.decided',
      data: {
        sessionId: after.id,
        promptId: record.promptId,
        idempotencyKey: record.idempotencyKey,
        decision,
      },
    });
  }
}

function announceAgain(
  s: SessionState,
  record: PromptRecord,
  entry: StreamEntry,
  out: UnsequencedUpdate[],
): void {
  const decision = outcome(s, record, entry);
  if (!decision) return;
  out.push({
    type: 'prompt.decided',
    data: {
      sessionId: s.id,
      promptId: record.promptId,
      idempotencyKey: record.idempotencyKey,
      decision,
    },
  });
}

function outcome(
  s: SessionState,
  p: PromptRecord | SettledPrompt,
  entry: StreamEntry,
): PromptOutcome | null {
  switch (p.status) {
    case 'pending':
      return null;
    case 'queued': {
      const position = s.queue.indexOf(p.promptId) + 1;
      return { outcome: 'queued', position, reason: queuedReason(s, p.promptId, position, entry) };
    }
    case 'admitted': {
      const claim =
        s.turn?.promptId === p.promptId
          ? s.turn
          : s.steer?.promptId === p.promptId
            ? s.steer
            : null;
      return claim
        ? { outcome: 'admitted', mode: claim.mode, admissionGeneration: claim.generation }
        : { outcome: 'admitted', mode: 'turn', admissionGeneration: s.admissionGeneration };
    }
    case 'rejected':
      if (entry.type === 'prompt.rejected')
        return { outcome: 'rejected', reason: entry.data.reason, message: entry.data.message };
      return {
        outcome: 'rejected',
        reason: 'dispatch_failed',
        message: 'the prompt could not be delivered to the agent',
      };
    case 'removed':
      return {
        outcome: 'removed',
        reason:
          entry.type === 'prompt.removed'
            ? entry.data.reason
            : entry.type === 'task.deleted'
              ? 'task_deleted'
              : entry.type === 'task.archived'
                ? 'task_archived'
                : 'session_deleted',
      };
    case 'abandoned':
      return {
        outcome: 'failed',
        reason: 'abandoned',
        message: 'the agent never started this prompt (no event by the stall threshold)',
      };
    case 'cancel_timed_out':
      return {
        outcome: 'cancelled',
        reason: 'cancel_timeout',
        message: 'the agent did not answer the cancel in time: its execution was stopped',
      };
    case 'force_released':
      return {
        outcome: 'cancelled',
        reason: 'force_released',
        message: 'an operator force-released the session',
      };
    case 'task_deleted':
      return {
        outcome: 'cancelled',
        reason: 'task_deleted',
        message: 'the task was deleted while the prompt ran: its execution was stopped',
      };
    case 'session_deleted':
      return {
        outcome: 'cancelled',
        reason: 'session_deleted',
        message: 'the session was deleted while the prompt ran: its execution was stopped',
      };
  }
}

/**
 * Why a queued prompt waits, as its decision says: the decision that queued it; what the queue
 * waits for now when it is told again (a retry of its key, the request it waited for expired);
 * else its claim was given back (`released`).
 */
function queuedReason(
  s: SessionState,
  promptId: string,
  position: number,
  entry: StreamEntry,
): QueueReason {
  if (entry.type === 'prompt.queued' && entry.data.promptId === promptId) return entry.data.reason;
  if (entry.type !== 'prompt.submit' && entry.type !== 'execution.request_expired')
    return 'released';
  if (position > 1) return 'queue_not_empty';
  return queueBlockedBy(s) ?? 'busy';
}

/**
 * How each request that left the open list was settled: its answer while the worker still owes
 * the report (a person, the timeout, a cancel), else what the session remembers of it.
 */
function settledPermissions(
  was: readonly PermissionRequestView[],
  now: readonly PermissionRequestView[],
  after: SessionState,
): PermissionSettled[] {
  const out: PermissionSettled[] = [];
  for (const p of was) {
    if (now.some((q) => q.requestId === p.requestId)) continue;
    const a =
      after.permissions.find((q) => q.requestId === p.requestId)?.answer ??
      after.resolvedPermissions.find((q) => q.requestId === p.requestId) ??
      null;
    out.push(
      a
        ? {
            requestId: p.requestId,
            outcome: a.outcome,
            ...(a.optionId !== null ? { optionId: a.optionId } : {}),
            by: a.by,
          }
        : { requestId: p.requestId, outcome: 'cancelled' },
    );
  }
  return out;
}
