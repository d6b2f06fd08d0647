import {
  atRest,
  attention,
  outbox,
  queueBlockedBy,
  sessionActivity,
  snapshotOf,
  stateFromSnapshot,
  taskView,
} from '../src';
import { CLAUDE_CAPS, GENERIC_CAPS, Owner, startedSession, runningSession } from '@baton/testing';

// Each case that could strand a session or leave it silent, as a named example. The
// property over generated histories (properties.spec.ts, "liveness") proves the general claim.

const outcomes = (o: Owner, promptId: string) => o.decisionsFor(promptId);

function running(o = new Owner(), caps = GENERIC_CAPS) {
  const x = o.execution('s1', 'e1', 1);
  x.start(caps);
  const a = o.submit('s1', 'a');
  x.dispatch(a, 1);
  return { o, x, a };
}

describe('a turn that never starts', () => {
  it('fails visibly: the prompt says failed/abandoned, and by default its execution is stopped', () => {
    const { o, x, a } = running();
    const b = o.submit('s1', 'b');
    o.decideNow({ type: 'watchdog', sessionId: 's1', admissionGeneration: 1 });
    expect(outcomes(o, a).at(-1)).toMatchObject({ outcome: 'failed', reason: 'abandoned' });
    expect(o.session().execution?.stopping).toBe('turn_abandoned');
    expect(o.session().queue).toEqual([b]);
    expect(queueBlockedBy(o.session())).toBe('execution_stopping');
    expect(attention(o.session())).toMatchObject({ kind: 'waiting', reason: 'execution_stopping' });
    // The worker stops it: the queue now waits for an execution, and says so.
    x.end('cancelled');
    expect(queueBlockedBy(o.session())).toBe('no_execution');
    expect(attention(o.session())).toMatchObject({
      kind: 'failed',
      reason: 'turn_abandoned',
    });
    const published = o.updates.filter((u) => u.type === 'session.activity').at(-1);
    expect(published?.type === 'session.activity' && published.data.attention?.reason).toBe(
      'turn_abandoned',
    );
  });

  it('with nothing queued, the session shows the failure itself', () => {
    const { o, x } = running();
    o.decideNow({ type: 'watchdog', sessionId: 's1', admissionGeneration: 1 });
    x.end('cancelled');
    expect(attention(o.session())).toMatchObject({ kind: 'failed', reason: 'turn_abandoned' });
  });

  it('a steer the agent already had goes down with it, told so; the session shows no turn on the execution being stopped', () => {
    const o = new Owner();
    o.command('s1', 'session.configure', { steering: true });
    const { x } = running(o, CLAUDE_CAPS);
    const b = o.submit('s1', 'b');
    expect(o.session().steer).toMatchObject({ promptId: b });
    x.dispatch(b, 2);
    o.decideNow({ type: 'watchdog', sessionId: 's1', admissionGeneration: 1 });
    expect(outcomes(o, b).at(-1)).toMatchObject({ outcome: 'failed', reason: 'abandoned' });
    expect(o.session()).toMatchObject({ turn: null, steer: null });
    expect(o.session().execution?.stopping).toBe('turn_abandoned');
    expect(sessionActivity(o.session())).toMatchObject({
      foregroundActivity: null,
      runningGeneration: null,
    });
  });

  it('a steer the agent never got goes back to the head of the queue, and runs next under the continue policy', () => {
    const o = new Owner();
    o.command('s1', 'session.configure', { steering: true, abandonedTurn: 'continue' });
    const { x } = running(o, CLAUDE_CAPS);
    const b = o.submit('s1', 'b');
    expect(o.session().steer).toMatchObject({ promptId: b, phase: 'claimed' });
    o.decideNow({ type: 'watchdog', sessionId: 's1', admissionGeneration: 1 });
    expect(outcomes(o, b).slice(-2)).toEqual([
      { outcome: 'queued', position: 1, reason: 'released' },
      { outcome: 'admitted', mode: 'turn', admissionGeneration: 3 },
    ]);
    expect(o.session().steer).toBeNull();
    expect(o.session().turn).toMatchObject({ promptId: b, mode: 'turn', phase: 'claimed' });
    x.dispatch(b, 3);
    expect(o.session().turn?.phase).toBe('dispatched');
  });

  it('under the continue policy the execution is kept and the queue goes on', () => {
    const o = new Owner();
    o.command('s1', 'session.configure', { abandonedTurn: 'continue' });
    const { x, a } = running(o);
    const b = o.submit('s1', 'b');
    o.decideNow({ type: 'watchdog', sessionId: 's1', admissionGeneration: 1 });
    expect(outcomes(o, a).at(-1)).toMatchObject({ outcome: 'failed', reason: 'abandoned' });
    expect(o.session().execution?.stopping).toBeNull();
    expect(o.session().turn?.promptId).toBe(b);
    x.dispatch(b, 2);
  });
});

