// Reference copy (before the performance work) for test/equivalence.spec.ts: the naive oracle.
import {
  SCHEMA_VERSION,
  type PromptOutcome,
  type SessionActivityView,
  type StreamEntry,
  type UnsequencedUpdate,
  type Update,
} from '@baton/protocol';
import { evolve } from './evolve';
import type { PromptRecord, SessionState, TaskState } from './state';
import { blockedBy, liveRegistrations, queueView, sessionActivity, taskActivity } from './views';
import { orderTowardBusy } from '../../src/order';

export interface Folded {
  readonly state: TaskState;
  /** Updates for clients, numbered with the task's next sequences. */
  readonly updates: Update[];
}

/**
 * fold(state, entry): evolve, then publish every change of what clients can see. The sequence
 * lives in the state, so a replica that folds the same stream numbers the same updates the same
 * way — a new owner continues it and never reuses a number. Unchanged values are not published.
 */
export function fold(state: TaskState, entry: StreamEntry): Folded {
  const next = evolve(state, entry);
  if (next === state) return repeatedSubmit(state, entry);
  if (!('sessionId' in entry)) return foldTask(state, next, entry);
  const before = state.sessions[entry.sessionId];
  const after = next.sessions[entry.sessionId]!;
  const a0 = before && sessionActivity(before);
  const a1 = sessionActivity(after);
  const drafts = sessionChanges(before, after, a0, a1, entry);
  // The aggregate can move only when this session's own tier or count moved.
  if (
    !before ||
    !a0 ||
    before.deleted !== after.deleted ||
    a0.foregroundActivity !== a1.foregroundActivity ||
    a0.activeSubagentCount !== a1.activeSubagentCount
  ) {
    const taskBefore = taskActivity(state);
    const taskAfter = taskActivity(next);
    if (
      taskBefore.foregroundActivity !== taskAfter.foregroundActivity ||
      taskBefore.activeSubagentCount !== taskAfter.activeSubagentCount
    ) {
      drafts.push({ type: 'task.activity', data: taskAfter });
    }
  }
  if (drafts.length === 0) return { state: next, updates: [] };
  let seq = next.seq;
  const ordered = orderTowardBusy(drafts, a0 ? a0.foregroundActivity : null, a1.foregroundActivity);
  const updates = ordered.map(
    (d) => ({ v: SCHEMA_VERSION, taskId: next.taskId, seq: ++seq, ...d }) as Update,
  );
  return { state: { ...next, seq }, updates };
}

/**
 * A task-wide entry: the task's status if it changed, then what changed in each of its sessions
 * (in the order the task holds them), then the task's aggregate.
 */
function foldTask(state: TaskState, next: TaskState, entry: StreamEntry): Folded {
  const drafts: UnsequencedUpdate[] = [];
  if (next.status !== state.status)
    drafts.push({ type: 'task.status', data: { status: next.status } });
  for (const [id, after] of Object.entries(next.sessions)) {
    const before = state.sessions[id]!;
    drafts.push(
      ...sessionChanges(before, after, sessionActivity(before), sessionActivity(after), entry),
    );
  }
  const taskBefore = taskActivity(state);
  const taskAfter = taskActivity(next);
  if (
    taskBefore.foregroundActivity !== taskAfter.foregroundActivity ||
    taskBefore.activeSubagentCount !== taskAfter.activeSubagentCount
  ) {
    drafts.push({ type: 'task.activity', data: taskAfter });
  }
  let seq = next.seq;
  const updates = drafts.map(
    (d) => ({ v: SCHEMA_VERSION, taskId: next.taskId, seq: ++seq, ...d }) as Update,
  );
  return { state: { ...next, seq }, updates };
}

/**
 * A prompt submitted again under a key the session already knows changes nothing, but its sender
 * (a client retrying, perhaps through another gateway) is owed the answer: the prompt's decision
 * as it stands is announced again.
 */
function repeatedSubmit(state: TaskState, entry: StreamEntry): Folded {
  if (entry.type !== 'prompt.submit') return { state, updates: [] };
  const s = state.sessions[entry.sessionId];
  const promptId = s?.promptByKey[entry.data.idempotencyKey];
  const record = promptId === undefined ? undefined : s!.prompts[promptId];
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
  return { state: { ...state, seq }, updates: [update] };
}

function sessionChanges(
  before: SessionState | undefined,
  after: SessionState,
  a0: SessionActivityView | undefined,
  a1: SessionActivityView,
  entry: StreamEntry,
): UnsequencedUpdate[] {
  const sessionId = after.id;
  const out: UnsequencedUpdate[] = [];
  if (after.deleted) {
    if (before && !before.deleted) out.push({ type: 'session.deleted', data: { sessionId } });
    if (entry.type === 'command.rejected') out.push(commandFailed(entry));
    out.push(...promptChanges(before, after, entry));
    return out;
  }
  if (
    !a0 ||
    a0.state !== a1.state ||
    a0.foregroundActivity !== a1.foregroundActivity ||
    a0.activeSubagentCount !== a1.activeSubagentCount ||
    a0.supportsSteering !== a1.supportsSteering ||
    a0.runningGeneration !== a1.runningGeneration ||
    a0.admission !== a1.admission ||
    JSON.stringify(a0.attention) !== JSON.stringify(a1.attention)
  ) {
    out.push({ type: 'session.activity', data: { sessionId, ...a1 } });
  }
  // A new session's queue is published with it: a client that saw the task before the session
  // existed must not have to know the defaults (capacity) to build the session's view.
  if (
    !before ||
    before.queue !== after.queue ||
    before.autoRun !== after.autoRun ||
    before.config.queueCapacity !== after.config.queueCapacity ||
    blockedBy(before) !== blockedBy(after)
  ) {
    out.push({ type: 'session.queue', data: { sessionId, ...queueView(after) } });
  }
  if (!before || before.background !== after.background)
    out.push(...backgroundChanges(before, after));
  out.push(...promptChanges(before, after, entry));
  if (entry.type === 'command.rejected') out.push(commandFailed(entry));
  // A turn.stalled entry that changed anything is a new silence (or a first advisory).
  if (entry.type === 'turn.stalled' && before) {
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
 * Every change of a prompt's status is announced, correlated by its idempotency key: first the
 * prompts that were open (pending, queued, or holding a claim), then the settled ones, each in
 * submission order.
 */
function promptChanges(
  before: SessionState | undefined,
  after: SessionState,
  entry: StreamEntry,
): UnsequencedUpdate[] {
  if (before && before.prompts === after.prompts) return [];
  const out: UnsequencedUpdate[] = [];
  const open = (p: PromptRecord) =>
    p.status === 'pending' ||
    p.status === 'queued' ||
    [before?.turn, before?.steer].some((c) => c?.phase === 'claimed' && c.promptId === p.promptId);
  const wasOpen = (p: PromptRecord) => {
    const old = before?.prompts[p.promptId];
    return old !== undefined && open(old);
  };
  const records = Object.values(after.prompts);
  const ordered = [...records.filter(wasOpen), ...records.filter((p) => !wasOpen(p))];
  for (const record of ordered) {
    const old = before?.prompts[record.promptId];
    if (old && old.status === record.status) continue;
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
  return out;
}

function outcome(s: SessionState, p: PromptRecord, entry: StreamEntry): PromptOutcome | null {
  switch (p.status) {
    case 'pending':
      return null;
    case 'queued': {
      const reason =
        entry.type === 'prompt.queued' && entry.data.promptId === p.promptId
          ? entry.data.reason
          : 'released';
      return { outcome: 'queued', position: s.queue.indexOf(p.promptId) + 1, reason };
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
  }
}
