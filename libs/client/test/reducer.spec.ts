import { SCHEMA_VERSION, Update, type BackgroundWork, type TaskView } from '@baton/protocol';
import { backgroundWorkFixtures } from '@baton/testing';
import { aggregateActivity, applyUpdate, mergeDefined, stepUpdate } from '../src';

/** libs/ahp's backgroundWork fixtures, in AHP's own `{description, initial, actions, expected}` form. */
interface Chat {
  backgroundWork?: BackgroundWork[];
  [key: string]: unknown;
}
const fixtures = backgroundWorkFixtures<Chat>();

const base = { v: SCHEMA_VERSION, taskId: 't' } as const;
const emptyView: TaskView = {
  taskId: 't',
  seq: 0,
  status: 'active',
  activity: { foregroundActivity: null, activeSubagentCount: 0 },
  sessions: [],
};
const activity = {
  state: 'running',
  foregroundActivity: 'generating',
  activeSubagentCount: 2,
  supportsSteering: false,
  runningGeneration: 1,
  admission: 'coarse',
  attention: null,
} as const;
/** `v` after update `seq`: session `sessionId` reports `activity`. */
const withActivity = (v: TaskView, seq: number, sessionId: string): TaskView =>
  applyUpdate(v, { ...base, seq, type: 'session.activity', data: { sessionId, ...activity } });
/** A view with one session `s` at seq 2, built through the reducer itself. */
function withSession(bg: BackgroundWork[] = []): TaskView {
  let v = withActivity(emptyView, 1, 's');
  v = applyUpdate(v, {
    ...base,
    seq: 2,
    type: 'session.queue',
    data: { sessionId: 's', autoRun: true, capacity: 10, entries: [], blockedBy: null },
  });
  return { ...v, sessions: [{ ...v.sessions[0]!, backgroundWork: bg }] };
}

describe('AHP chat reducer fixtures through the client reducer', () => {
  it('has them', () => expect(fixtures.length).toBeGreaterThanOrEqual(8));

  it.each(fixtures.map((f) => [f.file, f] as const))('%s (as Baton updates)', (_file, f) => {
    // The same actions as updates of session `s`; Baton's view always has the list (absent ⇒ []).
    let view = withSession(f.initial.backgroundWork ?? []);
    let seq = view.seq;
    for (const a of f.actions) {
      const data =
        a.type === 'chat/backgroundWorkSet'
          ? { sessionId: 's', work: a.work }
          : a.type === 'chat/backgroundWorkRemoved'
            ? { sessionId: 's', id: a.id }
            : null;
      if (!data) continue; // turn and unknown chat actions have no Baton update
      const update = Update.parse({ ...base, seq: ++seq, type: a.type, data });
      view = applyUpdate(view, update);
    }
    expect(view.seq).toBe(seq);
    expect(view.sessions[0]!.backgroundWork).toStrictEqual(f.expected.backgroundWork ?? []);
  });
});

