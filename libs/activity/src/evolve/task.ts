import type { EntryOf, TaskEntry, TaskStatus } from '@baton/protocol';
import { NO_IDS } from '../state';
import type {
  PendingTaskCommand,
  SessionCommandRef,
  SessionState,
  TaskState,
  Turn,
} from '../state';
import { appended, copySession } from './draft';
import { closeSettled, endRunningPrompts, retireExecution, setPrompt, stop } from './effects';
import { put } from '../records';

/** How one type of task-wide entry changes the task. */
type TaskHandler<E extends TaskEntry> = (state: TaskState, e: E) => TaskState;
/** One handler per task entry type: a type without one does not compile. */
export type TaskHandlers = { readonly [T in TaskEntry['type']]: TaskHandler<EntryOf<T>> };

function taskOf(
  state: TaskState,
  status: TaskStatus,
  pending: readonly PendingTaskCommand[],
): TaskState {
  return { taskId: state.taskId, seq: state.seq, status, pending, sessions: state.sessions };
}

/** A task command, recorded until the owner answers it. */
const recorded: TaskHandler<EntryOf<'task.archive' | 'task.unarchive' | 'task.delete'>> = (
  state,
  e,
) => {
  for (const p of state.pending) if (p.data.commandId === e.data.commandId) return state;
  const after: SessionCommandRef[] = [];
  for (const id in state.sessions) {
    const waiting = state.sessions[id]!.pending;
    if (waiting.length > 0)
      after.push({ sessionId: id, commandId: waiting[waiting.length - 1]!.data.commandId });
  }
  const command: PendingTaskCommand =
    after.length > 0 ? { type: e.type, data: e.data, after } : { type: e.type, data: e.data };
  return taskOf(state, state.status, appended(state.pending, command));
};

/**
 * Archiving or deleting closes every session: its queue and undelivered claims are discarded
 * (each prompt told why) and its live execution is stopped; deleting also deletes every session,
 * for good.
 */
const closed: TaskHandler<EntryOf<'task.archived' | 'task.deleted'>> = (state, e) => {
  const status: TaskStatus =
    e.type === 'task.deleted' || state.status === 'deleted' ? 'deleted' : 'archived';
  const reason = status === 'deleted' ? 'task_deleted' : 'task_archived';
  const sessions: Record<string, SessionState> = {};
  for (const id in state.sessions) put(sessions, id, closeSession(state.sessions[id]!, reason));
  return {
    taskId: state.taskId,
    seq: state.seq,
    status,
    pending: taskAnswered(state.pending, e.data.commandId),
    sessions,
  };
};

/** Task lifecycle: the task-wide commands, and the task archived, unarchived or deleted. */
export const task: TaskHandlers = {
  'task.archive': recorded,
  'task.unarchive': recorded,
  'task.delete': recorded,
  'task.command_rejected': (state, e) =>
    taskOf(state, state.status, taskAnswered(state.pending, e.data.commandId)),
  'task.unarchived': (state, e) =>
    taskOf(
      state,
      state.status === 'deleted' ? 'deleted' : 'active',
      taskAnswered(state.pending, e.data.commandId),
    ),
  'task.archived': closed,
  'task.deleted': closed,
};

function taskAnswered(
  pending: readonly PendingTaskCommand[],
  commandId: string | undefined,
): readonly PendingTaskCommand[] {
  if (commandId === undefined || !pending.some((p) => p.data.commandId === commandId))
    return pending;
  const kept = pending.filter((p) => p.data.commandId !== commandId);
  return kept.length === 0 ? NO_IDS : kept;
}

/** A session of an archived or deleted task: nothing waits, nothing runs. */
function closeSession(s: SessionState, reason: 'task_archived' | 'task_deleted'): SessionState {
  const claimed = (t: Turn | null) => t !== null && t.phase === 'claimed';
  const live = s.execution !== null && s.execution.phase !== 'ended';
  // Unchanged parts stay the same objects: what is published is found by identity.
  if (
    s.queue.length === 0 &&
    !claimed(s.turn) &&
    !claimed(s.steer) &&
    s.requested === null &&
    (reason === 'task_archived' || s.deleted) &&
    (!live || s.execution!.stopping !== null)
  )
    return s;
  const d = copySession(s);
  for (const id of s.queue) setPrompt(d, id, 'removed');
  if (s.queue.length > 0) d.queue = NO_IDS;
  for (const claim of [s.turn, s.steer]) {
    if (claim && claim.phase === 'claimed') setPrompt(d, claim.promptId, 'removed');
  }
  if (d.turn && d.turn.phase === 'claimed') d.turn = d.turn.predecessor;
  if (d.steer && d.steer.phase === 'claimed') d.steer = null;
  if (d.requested !== null) d.requested = null;
  if (reason === 'task_deleted' && !s.deleted) {
    endRunningPrompts(d, 'task_deleted');
    d.deleted = true;
    retireExecution(d);
  }
  stop(d, reason);
  closeSettled(d);
  return d;
}