describe('a cancel the agent never answers', () => {
  it('ends the turn as cancelled (cancel_timeout) after the grace, stops the execution, and the queue waits with a reason', () => {
    const { o, x, a } = running();
    x.output();
    const b = o.submit('s1', 'b');
    o.command('s1', 'session.cancel', {});
    expect(o.session().turn?.cancel).toBe('user');
    // A stale timer (another generation) does nothing.
    expect(o.decideNow({ type: 'cancel_grace', sessionId: 's1', admissionGeneration: 7 })).toEqual(
      [],
    );
    o.decideNow({ type: 'cancel_grace', sessionId: 's1', admissionGeneration: 1 });
    expect(o.session().turn).toBeNull();
    expect(outcomes(o, a).at(-1)).toMatchObject({ outcome: 'cancelled', reason: 'cancel_timeout' });
    expect(o.session().execution?.stopping).toBe('cancel_timeout');
    // The user's cancel paused the queue; the session says why it cannot run anyway.
    expect(queueBlockedBy(o.session())).toBe('auto_run_off');
    expect(attention(o.session())).toMatchObject({ kind: 'waiting', reason: 'execution_stopping' });
    x.end('cancelled');
    expect(o.session().queue).toEqual([b]);
    expect(queueBlockedBy(o.session())).toBe('auto_run_off'); // the user's cancel paused the queue
    o.command('s1', 'queue.set_auto_run', { enabled: true });
    expect(queueBlockedBy(o.session())).toBe('no_execution');
    expect(attention(o.session())).toMatchObject({
      kind: 'failed',
      reason: 'cancel_timeout',
    });
  });

  it('a steer the agent already had is told it was cancelled too; one it never got goes back to the queue', () => {
    const { o, x } = runningSession(CLAUDE_CAPS, 'a', { steering: true });
    x.output();
    const b = o.submit('s1', 'b');
    expect(o.session().steer).toMatchObject({ promptId: b, phase: 'claimed' });
    x.dispatch(b, 2);
    o.command('s1', 'session.cancel', {});
    o.decideNow({ type: 'cancel_grace', sessionId: 's1', admissionGeneration: 1 });
    expect(outcomes(o, b).at(-1)).toMatchObject({ outcome: 'cancelled', reason: 'cancel_timeout' });
    expect(o.session().steer).toBeNull();
  });

  it('a cancel the agent does answer in time needs no timeout', () => {
    const { o, x } = running();
    o.command('s1', 'session.cancel', {});
    x.endTurn(1, 'cancelled');
    expect(o.decideNow({ type: 'cancel_grace', sessionId: 's1', admissionGeneration: 1 })).toEqual(
      [],
    );
    expect(o.session().execution?.stopping).toBeNull();
  });
});

describe('force-release', () => {
  it('ends the running turn now, clears activity and stops the execution', () => {
    const { o, x, a } = running(new Owner(), CLAUDE_CAPS);
    x.output();
    x.subagent('subagent:1');
    o.command('s1', 'session.force_release', { reason: 'stuck' });
    expect(o.session().turn).toBeNull();
    expect(o.session().background).toEqual([]);
    expect(outcomes(o, a).at(-1)).toMatchObject({ outcome: 'cancelled', reason: 'force_released' });
    expect(o.session().execution?.stopping).toBe('force_released');
    expect(attention(o.session())).toMatchObject({ kind: 'waiting', reason: 'execution_stopping' });
  });

  it('gives a claim the agent never got back to the head of the queue', () => {
    const { o } = startedSession();
    const a = o.submit('s1', 'a');
    expect(o.session().turn?.phase).toBe('claimed');
    o.command('s1', 'session.force_release', {});
    expect(o.session().queue).toEqual([a]);
    expect(outcomes(o, a).at(-1)).toMatchObject({ outcome: 'queued', reason: 'released' });
    // The failure names no prompt: nothing the agent had was ended.
    expect(o.session().failure).toEqual({ reason: 'force_released' });
  });
});