describe('applyUpdate rules', () => {
  it('an omitted count keeps the previous value; an explicit 0 clears it', () => {
    let v = withSession();
    // A sender that leaves a field out (a partial update) changes only what it names.
    const partial = {
      ...base,
      seq: 3,
      type: 'session.activity',
      data: { sessionId: 's', state: 'idle' },
    };
    v = applyUpdate(v, partial as unknown as Update);
    expect(v.sessions[0]!.activity).toEqual({ ...activity, state: 'idle' });
    v = applyUpdate(v, {
      ...base,
      seq: 4,
      type: 'session.activity',
      data: { sessionId: 's', ...activity, activeSubagentCount: 0, foregroundActivity: null },
    });
    expect(v.sessions[0]!.activity.activeSubagentCount).toBe(0);
    expect(v.sessions[0]!.activity.foregroundActivity).toBeNull();
    const task = {
      ...base,
      seq: 5,
      type: 'task.activity',
      data: { foregroundActivity: 'background' },
    };
    v = applyUpdate(
      { ...v, activity: { foregroundActivity: null, activeSubagentCount: 3 } },
      task as unknown as Update,
    );
    expect(v.activity).toEqual({ foregroundActivity: 'background', activeSubagentCount: 3 });
    expect(mergeDefined({ a: 1, b: 2 }, { a: undefined, b: 0 })).toEqual({ a: 1, b: 0 });
  });

  it('returns the very same object when nothing changes', () => {
    const prev = { a: 1, b: null };
    expect(mergeDefined(prev, { a: 1, b: null })).toBe(prev);
  });

  it('removes a deleted session; later events of it move only the sequence', () => {
    let v = withSession();
    v = applyUpdate(v, { ...base, seq: 3, type: 'session.deleted', data: { sessionId: 's' } });
    expect(v.sessions).toEqual([]);
    v = applyUpdate(v, {
      ...base,
      seq: 4,
      type: 'prompt.decided',
      data: {
        sessionId: 's',
        promptId: 'p',
        idempotencyKey: 'k',
        decision: { outcome: 'removed', reason: 'session_deleted' },
      },
    });
    expect(v.seq).toBe(4);
  });

  it('asks for a resync when an update names a session the view lacks', () => {
    const r = stepUpdate(emptyView, {
      ...base,
      seq: 1,
      type: 'chat/backgroundWorkRemoved',
      data: { sessionId: 'ghost', id: 'w' },
    });
    expect(r).toEqual({ kind: 'unknown_session', view: emptyView, sessionId: 'ghost' });
    expect(() =>
      applyUpdate(emptyView, {
        ...base,
        seq: 1,
        type: 'session.queue',
        data: { sessionId: 'ghost', autoRun: true, capacity: 0, entries: [], blockedBy: null },
      }),
    ).toThrow(/ghost/);
  });

  it("keeps the sequence moving over an update type it does not know (a newer server's)", () => {
    const future = { ...base, seq: 1, type: 'session.future', data: { sessionId: 's' } };
    expect(applyUpdate(emptyView, future as unknown as Update)).toEqual({ ...emptyView, seq: 1 });
  });

  it('follows the task’s status: archived, and deleted (its tombstone)', () => {
    let v = applyUpdate(emptyView, {
      ...base,
      seq: 1,
      type: 'task.status',
      data: { status: 'archived' },
    });
    expect(v).toEqual({ ...emptyView, seq: 1, status: 'archived' });
    v = applyUpdate(v, { ...base, seq: 2, type: 'task.status', data: { status: 'deleted' } });
    expect(v.status).toBe('deleted');
  });

  it("ignores another task's update", () => {
    const r = stepUpdate(emptyView, {
      ...base,
      taskId: 'u',
      seq: 1,
      type: 'session.deleted',
      data: { sessionId: 's' },
    });
    expect(r.kind).toBe('other_task');
  });

  it('aggregates like the server: most active wins, counts summed', () => {
    const v = withSession();
    const idle = {
      ...v.sessions[0]!,
      sessionId: 'x',
      activity: { ...activity, foregroundActivity: 'background' as const, activeSubagentCount: 1 },
    };
    expect(aggregateActivity([idle, v.sessions[0]!])).toEqual({
      foregroundActivity: 'generating',
      activeSubagentCount: 3,
      sessionsNeedingPerson: 0,
    });
    expect(aggregateActivity([idle])).toEqual({
      foregroundActivity: 'background',
      activeSubagentCount: 1,
      sessionsNeedingPerson: 0,
    });
    expect(aggregateActivity([])).toEqual({
      foregroundActivity: null,
      activeSubagentCount: 0,
      sessionsNeedingPerson: 0,
    });
    const asking = {
      ...idle,
      activity: {
        ...idle.activity,
        attention: {
          kind: 'needs_person' as const,
          reason: 'permission_requested' as const,
          message: 'the agent asks permission: ls',
        },
      },
    };
    expect(aggregateActivity([asking, idle]).sessionsNeedingPerson).toBe(1);
  });
});

describe('session ids named like Object.prototype members', () => {
  it.each(['__proto__', 'constructor', 'toString'])('%s is a session like any other', (id) => {
    const v = withActivity(withActivity(emptyView, 1, 's'), 2, id);
    expect(v.sessions.map((s) => s.sessionId)).toEqual(['s', id]);
  });
});
