import {
  attention,
  decide,
  permissionsView,
  sessionActivity,
  sessionView,
  supportsSteering,
  taskView,
} from '../src';
import {
  CLAUDE_CAPS,
  Owner,
  PERMISSION_OPTIONS,
  startedSession,
  runningSession,
} from '@baton/testing';

/** A session whose agent asks permission: permission requests are the user's to answer. */
function asking(policy: 'ask' | 'allow-once' | 'deny' = 'ask') {
  const { o, x, p } = runningSession(CLAUDE_CAPS, 'a');
  x.fact('permission.requested', {
    requestId: 'r1',
    toolCallId: 'toolu_1',
    title: 'Bash: rm -rf build',
    toolKind: 'execute',
    options: PERMISSION_OPTIONS,
    policy,
  });
  return { o, x, p };
}

describe('permission requests', () => {
  it('an ask request makes the session wait for a person: attention, the open list, the task count', () => {
    const { o } = asking();
    const s = o.session();
    expect(attention(s)).toEqual({
      kind: 'needs_person',
      reason: 'permission_requested',
      message: 'the agent asks permission: Bash: rm -rf build',
      promptId: 'p-a',
      executionId: 'e1',
    });
    expect(permissionsView(s)).toEqual([
      {
        requestId: 'r1',
        toolCallId: 'toolu_1',
        title: 'Bash: rm -rf build',
        toolKind: 'execute',
        options: PERMISSION_OPTIONS,
        executionId: 'e1',
      },
    ]);
    expect(sessionView(s).activity.state).toBe('running');
    expect(taskView(o.state).activity.sessionsNeedingPerson).toBe(1);
    const published = o.updates.map((u) => u.type);
    expect(published).toContain('session.permissions');
    expect(o.updates.filter((u) => u.type === 'task.activity').at(-1)?.data).toMatchObject({
      sessionsNeedingPerson: 1,
    });
  });

  it('a policy the worker applies at once never waits for anyone', () => {
    const { o, x } = asking('allow-once');
    expect(attention(o.session())).toBeNull();
    x.fact('permission.resolved', {
      requestId: 'r1',
      outcome: 'selected',
      optionId: 'allow',
      by: 'policy',
    });
    expect(o.session().resolvedPermissions).toEqual([
      { requestId: 'r1', outcome: 'selected', optionId: 'allow', by: 'policy' },
    ]);
    expect(o.updates.some((u) => u.type === 'session.permissions')).toBe(false);
  });

  it('a person answers once; the worker resolves it; a second answer is refused with a clear reply', () => {
    const { o, x } = asking();
    const c1 = o.command('s1', 'permission.respond', {
      requestId: 'r1',
      optionId: 'allow',
      subject: 'alice',
    });
    const answered = o.entries.find((e) => e.type === 'permission.answered');
    expect(answered?.data).toEqual({
      commandId: c1,
      requestId: 'r1',
      outcome: 'selected',
      optionId: 'allow',
      by: 'person',
      subject: 'alice',
    });
    // No longer waiting for a person, though the worker has not handed it over yet.
    expect(attention(o.session())).toBeNull();
    expect(taskView(o.state).activity.sessionsNeedingPerson).toBe(0);
    expect(o.session().permissions[0]!.answer).toMatchObject({ by: 'person' });
    // The update that takes it off the open list says how it was settled (AHP's toolCallConfirmed).
    expect(o.updates.filter((u) => u.type === 'session.permissions').at(-1)?.data).toEqual({
      sessionId: 's1',
      requests: [],
      resolved: [{ requestId: 'r1', outcome: 'selected', optionId: 'allow', by: 'person' }],
    });
    const c2 = o.command('s1', 'permission.respond', { requestId: 'r1', optionId: 'reject' });
    expect(o.updates.at(-1)).toMatchObject({
      type: 'command.failed',
      data: { commandId: c2, reason: 'permission_answered' },
    });
    expect((o.updates.at(-1)!.data as { message: string }).message).toMatch(
      /already answered by a person, with option allow/,
    );
    x.fact('permission.resolved', {
      requestId: 'r1',
      outcome: 'selected',
      optionId: 'allow',
      by: 'person',
      subject: 'alice',
    });
    expect(o.session().permissions).toEqual([]);
    const c3 = o.command('s1', 'permission.respond', { requestId: 'r1', optionId: 'allow' });
    expect(o.updates.at(-1)).toMatchObject({
      type: 'command.failed',
      data: { commandId: c3, reason: 'permission_answered' },
    });
  });

  it('unknown requests and options are refused', () => {
    const { o } = asking();
    o.command('s1', 'permission.respond', { requestId: 'nope', optionId: 'allow' });
    expect(o.updates.at(-1)).toMatchObject({ data: { reason: 'unknown_permission' } });
    o.command('s1', 'permission.respond', { requestId: 'r1', optionId: 'maybe' });
    expect(o.updates.at(-1)).toMatchObject({ data: { reason: 'unknown_option' } });
    expect(attention(o.session())?.kind).toBe('needs_person');
  });

  it('the timeout denies with the first reject option the agent offered, else cancels', () => {
    const { o } = asking();
    expect(o.decideNow({ type: 'permission_timeout', sessionId: 's1', requestId: 'r1' })).toEqual([
      {
        type: 'permission.answered',
        sessionId: 's1',
        data: { requestId: 'r1', outcome: 'selected', optionId: 'reject', by: 'timeout' },
      },
    ]);
    // Once answered, the timer has nothing more to say.
    expect(
      decide(o.state, { type: 'permission_timeout', sessionId: 's1', requestId: 'r1' }),
    ).toEqual([]);
    const o2 = new Owner();
    const x2 = o2.execution('s1', 'e1', 1);
    x2.start(CLAUDE_CAPS);
    x2.fact('permission.requested', {
      requestId: 'r9',
      options: [{ optionId: 'go', name: 'Go', kind: 'allow_once' }],
      policy: 'ask',
    });
    expect(o2.decideNow({ type: 'permission_timeout', sessionId: 's1', requestId: 'r9' })).toEqual([
      {
        type: 'permission.answered',
        sessionId: 's1',
        data: { requestId: 'r9', outcome: 'cancelled', by: 'timeout' },
      },
    ]);
  });

  it('a turn cancel answers open requests as cancelled; the execution’s end forgets them', () => {
    const { o, x } = asking();
    o.command('s1', 'session.cancel', {});
    expect(o.session().permissions[0]!.answer).toEqual({
      outcome: 'cancelled',
      optionId: null,
      by: 'turn_cancelled',
      subject: null,
    });
    expect(attention(o.session())?.kind).not.toBe('needs_person');
    const again = asking();
    again.x.end('crashed');
    expect(again.o.session().permissions).toEqual([]);
    expect(again.o.session().resolvedPermissions).toEqual([
      { requestId: 'r1', outcome: 'cancelled', optionId: null, by: 'execution_ended' },
    ]);
    expect(again.o.updates.filter((u) => u.type === 'session.permissions').at(-1)?.data).toEqual({
      sessionId: 's1',
      requests: [],
      resolved: [{ requestId: 'r1', outcome: 'cancelled', by: 'execution_ended' }],
    });
    void x;
  });

  it('a reset stops the execution and settles its open requests; the watchdog does not call a wait for a person a stall', () => {
    const { o } = asking();
    expect(o.decideNow({ type: 'watchdog', sessionId: 's1', admissionGeneration: 1 })).toEqual([]);
    o.command('s1', 'session.reset', {});
    expect(o.session().permissions[0]!.answer?.by).toBe('execution_ended');
  });
});