describe('a handoff whose dispatch fails', () => {
  function yielded() {
    const { o, x, p: a } = runningSession(CLAUDE_CAPS, 'a', { admission: 'handoff' });
    x.output();
    x.subagent('subagent:1', true, 'launch-1');
    x.idle('human', 1);
    const b = o.submit('s1', 'b');
    expect(o.session().turn).toMatchObject({ promptId: b, mode: 'handoff', phase: 'claimed' });
    return { o, x, a, b };
  }

  it('restores the turn the agent still holds open, exactly as it stands then', () => {
    const { o, x, a, b } = yielded();
    // Meanwhile the held-open turn generates again and more background work starts.
    x.output();
    x.shell('shell:1', true, 'launch-2');
    x.fact('prompt.dispatch_failed', { promptId: b, admissionGeneration: 2, error: 'x' });
    const s = o.session();
    expect(s.turn).toMatchObject({
      promptId: a,
      generation: 1,
      phase: 'dispatched',
      yielded: false,
    });
    expect(s.background.map((r) => r.work.id)).toEqual(['subagent:1', 'shell:1']);
    expect(sessionActivity(s)).toMatchObject({
      state: 'running',
      foregroundActivity: 'generating',
    });
    // Cancel reaches the restored turn, and its end is not discarded as stale.
    o.command('s1', 'session.cancel', {});
    expect(o.session().turn?.cancel).toBe('user');
    x.endTurn(1, 'cancelled');
    expect(o.session().turn).toBeNull();
  });

  it('restores it yielded when it yielded again, and a held-open turn that ended meanwhile is not revived', () => {
    const { o, x, a, b } = yielded();
    x.output();
    x.idle('human', 1);
    x.fact('prompt.dispatch_failed', { promptId: b, admissionGeneration: 2, error: 'x' });
    // The handoff is retried on the restored, yielded turn.
    expect(o.session().turn).toMatchObject({ promptId: b, generation: 3, mode: 'handoff' });
    expect(o.session().turn?.predecessor).toMatchObject({ promptId: a, yielded: true });
    x.endTurn(1);
    expect(o.session().turn?.predecessor).toBeNull();
    x.fact('prompt.dispatch_failed', { promptId: b, admissionGeneration: 3, error: 'x' });
    expect(o.session().turn).toMatchObject({ promptId: b, generation: 4, mode: 'turn' });
  });
});

describe('agent activity outside any turn', () => {
  it('is shown, never blocks admission by itself, and decays after the quiet period', () => {
    const { o, x } = runningSession(GENERIC_CAPS, 'a');
    x.endTurn(1);
    x.output(); // after the prompt's response
    expect(sessionActivity(o.session())).toMatchObject({
      state: 'waiting_for_input',
      foregroundActivity: 'generating',
    });
    const epoch = o.session().foregroundEpoch;
    expect(o.decideNow({ type: 'quiet', sessionId: 's1', foregroundEpoch: epoch - 1 })).toEqual([]);
    o.decideNow({ type: 'quiet', sessionId: 's1', foregroundEpoch: epoch });
    expect(sessionActivity(o.session()).foregroundActivity).toBeNull();
    x.output();
    const b = o.submit('s1', 'b');
    expect(o.session().turn?.promptId).toBe(b);
  });
});

describe('an execution that waits for a worker', () => {
  it('shows the wait, bounds it, and fails visibly; a late start still runs', () => {
    const o = new Owner();
    o.command('s1', 'execution.request', { executionId: 'e1' });
    expect(attention(o.session())).toMatchObject({
      kind: 'waiting',
      reason: 'waiting_for_worker',
      executionId: 'e1',
    });
    const a = o.submit('s1', 'a');
    expect(outcomes(o, a).at(-1)).toMatchObject({
      outcome: 'queued',
      reason: 'waiting_for_worker',
    });
    expect(queueBlockedBy(o.session())).toBe('waiting_for_worker');
    o.decideNow({ type: 'execution_start', sessionId: 's1', executionId: 'e1' });
    expect(attention(o.session())).toMatchObject({
      kind: 'failed',
      reason: 'no_worker',
    });
    expect(o.session().failure).toMatchObject({ reason: 'no_worker', executionId: 'e1' });
    expect(queueBlockedBy(o.session())).toBe('no_execution');
    o.command('s1', 'queue.cancel', { promptId: a });
    expect(attention(o.session())).toMatchObject({ kind: 'failed', reason: 'no_worker' });
    o.execution('s1', 'e1', 1).start();
    expect(attention(o.session())).toBeNull();
  });

  it('a request that expires with prompts queued: the failure is the attention, and the waiting prompt is told what it waits for now', () => {
    const o = new Owner();
    o.command('s1', 'execution.request', { executionId: 'e1' });
    const a = o.submit('s1', 'a');
    const b = o.submit('s1', 'b');
    o.decideNow({ type: 'execution_start', sessionId: 's1', executionId: 'e1' });
    // As docs/protocol.md says: failed/no_worker, the queue blocked by no_execution.
    expect(attention(o.session())).toMatchObject({ kind: 'failed', reason: 'no_worker' });
    expect(queueBlockedBy(o.session())).toBe('no_execution');
    expect(outcomes(o, a).at(-1)).toEqual({
      outcome: 'queued',
      position: 1,
      reason: 'no_execution',
    });
    expect(outcomes(o, b).at(-1)).toEqual({
      outcome: 'queued',
      position: 2,
      reason: 'queue_not_empty',
    });
    // A client retrying the key is told the same, not that its claim was released.
    o.submit('s1', 'a', 'human', 'p-retry');
    expect(outcomes(o, a).at(-1)).toEqual({
      outcome: 'queued',
      position: 1,
      reason: 'no_execution',
    });
  });

  it('a request folded after its execution started waits for nothing', () => {
    const o = new Owner();
    o.execution('s1', 'e1', 1).start();
    o.command('s1', 'execution.request', { executionId: 'e1' });
    expect(o.session().requested).toBeNull();
  });
});

