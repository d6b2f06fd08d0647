import { reduceBackgroundWork } from './background-work';
import {
  endsGroup,
  type QueueView,
  type SessionActivityView,
  type SessionView,
  type TaskActivityView,
  type TaskView,
  type Update,
} from '@baton/protocol';

/**
 * A task's view kept by applying updates to a snapshot: the client's local view, and the
 * gateway's cached view advanced by the updates its tail decodes. Everything here is pure and
 * synchronous, so the same code runs in Node, in a browser and in property tests
 * (libs/client/test/reducer.properties.spec.ts: it rebuilds the owner's view after every entry).
 */

/** What applying one update did. Anything but `applied` and `duplicate` asks for a new snapshot. */
export type StepResult =
  | { readonly kind: 'applied'; readonly view: TaskView }
  /** `seq ≤ view.seq`: already applied (a replayed or resent update); the view is unchanged. */
  | { readonly kind: 'duplicate'; readonly view: TaskView }
  /** `seq > view.seq + 1`: updates were missed; the view is unchanged and must be resynced. */
  | { readonly kind: 'gap'; readonly view: TaskView; readonly expected: number }
  /** The update names a session the view does not have: the view is stale; resync. */
  | { readonly kind: 'unknown_session'; readonly view: TaskView; readonly sessionId: string }
  /** The update belongs to another task; the view is unchanged. */
  | { readonly kind: 'other_task'; readonly view: TaskView };

export class UpdateGapError extends Error {
  constructor(
    readonly result: Exclude<StepResult, { kind: 'applied' | 'duplicate' }>,
    readonly update: Update,
  ) {
    super(
      result.kind === 'gap'
        ? `update ${update.seq} of task ${update.taskId} arrived while ${result.expected} was expected`
        : result.kind === 'unknown_session'
          ? `update ${update.seq} names session ${result.sessionId}, absent from the view`
          : `update of task ${update.taskId} applied to the view of task ${result.view.taskId}`,
    );
    this.name = 'UpdateGapError';
  }
}

/**
 * Applies one update to a task view: duplicates (`seq ≤ view.seq`) return the same view object;
 * a gap, an unknown session or another task's update throws {@link UpdateGapError} so the caller
 * fetches a snapshot instead of building on a view that missed something.
 */
export function applyUpdate(view: TaskView, update: Update): TaskView {
  const r = stepUpdate(view, update);
  if (r.kind === 'applied' || r.kind === 'duplicate') return r.view;
  throw new UpdateGapError(r, update);
}

/** Non-throwing {@link applyUpdate}: says what happened, for a client that resyncs on its own. */
export function stepUpdate(view: TaskView, update: Update): StepResult {
  if (update.taskId !== view.taskId) return { kind: 'other_task', view };
  if (update.seq <= view.seq) return { kind: 'duplicate', view };
  if (update.seq > view.seq + 1) return { kind: 'gap', view, expected: view.seq + 1 };
  const seq = update.seq;
  switch (update.type) {
    case 'task.activity':
      return applied({ ...view, seq, activity: mergeDefined(view.activity, update.data) });
    case 'task.status':
      // A deleted task is a tombstone: its sessions' own updates (session.deleted) follow.
      return applied({ ...view, seq, status: update.data.status });
    case 'session.activity': {
      const { sessionId, ...activity } = update.data;
      const existing = view.sessions.find((s) => s.sessionId === sessionId);
      const session: SessionView = existing
        ? { ...existing, activity: mergeDefined(existing.activity, activity) }
        : newSession(sessionId, activity);
      return applied({ ...view, seq, sessions: putSession(view.sessions, session) });
    }
    case 'session.queue':
    case 'session.permissions':
    case 'session.parked':
    case 'chat/backgroundWorkSet':
    case 'chat/backgroundWorkRemoved': {
      const sessionId = update.data.sessionId;
      const existing = view.sessions.find((s) => s.sessionId === sessionId);
      if (!existing) return { kind: 'unknown_session', view, sessionId };
      const session = applySessionUpdate(existing, update);
      return applied({ ...view, seq, sessions: putSession(view.sessions, session) });
    }
    case 'session.deleted': {
      const sessionId = update.data.sessionId;
      return applied({
        ...view,
        seq,
        sessions: view.sessions.filter((s) => s.sessionId !== sessionId),
      });
    }
    // Events: they change no view field, but they are part of the sequence.
    case 'prompt.decided':
    case 'command.failed':
    case 'turn.stalled':
      return applied({ ...view, seq });
    default:
      // A newer server's update type: keep the sequence moving, change nothing (AHP: clients
      // silently ignore unknown action types).
      return applied({ ...view, seq: (update as Update).seq });
  }
}

const applied = (view: TaskView): StepResult => ({ kind: 'applied', view });

/**
 * Applies one entry's updates (a group) as one change: the view after all of them, or the first
 * result that is neither applied nor a duplicate, with the view as it was before the group.
 * Nothing in between is ever returned: a client shows a view before or after a whole group.
 */