describe('the headline while the agent waits for a person', () => {
  const lastActivity = (o: Owner) => {
    const u = o.updates.filter((x) => x.type === 'session.activity').at(-1);
    return u?.type === 'session.activity' ? u.data : undefined;
  };

  it('says "waits for you", not generating, until the answer — and generating again after it', () => {
    const { o, x } = asking();
    // Output just before the request: the agent was generating, then asked and fell silent.
    x.output();
    const waiting = sessionActivity(o.session());
    expect(waiting).toMatchObject({
      state: 'running',
      foregroundActivity: null,
      waitingForPerson: true,
    });
    expect(taskView(o.state).activity.foregroundActivity).toBeNull();
    // Clients were told so, and the task aggregate no longer claims generation.
    expect(lastActivity(o)).toMatchObject({ foregroundActivity: null, waitingForPerson: true });
    expect(o.updates.filter((u) => u.type === 'task.activity').at(-1)?.data).toMatchObject({
      foregroundActivity: null,
      sessionsNeedingPerson: 1,
    });
    o.command('s1', 'permission.respond', { requestId: 'r1', optionId: 'allow' });
    expect(sessionActivity(o.session())).toMatchObject({
      foregroundActivity: 'generating',
      waitingForPerson: false,
    });
    expect(lastActivity(o)).toMatchObject({
      foregroundActivity: 'generating',
      waitingForPerson: false,
    });
  });

  it('output while a request is open does not bring the spinner back', () => {
    const { o, x } = asking();
    x.output();
    x.fact('tool.started', { toolCallId: 'toolu_2', ownership: 'foreground' });
    expect(sessionActivity(o.session()).foregroundActivity).toBeNull();
    expect(sessionActivity(o.session()).waitingForPerson).toBe(true);
  });

  it('outside a turn, known background work still shows as background; a yielded turn keeps its handoff', () => {
    const { o, x } = startedSession(CLAUDE_CAPS);
    x.shell('sh-1', false);
    x.output();
    x.fact('permission.requested', { requestId: 'r', options: PERMISSION_OPTIONS, policy: 'ask' });
    expect(sessionActivity(o.session())).toMatchObject({
      state: 'idle',
      foregroundActivity: 'background',
      waitingForPerson: true,
    });

    const { o: h, x: y } = runningSession(CLAUDE_CAPS, 'a', { admission: 'handoff' });
    y.subagent('subagent:1', true, 'launch-1');
    y.idle('human', 1);
    y.fact('permission.requested', { requestId: 'r', options: PERMISSION_OPTIONS, policy: 'ask' });
    // The yield still admits a human successor, and the headline still says so.
    expect(sessionActivity(h.session())).toMatchObject({
      foregroundActivity: 'background',
      waitingForPerson: true,
    });
  });

  it('admission reads the turn, not the headline: steering is offered exactly as before', () => {
    const o = new Owner();
    o.command('s1', 'session.configure', { steering: true });
    const x = o.execution('s1', 'e1', 1);
    x.start({ ...CLAUDE_CAPS, promptQueueing: true });
    const p = o.submit('s1', 'a');
    x.dispatch(p, 1);
    expect(supportsSteering(o.session())).toBe(true);
    x.fact('permission.requested', { requestId: 'r', options: PERMISSION_OPTIONS, policy: 'ask' });
    expect(sessionActivity(o.session()).foregroundActivity).toBeNull();
    expect(supportsSteering(o.session())).toBe(true);
    o.submit('s1', 'b');
    expect(o.decisionsFor('p-b').at(-1)).toMatchObject({ outcome: 'admitted', mode: 'steer' });
  });
});