describe('side state lives in the folded state', () => {
  it('a send-now cancel and an owed stop survive a snapshot, so any owner delivers the same', () => {
    const { o, x } = running();
    x.output();
    const b = o.submit('s1', 'b');
    o.command('s1', 'queue.send_now', { promptId: b });
    expect(o.session().turn?.cancel).toBe('send_now');
    const restored = stateFromSnapshot(JSON.parse(JSON.stringify(snapshotOf(o.state))), 't1')!;
    expect(restored.sessions['s1']!.turn?.cancel).toBe('send_now');
    o.command('s1', 'session.reset', {});
    const again = stateFromSnapshot(JSON.parse(JSON.stringify(snapshotOf(o.state))), 't1')!;
    expect(again.sessions['s1']!.execution?.stopping).toBe('session_reset');
  });

  it('a stop owed to an execution a newer one replaced stays owed, to any owner, until that one ends', () => {
    const { o } = running();
    o.command('s1', 'session.reset', {});
    const e2 = o.execution('s1', 'e2', 2);
    e2.start();
    const stopsTo = (st = o.state) =>
      outbox(st)
        .owed.filter((m) => m.message.type === 'execution.stop')
        .map((m) => [m.executionId, m.message.data]);
    expect(stopsTo()).toEqual([['e1', { reason: 'session_reset' }]]);
    // A new owner after a failover loads the snapshot, and owes the same.
    const restored = stateFromSnapshot(JSON.parse(JSON.stringify(snapshotOf(o.state))), 't1')!;
    expect(stopsTo(restored)).toEqual([['e1', { reason: 'session_reset' }]]);
    expect(atRest(o.state)).toBe(false);
    // Its end settles it; the new execution is untouched.
    o.execution('s1', 'e1', 1).end('cancelled');
    expect(stopsTo()).toEqual([]);
    expect(o.session().execution).toMatchObject({ id: 'e2', phase: 'ready', stopping: null });
  });

  it('a replaced execution owed a stop whose lease lapses is lost, and owed nothing more', () => {
    const { o } = running();
    o.command('s1', 'session.reset', {});
    o.execution('s1', 'e2', 2).start();
    expect(
      o.decideNow({ type: 'execution_lease_expired', sessionId: 's1', executionId: 'e1' }),
    ).toEqual([
      {
        type: 'execution.lost',
        sessionId: 's1',
        data: { executionId: 'e1', generation: 1, reason: 'lease_expired' },
      },
    ]);
    expect(outbox(o.state).owed).toEqual([]);
    expect(o.session().execution).toMatchObject({ id: 'e2', phase: 'ready' });
  });
});

describe('a stalled turn', () => {
  it('needs an operator until the agent speaks again, and is advised again after a new silence', () => {
    const { o, x } = running();
    x.output();
    o.decideNow({ type: 'watchdog', sessionId: 's1', admissionGeneration: 1 });
    expect(attention(o.session())).toMatchObject({
      kind: 'needs_operator',
      reason: 'turn_stalled',
    });
    x.output();
    expect(attention(o.session())).toBeNull();
    o.decideNow({ type: 'watchdog', sessionId: 's1', admissionGeneration: 1 });
    expect(o.updates.filter((u) => u.type === 'turn.stalled')).toHaveLength(2);
  });
});