export function applyGroup(view: TaskView, group: readonly Update[]): StepResult {
  let v = view;
  for (const u of group) {
    const r = stepUpdate(v, u);
    if (r.kind === 'applied') v = r.view;
    else if (r.kind !== 'duplicate') return { ...r, view };
  }
  return v === view ? { kind: 'duplicate', view } : { kind: 'applied', view: v };
}

/**
 * Collects updates into their groups: the updates of one stream entry, up to the one marked
 * `last` (an update without the marker, published before groups existed, is a group of its own).
 * An update of another entry while a group is open closes the open one first (a server that
 * always marks the end never makes that happen).
 */
export class GroupBuffer {
  private open: Update[] = [];

  /** The updates of the group under way (not applied yet). */
  get pending(): readonly Update[] {
    return this.open;
  }

  /** Takes the next update; returns the groups it completes, in order (usually none or one). */
  push(u: Update): Update[][] {
    const done: Update[][] = [];
    if (this.open.length > 0 && this.open[0]!.entry !== u.entry) {
      done.push(this.open);
      this.open = [];
    }
    this.open.push(u);
    if (endsGroup(u)) {
      done.push(this.open);
      this.open = [];
    }
    return done;
  }

  /** Forgets the group under way (a snapshot or a new subscription sends it again). */
  clear(): void {
    this.open = [];
  }
}

/** The session-level part: one update that names this session, applied to its view. */
export function applySessionUpdate(session: SessionView, update: Update): SessionView {
  switch (update.type) {
    case 'session.activity': {
      const { sessionId: _sessionId, ...activity } = update.data;
      return { ...session, activity: mergeDefined(session.activity, activity) };
    }
    case 'session.queue': {
      const { sessionId: _sessionId, ...queue } = update.data;
      return { ...session, queue: mergeDefined(session.queue, queue) as QueueView };
    }
    case 'session.permissions':
      return { ...session, permissions: update.data.requests };
    case 'session.parked':
      return { ...session, parked: update.data.parked };
    case 'chat/backgroundWorkSet':
    case 'chat/backgroundWorkRemoved': {
      const action =
        update.type === 'chat/backgroundWorkSet'
          ? { type: update.type, work: update.data.work }
          : { type: update.type, id: update.data.id };
      const next = reduceBackgroundWork(session, action);
      return next === session ? session : { ...session, backgroundWork: [...next.backgroundWork] };
    }
    default:
      return session;
  }
}

/**
 * Field-wise merge where an omitted (undefined) field keeps the previous value and any value
 * given — including 0, `false` and `null` — replaces it: a count left out of an update is
 * unchanged, an explicit 0 clears it.
 */
export function mergeDefined<T extends object>(previous: T, patch: Partial<T>): T {
  let out: T | undefined;
  for (const key of Object.keys(patch) as (keyof T)[]) {
    const value = patch[key];
    if (value === undefined || Object.is(value, previous[key])) continue;
    out ??= { ...previous };
    out[key] = value as T[keyof T];
  }
  return out ?? previous;
}

/** A session's activity before anything happened in it: created, nothing running or asked. */
export const NEW_SESSION_ACTIVITY: SessionActivityView = {
  state: 'created',
  foregroundActivity: null,
  activeSubagentCount: 0,
  supportsSteering: false,
  runningGeneration: null,
  admission: 'coarse',
  attention: null,
};
const NEW_QUEUE: QueueView = { autoRun: true, capacity: 0, entries: [], blockedBy: null };

function newSession(sessionId: string, activity: Partial<SessionActivityView>): SessionView {
  return {
    sessionId,
    activity: mergeDefined(NEW_SESSION_ACTIVITY, activity),
    queue: NEW_QUEUE,
    backgroundWork: [],
    permissions: [],
    parked: null,
  };
}

/**
 * Replaces a session in place or adds a new one where the server lists it: the server's views
 * list sessions in the order of a JSON object keyed by session id (first appearance, with
 * integer-like ids first), so the same construction gives the same order.
 */
function putSession(sessions: readonly SessionView[], session: SessionView): SessionView[] {
  const at = sessions.findIndex((s) => s.sessionId === session.sessionId);
  if (at !== -1) return sessions.map((s, i) => (i === at ? session : s));
  // No prototype: a session called `__proto__` is an entry like any other.
  const byId: Record<string, SessionView> = Object.create(null) as Record<string, SessionView>;
  for (const s of sessions) byId[s.sessionId] = s;
  byId[session.sessionId] = session;
  return Object.values(byId);
}

/**
 * The task aggregate computed from session views: most active wins, subagent counts summed, and
 * the sessions that wait for a person counted.
 */
export function aggregateActivity(sessions: readonly SessionView[]): TaskActivityView {
  let foregroundActivity: TaskActivityView['foregroundActivity'] = null;
  let activeSubagentCount = 0;
  let sessionsNeedingPerson = 0;
  for (const s of sessions) {
    activeSubagentCount += s.activity.activeSubagentCount;
    if (s.activity.attention?.kind === 'needs_person') sessionsNeedingPerson++;
    const f = s.activity.foregroundActivity;
    if (f === 'generating' || (f === 'background' && foregroundActivity === null))
      foregroundActivity = f;
  }
  return { foregroundActivity, activeSubagentCount, sessionsNeedingPerson };
}
