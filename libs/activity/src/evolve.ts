import { isTaskEntry, type SessionEntry, type StreamEntry, type TaskStatus } from '@baton/protocol';
import { initialSessionState } from './state';
import type { SessionState, TaskState } from './state';
import { copySession, type Draft, type SessionHandlers } from './evolve/draft';
import { closeSettled } from './evolve/effects';
import { executions } from './evolve/executions';
import { permissions } from './evolve/permissions';
import { prompts } from './evolve/prompts';
import { sessions } from './evolve/sessions';
import { task } from './evolve/task';
import { tools } from './evolve/tools';
import { turns } from './evolve/turns';
import { usage } from './evolve/usage';
import { copyRecord, own, put } from './records';

/** Every session entry type to the handler of its concern (a missing one does not compile). */
const SESSION: SessionHandlers = {
  ...executions,
  ...turns,
  ...tools,
  ...prompts,
  ...permissions,
  ...sessions,
  ...usage,
};

type AnySessionHandler = (s: SessionState, e: SessionEntry, task: TaskStatus) => Draft | null;
type AnyTaskHandler = (state: TaskState, e: StreamEntry) => TaskState;

/**
 * evolve(state, entry) → state: the whole fold. Pure: no clock, no I/O, no randomness; the same
 * entries give the same state on every replica. An entry for another task is a programming error.
 */
export function evolve(state: TaskState, entry: StreamEntry): TaskState {
  if (entry.taskId !== state.taskId) {
    throw new Error(`entry of task ${entry.taskId} folded into task ${state.taskId}`);
  }
  if (isTaskEntry(entry)) return (task[entry.type] as AnyTaskHandler)(state, entry);
  const before = sessionOf(state, entry.sessionId);
  const after = evolveSession(before, entry, state.status);
  if (after === before && own(state.sessions, entry.sessionId)) return state;
  const sessions = copyRecord(state.sessions);
  put(sessions, entry.sessionId, after);
  return withSessions(state, state.seq, sessions);
}

/** A task with other sessions (and seq), everything else shared. */
export function withSessions(
  state: TaskState,
  seq: number,
  sessions: Readonly<Record<string, SessionState>>,
): TaskState {
  return { taskId: state.taskId, seq, status: state.status, pending: state.pending, sessions };
}

/** The session an entry is about: a session first named in a deleted task is born deleted. */
export function sessionOf(state: TaskState, sessionId: string): SessionState {
  const s = own(state.sessions, sessionId);
  if (s) return s;
  const fresh = initialSessionState(sessionId);
  if (state.status !== 'deleted') return fresh;
  const d = copySession(fresh);
  d.deleted = true;
  return d;
}

/**
 * How a session changes, without mutating it: each entry that changes something makes one fresh
 * copy of the session (a Draft, see copySession) and sets the fields it changes on that copy
 * before anyone else can see it; everything it does not change is shared with the old session.
 * An entry that changes nothing returns the session itself.
 */
export function evolveSession(
  s: SessionState,
  e: SessionEntry,
  task: TaskStatus = 'active',
): SessionState {
  const d = (SESSION[e.type] as AnySessionHandler)(s, e, task);
  if (d === null) return s;
  if (d.prompts !== s.prompts || d.turn !== s.turn || d.steer !== s.steer) closeSettled(d);
  return d;
}