describe('task lifecycle', () => {
  it('deleting a task tells every queued prompt why, stops its executions, and leaves a tombstone', () => {
    const { o, x, a } = running();
    const b = o.submit('s1', 'b');
    o.taskCommand('task.delete');
    expect(o.state.status).toBe('deleted');
    expect(outcomes(o, b).at(-1)).toEqual({ outcome: 'removed', reason: 'task_deleted' });
    // The running prompt is told too: nobody will see its turn end.
    expect(outcomes(o, a).at(-1)).toMatchObject({ outcome: 'cancelled', reason: 'task_deleted' });
    expect(o.session().execution?.stopping).toBe('task_deleted');
    expect(o.updates.some((u) => u.type === 'task.status' && u.data.status === 'deleted')).toBe(
      true,
    );
    expect(taskView(o.state)).toMatchObject({ status: 'deleted', sessions: [] });
    // Late facts never revive it; a new execution is recorded only to be stopped.
    x.output();
    x.subagent('subagent:late');
    o.execution('s1', 'e2', 2).start();
    expect(o.session().execution).toMatchObject({ id: 'e2', stopping: 'task_deleted' });
    expect(taskView(o.state).sessions).toEqual([]);
    // Its id is not silently reusable: prompts, even to new sessions, are rejected.
    const c = o.submit('s9', 'c');
    expect(outcomes(o, c).at(-1)).toMatchObject({ outcome: 'rejected', reason: 'task_deleted' });
    expect(taskView(o.state).sessions).toEqual([]);
    o.taskCommand('task.unarchive');
    expect(o.state.status).toBe('deleted');
  });

  it('archiving discards queues and refuses prompts until unarchived', () => {
    const { o } = running();
    const b = o.submit('s1', 'b');
    o.taskCommand('task.archive');
    expect(outcomes(o, b).at(-1)).toEqual({ outcome: 'removed', reason: 'task_archived' });
    expect(o.session().execution?.stopping).toBe('task_archived');
    const c = o.submit('s1', 'c');
    expect(outcomes(o, c).at(-1)).toMatchObject({ outcome: 'rejected', reason: 'task_archived' });
    o.taskCommand('task.unarchive');
    expect(o.state.status).toBe('active');
    o.execution('s1', 'e2', 2).start();
    const d = o.submit('s1', 'd');
    expect(o.session().turn?.promptId).toBe(d);
  });

  it('a batch is judged in stream order: a prompt submitted while archived stays refused though an unarchive follows it', () => {
    const { o } = running();
    o.taskCommand('task.archive');
    o.execution('s1', 'e2', 2).start();
    // The owner reads the three entries in one step and decides once.
    o.autoDecide = false;
    const b = o.submit('s1', 'b');
    o.taskCommand('task.unarchive');
    const c = o.submit('s1', 'c');
    o.decideNow();
    expect(outcomes(o, b)).toEqual([
      expect.objectContaining({ outcome: 'rejected', reason: 'task_archived' }),
    ]);
    expect(o.state.status).toBe('active');
    expect(outcomes(o, c)).toEqual([
      { outcome: 'queued', position: 1, reason: 'execution_stopping' },
    ]);
  });

  it('a batch is judged in stream order: an archive after a submit discards the prompt it admitted', () => {
    const o = new Owner();
    o.execution('s1', 'e1', 1).start();
    o.autoDecide = false;
    const a = o.submit('s1', 'a');
    o.taskCommand('task.archive');
    o.decideNow();
    expect(outcomes(o, a)).toEqual([
      { outcome: 'admitted', mode: 'turn', admissionGeneration: 1 },
      { outcome: 'removed', reason: 'task_archived' },
    ]);
  });

  it('deleting a session tells the running prompt and its steer', () => {
    const o = new Owner();
    o.command('s1', 'session.configure', { steering: true });
    const { x, a } = running(o, CLAUDE_CAPS);
    x.output();
    const b = o.submit('s1', 'b');
    x.dispatch(b, 2);
    o.command('s1', 'session.delete', {});
    for (const p of [a, b])
      expect(outcomes(o, p).at(-1)).toMatchObject({
        outcome: 'cancelled',
        reason: 'session_deleted',
      });
  });

  it('deleting a session tells a claim the agent never got', () => {
    const o = new Owner();
    o.execution('s1', 'e1', 1).start();
    const a = o.submit('s1', 'a');
    o.command('s1', 'session.delete', {});
    expect(outcomes(o, a).at(-1)).toEqual({ outcome: 'removed', reason: 'session_deleted' });
    expect(o.session().execution?.stopping).toBe('session_deleted');
  });
});
