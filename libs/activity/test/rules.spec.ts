import { ChatMirror } from '@baton/ahp';
import {
  admissionGate,
  dueTimers,
  parkable,
  sessionActivity,
  sessionView,
  taskView,
  type TimerBounds,
} from '../src';
import { CLAUDE_CAPS, GENERIC_CAPS, Owner, startedSession, runningSession } from '@baton/testing';

/** Bounds far off, but for the one a test brings due. */
const BOUNDS: TimerBounds = {
  stallMs: 1e9,
  cancelGraceMs: 1e9,
  permissionTimeoutMs: 1e9,
  parkIdleMs: 0,
  quietMs: 1e9,
  executionStartMs: 1e9,
};

const activity = (o: Owner, s = 's1') => sessionActivity(o.session(s));

/** A Claude session under the handoff policy, running prompt generation 1. */
function handoffSession() {
  const { o, x, p: p1 } = runningSession(CLAUDE_CAPS, 'k1', { admission: 'handoff' });
  x.output();
  return { o, x, p1 };
}

describe('foreground activity', () => {
  it('a claimed or dispatched prompt is generating', () => {
    const { o, x } = startedSession();
    const p = o.submit('s1', 'k1');
    expect(o.session().turn?.phase).toBe('claimed');
    expect(activity(o)).toMatchObject({ state: 'running', foregroundActivity: 'generating' });
    x.dispatch(p, 1);
    expect(o.session().turn?.phase).toBe('dispatched');
    expect(activity(o).foregroundActivity).toBe('generating');
  });

  it('foreground output without a prompt is generating until an idle boundary (and is no turn)', () => {
    const { o, x } = startedSession();
    x.output();
    expect(activity(o)).toMatchObject({ state: 'idle', foregroundActivity: 'generating' });
    x.idle('task-notification');
    expect(activity(o)).toMatchObject({ state: 'idle', foregroundActivity: null });
  });

  it('idle foreground with live recognized work is background; neither is null', () => {
    const { o, x } = runningSession(CLAUDE_CAPS);
    x.shell('shell:b1');
    x.endTurn(1);
    expect(activity(o)).toMatchObject({
      state: 'waiting_for_input',
      foregroundActivity: 'background',
    });
    x.finished('shell:b1');
    expect(activity(o).foregroundActivity).toBeNull();
  });

  it('a known top-level foreground tool is generating; unknown and child tools change nothing', () => {
    const { o, x } = startedSession(CLAUDE_CAPS);
    x.fact('tool.started', { toolCallId: 'u1' });
    expect(activity(o).foregroundActivity).toBeNull();
    x.fact('tool.started', { toolCallId: 'c1', parentToolCallId: 'bg', ownership: 'foreground' });
    expect(activity(o).foregroundActivity).toBeNull();
    x.fact('tool.started', { toolCallId: 'f1', ownership: 'foreground' });
    expect(activity(o).foregroundActivity).toBe('generating');
  });

  it('background work is independent of turns: turn end and cancel do not clear it', () => {
    const { o, x } = runningSession(CLAUDE_CAPS);
    x.subagent('subagent:a');
    o.command('s1', 'session.cancel', {});
    x.endTurn(1, 'cancelled');
    expect(sessionView(o.session()).backgroundWork.map((w) => w.id)).toEqual(['subagent:a']);
    expect(activity(o).activeSubagentCount).toBe(1);
  });
});

describe('tool ownership', () => {
  it('is decided by the first frame that carries it', () => {
    const { o, x } = startedSession(CLAUDE_CAPS);
    x.fact('tool.started', { toolCallId: 't', ownership: 'background' });
    x.fact('tool.updated', { toolCallId: 't', ownership: 'foreground', status: 'in_progress' });
    expect(o.session().tools['t']).toBe('background');
    expect(activity(o).foregroundActivity).toBeNull();
  });

  it('missing lineage on an update never promotes unknown work to foreground, nor demotes it', () => {
    const { o, x } = startedSession(CLAUDE_CAPS);
    x.fact('tool.started', { toolCallId: 'child', parentToolCallId: 'agent-1' });
    x.fact('tool.updated', { toolCallId: 'child', status: 'in_progress' });
    expect(activity(o).foregroundActivity).toBeNull();
    x.fact('tool.started', { toolCallId: 'fg', ownership: 'foreground' });
    x.idle('human');
    x.fact('tool.updated', { toolCallId: 'child', status: 'in_progress' });
    expect(activity(o).foregroundActivity).toBeNull();
  });

  it('is inherited only within the execution that established it', () => {
    const o = new Owner();
    const a = o.execution('s1', 'e1', 1);
    a.start(CLAUDE_CAPS);
    a.fact('tool.started', { toolCallId: 'toolu_1', ownership: 'foreground' });
    a.end('crashed');
    const b = o.execution('s1', 'e2', 2);
    b.start(CLAUDE_CAPS);
    // Provider ids are per execution: the predecessor's record is no evidence for the successor.
    b.fact('tool.updated', { toolCallId: 'toolu_1', status: 'in_progress' });
    expect(activity(o).foregroundActivity).toBeNull();
    expect(o.session().tools).toEqual({});
  });
});

describe('background work', () => {
  it('a launch tool card that completes is not the end of the work it launched', () => {
    const { o, x } = startedSession(CLAUDE_CAPS);
    x.fact('tool.started', { toolCallId: 'launch', ownership: 'background' });
    x.subagent('subagent:a', true, 'launch');
    x.fact('tool.updated', { toolCallId: 'launch', status: 'completed' });
    expect(activity(o)).toMatchObject({ foregroundActivity: 'background', activeSubagentCount: 1 });
  });

  it('identified completion retires exactly that registration, idempotently', () => {
    const { o, x } = startedSession(CLAUDE_CAPS);
    x.subagent('subagent:a', true, 'ta');
    x.subagent('subagent:b', true, 'tb');
    x.fact('background.ended', { toolCallId: 'ta', status: 'completed' });
    x.fact('background.ended', { toolCallId: 'ta', status: 'completed' });
    x.finished('subagent:a');
    expect(sessionView(o.session()).backgroundWork.map((w) => w.id)).toEqual(['subagent:b']);
  });

  it('completion without identity never guesses', () => {
    const { o, x } = startedSession(CLAUDE_CAPS);
    x.subagent('subagent:a');
    x.fact('background.ended', { kind: 'subagent', status: 'completed' });
    expect(activity(o).activeSubagentCount).toBe(1);
    expect(o.session().background).toHaveLength(1);
  });

  describe('"one of these finished" (a completion naming candidates, not its work)', () => {
    const plain = () => {
      const o = new Owner();
      o.command('s1', 'session.configure', { admission: 'handoff' });
      const x = o.execution('s1', 'e1', 1);
      x.start({ ...CLAUDE_CAPS, handoff: false, attestedKinds: [] });
      return { o, x };
    };
    const guess = (candidates: string[], mayBeNone?: boolean) =>
      ({ status: 'unknown', candidates, ...(mayBeNone ? { mayBeNone } : {}) }) as const;

    it('one candidate: retired for display and counts, still registered; an identified end removes it', () => {
      const { o, x } = plain();
      x.subagent('subagent:a', false, 'ta');
      x.fact('background.ended', guess(['subagent:a']));
      expect(sessionView(o.session()).backgroundWork).toEqual([]);
      expect(activity(o)).toMatchObject({ foregroundActivity: null, activeSubagentCount: 0 });
      expect(o.session().background).toHaveLength(1);
      expect(o.updates.filter((u) => u.type === 'chat/backgroundWorkRemoved')).toHaveLength(1);
      x.finished('subagent:a');
      expect(o.session().background).toEqual([]);
    });

    it('several candidates: each shown possibly finished until its identified end or the execution end', () => {
      const { o, x } = plain();
      x.shell('shell:1', false, 't1');
      x.shell('shell:2', false, 't2');
      x.shell('shell:3', false, 't3');
      const seen = o.updates.length;
      x.fact('background.ended', guess(['shell:1', 'shell:2']));
      const view = sessionView(o.session()).backgroundWork;
      expect(view.map((w) => [w.id, w.possiblyFinished])).toEqual([
        ['shell:1', true],
        ['shell:2', true],
        ['shell:3', undefined],
      ]);
      expect(
        o.updates
          .slice(seen)
          .filter((u) => u.type === 'chat/backgroundWorkSet')
          .map((u) => u.data.work),
      ).toEqual([
        expect.objectContaining({ id: 'shell:1', possiblyFinished: true }),
        expect.objectContaining({ id: 'shell:2', possiblyFinished: true }),
      ]);
      x.finished('shell:1');
      expect(sessionView(o.session()).backgroundWork.map((w) => w.id)).toEqual([
        'shell:2',
        'shell:3',
      ]);
      x.end();
      expect(o.session().background).toEqual([]);
    });

    it('a report that may be of none (a Monitor event) never retires its only candidate', () => {
      const { o, x } = plain();
      x.fact('background.started', {
        attested: false,
        toolCallId: 'tm',
        work: { kind: 'monitor', id: 'm', label: 'watch', startedAt: '2026-11-30T00:00:01Z' },
      });
      x.fact('background.ended', guess(['m'], true));
      expect(sessionView(o.session()).backgroundWork).toEqual([
        expect.objectContaining({ id: 'm', possiblyFinished: true }),
      ]);
      // Listed, possibly finished: nothing is known to run, so the headline does not claim it.
      expect(activity(o).foregroundActivity).toBeNull();
    });

    it('once every listed item is possibly finished the headline stops saying background, admission is as strict, and the idle bound parks the session, retiring them', () => {
      const { o, x } = plain();
      x.fact('agent.session', { acpSessionId: 'acp-1', loadable: true, loaded: false });
      x.shell('shell:1', false, 't1');
      x.shell('shell:2', false, 't2');
      x.shell('shell:3', false, 't3');
      x.fact('background.ended', guess(['shell:1', 'shell:2']));
      // One item is still known to run: background, and no park.
      expect(activity(o).foregroundActivity).toBe('background');
      expect(parkable(o.session())).toBe(false);
      const gates = (['human', 'agent'] as const).map((g) => admissionGate(o.session(), g));
      x.fact('background.ended', guess(['shell:3', 'shell:2', 'shell:1']));
      expect(sessionView(o.session()).backgroundWork.map((w) => w.possiblyFinished)).toEqual([
        true,
        true,
        true,
      ]);
      expect(activity(o).foregroundActivity).toBeNull();
      expect(
        o.updates.filter((u) => u.type === 'session.activity').at(-1)?.data.foregroundActivity,
      ).toBeNull();
      expect((['human', 'agent'] as const).map((g) => admissionGate(o.session(), g))).toEqual(
        gates,
      );
      expect(o.session().background).toHaveLength(3);
      // The park timer comes due after the idle bound (with no word from the agent) ...
      const due = dueTimers(
        o.state,
        { ...BOUNDS, parkIdleMs: 1_000 },
        {
          now: 5_000,
          loadedAt: 0,
          lastAgentAt: new Map([['s1', 0]]),
          waitingSince: new Map([['k/s1/e1', 0]]),
        },
      );
      expect(due.timers).toContainEqual({ type: 'park', sessionId: 's1', executionId: 'e1' });
      // ... and the park ends the execution, which retires them as any execution's end does.
      expect(o.decideNow({ type: 'park', sessionId: 's1', executionId: 'e1' })).toEqual([
        { type: 'execution.parked', sessionId: 's1', data: { executionId: 'e1' } },
      ]);
      x.end('completed');
      expect(o.session().background).toEqual([]);
      expect(sessionView(o.session()).backgroundWork).toEqual([]);
      expect(sessionView(o.session()).parked).toMatchObject({ executionId: 'e1' });
    });

    it('a lone candidate presumed ended does not hold parking either', () => {
      const { o, x } = plain();
      x.fact('agent.session', { acpSessionId: 'acp-1', loadable: true, loaded: false });
      x.subagent('subagent:a', false, 'ta');
      expect(parkable(o.session())).toBe(false);
      x.fact('background.ended', guess(['subagent:a']));
      expect(parkable(o.session())).toBe(true);
    });

    it('attested work is never a candidate, so the handoff yield (admission) does not move', () => {
      const { o, x, p1 } = handoffSession();
      x.subagent('subagent:a', true, 'ta');
      x.idle('human', 1);
      const before = activity(o);
      x.fact('background.ended', guess(['subagent:a']));
      expect(activity(o)).toEqual(before);
      expect(o.session().background[0]).toMatchObject({ presumedEnded: false });
      expect(p1).toBeDefined();
    });

    it('AHP clients get possiblyFinished as the x- extension', () => {
      const { o, x } = plain();
      x.shell('shell:1', false, 't1');
      x.shell('shell:2', false, 't2');
      x.fact('background.ended', guess(['shell:1', 'shell:2']));
      const mirror = new ChatMirror('t1', 's1', '2026-11-30T00:00:02Z');
      mirror.sync(sessionView(o.session()), '2026-11-30T00:00:02Z');
      expect(mirror.state().backgroundWork).toEqual([
        expect.objectContaining({ id: 'shell:1', 'x-possiblyFinished': true }),
        expect.objectContaining({ id: 'shell:2', 'x-possiblyFinished': true }),
      ]);
      expect(mirror.state().backgroundWork?.some((w) => 'possiblyFinished' in w)).toBe(false);
    });
  });

  it('completion without identity updates counts only where the adapter says the pairing is unambiguous', () => {
    const o = new Owner();
    const x = o.execution('s1', 'e1', 1);
    x.start({ ...CLAUDE_CAPS, unambiguousCompletionKinds: ['subagent'] });
    x.subagent('subagent:a');
    x.subagent('subagent:b');
    x.fact('background.ended', { kind: 'subagent', status: 'completed' });
    expect(activity(o).activeSubagentCount).toBe(2); // two candidates: ambiguous
    x.finished('subagent:b');
    x.fact('background.ended', { kind: 'subagent', status: 'completed' });
    expect(activity(o).activeSubagentCount).toBe(0);
    // Still registered: a later identified completion finds it; admission never relied on the guess.
    expect(o.session().background).toHaveLength(1);
    expect(
      o.updates.filter((u) => u.type === 'chat/backgroundWorkRemoved').map((u) => u.data),
    ).toEqual([
      { sessionId: 's1', id: 'subagent:b' },
      { sessionId: 's1', id: 'subagent:a' },
    ]);
  });

  it('unknown background kinds are kept, replaced and removed by id like known ones', () => {
    const { o, x } = startedSession(CLAUDE_CAPS);
    const w = {
      kind: 'monitor',
      id: 'monitor:m1',
      label: 'Watch logs',
      startedAt: '2026-11-30T00:00:00Z',
      pattern: 'ERROR',
    };
    x.fact('background.started', { attested: true, work: w });
    x.fact('background.started', { attested: true, work: { ...w, label: 'Watch logs (2)' } });
    expect(sessionView(o.session()).backgroundWork).toEqual([{ ...w, label: 'Watch logs (2)' }]);
    x.finished('monitor:m1');
    expect(sessionView(o.session()).backgroundWork).toEqual([]);
  });

  it('ending an execution retires everything it owned', () => {
    const { o, x } = startedSession(CLAUDE_CAPS);
    x.subagent('subagent:a');
    x.shell('shell:1');
    x.fact('tool.started', { toolCallId: 'f', ownership: 'foreground' });
    x.end('crashed');
    expect(o.session().background).toEqual([]);
    expect(o.session().tools).toEqual({});
    expect(activity(o)).toMatchObject({
      state: 'failed',
      foregroundActivity: null,
      activeSubagentCount: 0,
    });
  });

  it("a successor execution's state is untouched by a predecessor's late entries", () => {
    const o = new Owner();
    const a = o.execution('s1', 'e1', 1);
    a.start(CLAUDE_CAPS);
    const b = o.execution('s1', 'e2', 2);
    b.start(CLAUDE_CAPS);
    b.subagent('subagent:b');
    a.output();
    a.subagent('subagent:late');
    a.end('crashed');
    a.fact('execution.started', { startedAt: '2026-11-30T00:00:00Z' });
    expect(o.session().execution).toMatchObject({ id: 'e2', phase: 'ready' });
    expect(sessionView(o.session()).backgroundWork.map((w) => w.id)).toEqual(['subagent:b']);
    expect(activity(o).foregroundActivity).toBe('background');
  });

  it('an execution declared lost retires its work', () => {
    const { o, x } = startedSession(CLAUDE_CAPS);
    x.subagent('subagent:a');
    o.decideNow({ type: 'execution_lease_expired', sessionId: 's1', executionId: 'e1' });
    expect(o.entries.at(-1)?.type).toBe('execution.lost');
    expect(activity(o)).toMatchObject({
      state: 'failed',
      activeSubagentCount: 0,
      foregroundActivity: null,
    });
    expect(
      o.decideNow({ type: 'execution_lease_expired', sessionId: 's1', executionId: 'e1' }),
    ).toEqual([]);
  });
});

describe('admission', () => {
  it('admission is check-and-claim: of two prompts on an idle session exactly one is admitted', () => {
    const o = new Owner();
    o.execution('s1', 'e1', 1).start();
    o.autoDecide = false;
    const a = o.submit('s1', 'a');
    const b = o.submit('s1', 'b');
    o.decideNow();
    expect(o.decisionsFor(a)).toEqual([
      { outcome: 'admitted', mode: 'turn', admissionGeneration: 1 },
    ]);
    expect(o.decisionsFor(b)).toEqual([{ outcome: 'queued', position: 1, reason: 'busy' }]);
  });

  it('the claim holds until the worker reports dispatch', () => {
    const { o, x } = startedSession(CLAUDE_CAPS);
    o.submit('s1', 'a');
    x.subagent('subagent:a'); // background work landing during preflight does not reopen the gate
    x.idle('human', 1);
    const b = o.submit('s1', 'b');
    expect(o.decisionsFor(b)[0]).toMatchObject({ outcome: 'queued' });
    expect(activity(o).foregroundActivity).toBe('generating');
  });

  it('a claim carries its prompt text until dispatch, so a new owner can deliver it again', () => {
    const { o, x } = startedSession();
    const a = o.submit('s1', 'a');
    expect(o.session().turn).toMatchObject({ promptId: a, phase: 'claimed', text: 'prompt a' });
    expect(o.session().prompts[a]).toMatchObject({ status: 'admitted', text: null });
    x.dispatch(a, 1);
    expect(o.session().turn).toMatchObject({ phase: 'dispatched', text: null });
    // A claim that never reached the agent goes back to the queue with its text.
    const b = o.submit('s1', 'b');
    x.endTurn(1);
    expect(o.session().turn).toMatchObject({ promptId: b, phase: 'claimed', text: 'prompt b' });
    x.end('crashed');
    expect(sessionView(o.session()).queue.entries).toEqual([
      { promptId: b, idempotencyKey: 'b', text: 'prompt b', origin: 'human' },
    ]);
    const y = o.execution('s1', 'e2', 2);
    y.start();
    expect(o.session().turn).toMatchObject({ promptId: b, phase: 'claimed', text: 'prompt b' });
  });

  it('a failed pre-dispatch reopens the gate when no foreground output came after the claim', () => {
    const { o, x } = startedSession();
    o.autoDecide = false;
    const a = o.submit('s1', 'a');
    o.decideNow();
    x.fact('prompt.dispatch_failed', {
      promptId: a,
      admissionGeneration: 1,
      error: 'model switch failed',
    });
    expect(o.session().turn).toBeNull();
    expect(o.session().queue).toEqual([a]);
    o.decideNow();
    expect(o.session().turn).toMatchObject({ promptId: a, generation: 2 });
  });

  it('a failed pre-dispatch with output after the claim shows it, and the prompt is claimed again (activity outside a turn never holds admission)', () => {
    const { o, x } = startedSession();
    const a = o.submit('s1', 'a');
    x.output();
    x.idle('task-notification');
    x.output();
    x.fact('prompt.dispatch_failed', { promptId: a, admissionGeneration: 1, error: 'x' });
    expect(o.session().turn).toMatchObject({ promptId: a, generation: 2, phase: 'claimed' });
    expect(activity(o).foregroundActivity).toBe('generating');
  });

  it('a prompt that fails dispatch three times is rejected with a reason', () => {
    const { o, x } = startedSession();
    const a = o.submit('s1', 'a');
    for (let g = 1; g <= 3; g++)
      x.fact('prompt.dispatch_failed', { promptId: a, admissionGeneration: g, error: 'x' });
    expect(o.decisionsFor(a).at(-1)).toMatchObject({
      outcome: 'rejected',
      reason: 'dispatch_failed',
    });
    expect(o.session().queue).toEqual([]);
  });

  it('the admission generation grows and a stale turn end changes nothing', () => {
    const { o, x } = runningSession(GENERIC_CAPS, 'a');
    x.endTurn(1);
    const b = o.submit('s1', 'b');
    x.dispatch(b, 2);
    x.endTurn(1); // delayed duplicate of the first turn's end
    expect(o.session().turn).toMatchObject({ promptId: b, generation: 2 });
  });

  it('coarse policy: a running session is busy even while only background work runs', () => {
    const { o, x } = runningSession(CLAUDE_CAPS, 'a');
    x.subagent('subagent:a');
    x.idle('human', 1);
    expect(activity(o)).toMatchObject({ state: 'running', foregroundActivity: 'generating' });
    const b = o.submit('s1', 'b');
    expect(o.decisionsFor(b)).toEqual([{ outcome: 'queued', position: 1, reason: 'busy' }]);
  });

  it('handoff: a human prompt takes an attested, generation-matched idle with live attested work', () => {
    const { o, x } = handoffSession();
    x.subagent('subagent:a');
    x.idle('human', 1);
    expect(activity(o).foregroundActivity).toBe('background');
    const b = o.submit('s1', 'b');
    expect(o.decisionsFor(b)).toEqual([
      { outcome: 'admitted', mode: 'handoff', admissionGeneration: 2 },
    ]);
    x.endTurn(1); // the predecessor's held RPC finally resolves: stale by generation
    expect(o.session().turn).toMatchObject({ promptId: b, generation: 2 });
  });

  it('handoff: synthetic wake-ups never consume it', () => {
    const { o, x } = handoffSession();
    x.subagent('subagent:a');
    x.idle('human', 1);
    const w = o.submit('s1', 'wake', 'wakeup');
    expect(o.decisionsFor(w)[0]).toMatchObject({ outcome: 'queued', reason: 'busy' });
    const h = o.submit('s1', 'human');
    expect(o.decisionsFor(h)[0]).toMatchObject({ outcome: 'queued', reason: 'queue_not_empty' });
  });

  it('handoff: an idle of another generation or origin does not yield', () => {
    const { o, x } = handoffSession();
    x.subagent('subagent:a');
    x.idle('human', 7);
    x.idle('task-notification', 1);
    expect(activity(o).foregroundActivity).toBe('generating');
  });

  it('handoff: foreground output after the yield closes it again', () => {
    const { o, x } = handoffSession();
    x.subagent('subagent:a');
    x.idle('human', 1);
    x.output();
    const b = o.submit('s1', 'b');
    expect(o.decisionsFor(b)[0]).toMatchObject({ outcome: 'queued' });
  });

  it('handoff: unattested work (or an execution that does not attest handoff) stays busy', () => {
    const { o, x } = handoffSession();
    x.subagent('subagent:a', false);
    x.idle('human', 1);
    expect(o.decisionsFor(o.submit('s1', 'b'))[0]).toMatchObject({ outcome: 'queued' });

    const g = new Owner();
    g.command('s1', 'session.configure', { admission: 'handoff' });
    const y = g.execution('s1', 'e1', 1);
    y.start({ ...CLAUDE_CAPS, handoff: false });
    y.dispatch(g.submit('s1', 'a'), 1);
    y.subagent('subagent:a');
    y.idle('human', 1);
    expect(sessionActivity(g.session()).foregroundActivity).toBe('generating');
  });

  it('a prompt for a session without a ready execution waits in the queue and runs when one is ready', () => {
    const o = new Owner();
    const a = o.submit('s1', 'a');
    expect(o.decisionsFor(a)).toEqual([{ outcome: 'queued', position: 1, reason: 'no_execution' }]);
    o.execution('s1', 'e1', 1).start();
    expect(o.decisionsFor(a).at(-1)).toMatchObject({ outcome: 'admitted' });
  });

  it('a claim that never reached the agent returns to the head of the queue when its execution ends', () => {
    const { o, x } = startedSession();
    const a = o.submit('s1', 'a');
    const b = o.submit('s1', 'b');
    x.end('crashed');
    expect(o.session().queue).toEqual([a, b]);
  });
});

describe('steering', () => {
  function steerSession(promptQueueing = true) {
    const o = new Owner();
    o.command('s1', 'session.configure', { steering: true });
    const x = o.execution('s1', 'e1', 1);
    x.start({ ...GENERIC_CAPS, promptQueueing });
    const a = o.submit('s1', 'a');
    x.dispatch(a, 1);
    return { o, x };
  }

  it('only where the agent advertised prompt queueing', () => {
    const yes = steerSession(true);
    expect(activity(yes.o).supportsSteering).toBe(true);
    expect(yes.o.decisionsFor(yes.o.submit('s1', 'b'))[0]).toMatchObject({
      outcome: 'admitted',
      mode: 'steer',
    });
    const no = steerSession(false);
    expect(activity(no.o).supportsSteering).toBe(false);
    expect(no.o.decisionsFor(no.o.submit('s1', 'b'))[0]).toMatchObject({ outcome: 'queued' });
  });

  it('never jumps the queue, and one steer at a time', () => {
    const { o } = steerSession();
    o.submit('s1', 'b'); // steer
    const c = o.submit('s1', 'c');
    expect(o.decisionsFor(c)[0]).toMatchObject({ outcome: 'queued' });
    const d = o.submit('s1', 'd');
    expect(o.decisionsFor(d)[0]).toMatchObject({ outcome: 'queued', reason: 'queue_not_empty' });
  });

  it('a dispatched steer carries on as the turn when the predecessor resolves early', () => {
    const { o, x } = steerSession();
    const b = o.submit('s1', 'b');
    x.dispatch(b, 2);
    x.endTurn(1);
    expect(o.session().turn).toMatchObject({ promptId: b, generation: 2 });
    x.endTurn(2);
    expect(o.session().turn).toBeNull();
  });
});

describe('the durable prompt queue', () => {
  function busy() {
    const { o, x, p: a } = runningSession(GENERIC_CAPS, 'a');
    return { o, x, a };
  }

  it('drains FIFO one at a time when the session can take a prompt', () => {
    const { o, x } = busy();
    const b = o.submit('s1', 'b');
    const c = o.submit('s1', 'c');
    x.endTurn(1);
    expect(o.session().turn?.promptId).toBe(b);
    expect(o.session().queue).toEqual([c]);
    x.dispatch(b, 2);
    x.endTurn(2);
    expect(o.session().turn?.promptId).toBe(c);
  });

  it('a repeated idempotency key never makes a second prompt', () => {
    const { o } = busy();
    o.submit('s1', 'b', 'human', 'p-b-1');
    o.submit('s1', 'b', 'human', 'p-b-2');
    expect(o.session().queue).toEqual(['p-b-1']);
    expect(o.decisionsFor('p-b-2')).toEqual([]);
    // The retry is answered with the first prompt's decision as it stands.
    expect(o.updates.at(-1)).toMatchObject({
      type: 'prompt.decided',
      data: {
        promptId: 'p-b-1',
        idempotencyKey: 'b',
        decision: { outcome: 'queued', position: 1 },
      },
    });
    expect(o.decisionsFor('p-b-1')).toHaveLength(2);
  });

  it('capacity: a full queue rejects with a clear reason; 0 is unlimited', () => {
    const { o } = busy();
    for (let i = 0; i < 10; i++) o.submit('s1', `q${i}`);
    const over = o.submit('s1', 'over');
    expect(o.decisionsFor(over)[0]).toMatchObject({
      outcome: 'rejected',
      reason: 'queue_full',
      message: expect.stringContaining('full'),
    });
    o.command('s1', 'session.configure', { queueCapacity: 0 });
    expect(o.decisionsFor(o.submit('s1', 'more'))[0]).toMatchObject({
      outcome: 'queued',
      position: 11,
    });
  });

  it('cancel an entry; cancelling one that is not queued is refused', () => {
    const { o, a } = busy();
    const b = o.submit('s1', 'b');
    o.command('s1', 'queue.cancel', { promptId: b });
    expect(o.session().queue).toEqual([]);
    expect(o.decisionsFor(b).at(-1)).toEqual({ outcome: 'removed', reason: 'cancelled' });
    const cid = o.command('s1', 'queue.cancel', { promptId: a });
    expect(o.updates.at(-1)).toMatchObject({
      type: 'command.failed',
      data: { commandId: cid, reason: 'not_queued' },
    });
    o.command('s1', 'queue.cancel', { promptId: 'nope' });
    expect(o.updates.at(-1)).toMatchObject({
      type: 'command.failed',
      data: { reason: 'unknown_prompt' },
    });
  });

  it('send-now replaces the active turn and runs next', () => {
    const { o, x } = busy();
    const b = o.submit('s1', 'b');
    const c = o.submit('s1', 'c');
    o.command('s1', 'queue.send_now', { promptId: c, observedGeneration: 1 });
    expect(o.session().queue).toEqual([c, b]);
    expect(o.entries.some((e) => e.type === 'turn.cancel_requested')).toBe(true);
    x.endTurn(1, 'cancelled');
    expect(o.session().turn?.promptId).toBe(c);
  });

  it('send-now never cancels a successor turn', () => {
    const { o, x, a } = busy();
    x.endTurn(1);
    const b = o.submit('s1', 'b');
    expect(o.session().turn?.promptId).toBe(b);
    x.dispatch(b, 2);
    const c = o.submit('s1', 'c');
    o.command('s1', 'queue.send_now', { promptId: c, observedGeneration: 1 });
    expect(o.entries.filter((e) => e.type === 'turn.cancel_requested')).toHaveLength(0);
    expect(o.session().queue).toEqual([c]);
    expect(a).toBeDefined();
  });

  it('auto-run off holds the queue; send-now still runs its entry; on drains', () => {
    const { o, x } = busy();
    o.command('s1', 'queue.set_auto_run', { enabled: false });
    const b = o.submit('s1', 'b');
    const c = o.submit('s1', 'c');
    x.endTurn(1);
    expect(o.session().turn).toBeNull();
    o.command('s1', 'queue.send_now', { promptId: c });
    expect(o.session().turn?.promptId).toBe(c);
    x.dispatch(c, 2);
    x.endTurn(2);
    expect(o.session().turn).toBeNull();
    o.command('s1', 'queue.set_auto_run', { enabled: true });
    expect(o.session().turn?.promptId).toBe(b);
  });

  it('a user cancel with pending entries turns auto-run off', () => {
    const { o, x } = busy();
    o.submit('s1', 'b');
    o.command('s1', 'session.cancel', { observedGeneration: 1 });
    x.endTurn(1, 'cancelled');
    expect(o.session().autoRun).toBe(false);
    expect(o.session().turn).toBeNull();
    expect(o.session().queue).toHaveLength(1);
  });

  it('cancel of a stale generation or of nothing is refused', () => {
    const { o, x } = busy();
    o.command('s1', 'session.cancel', { observedGeneration: 9 });
    expect(o.updates.at(-1)).toMatchObject({
      type: 'command.failed',
      data: { reason: 'stale_generation' },
    });
    x.endTurn(1);
    o.command('s1', 'session.cancel', {});
    expect(o.updates.at(-1)).toMatchObject({
      type: 'command.failed',
      data: { reason: 'nothing_running' },
    });
  });

  it('cancelling a claim before dispatch gives it back to the head of the queue', () => {
    const o = new Owner();
    o.execution('s1', 'e1', 1).start();
    const a = o.submit('s1', 'a');
    o.command('s1', 'session.cancel', {});
    expect(o.session().turn).toBeNull();
    expect(o.session().queue).toEqual([a]);
    expect(o.session().autoRun).toBe(false);
  });

  it('deleting a session removes its queued prompts with a reason and refuses later ones', () => {
    const { o } = busy();
    const b = o.submit('s1', 'b');
    o.command('s1', 'session.delete', {});
    expect(o.decisionsFor(b).at(-1)).toEqual({ outcome: 'removed', reason: 'session_deleted' });
    const c = o.submit('s1', 'c');
    expect(o.decisionsFor(c)[0]).toMatchObject({ outcome: 'rejected', reason: 'session_deleted' });
    expect(taskView(o.state).sessions).toEqual([]);
    o.command('s1', 'queue.set_auto_run', { enabled: true });
    expect(o.updates.at(-1)).toMatchObject({
      type: 'command.failed',
      data: { reason: 'session_deleted' },
    });
  });

  it('reset clears activity but keeps the queue', () => {
    const { o, x } = busy();
    x.subagent('subagent:a');
    const b = o.submit('s1', 'b');
    o.command('s1', 'session.reset', {});
    expect(o.session().background).toEqual([]);
    expect(o.session().queue).toEqual([b]);
  });
});

describe('stall watchdog', () => {
  it('a prompt with no agent event at all fails its turn; under the continue policy the session takes prompts again', () => {
    const { o, x } = startedSession(GENERIC_CAPS, { abandonedTurn: 'continue' });
    const a = o.submit('s1', 'a');
    x.dispatch(a, 1);
    const b = o.submit('s1', 'b');
    o.decideNow({ type: 'watchdog', sessionId: 's1', admissionGeneration: 1 });
    expect(o.entries.some((e) => e.type === 'turn.abandoned')).toBe(true);
    expect(o.session().turn?.promptId).toBe(b);
  });

  it('a silent running prompt gets one advisory per silence', () => {
    const { o, x, p: a } = runningSession(GENERIC_CAPS, 'a');
    x.output();
    o.decideNow({ type: 'watchdog', sessionId: 's1', admissionGeneration: 1 });
    o.decideNow({ type: 'watchdog', sessionId: 's1', admissionGeneration: 1 });
    expect(o.updates.filter((u) => u.type === 'turn.stalled')).toHaveLength(1);
    expect(o.session().turn?.promptId).toBe(a);
    // A watchdog for another generation is stale.
    expect(o.decideNow({ type: 'watchdog', sessionId: 's1', admissionGeneration: 5 })).toEqual([]);
  });
});

describe('publication', () => {
  it('numbers updates with a gapless per-task sequence and publishes count-only changes', () => {
    const { o, x } = startedSession(CLAUDE_CAPS);
    x.subagent('subagent:a');
    x.subagent('subagent:b');
    expect(o.updates.map((u) => u.seq)).toEqual(o.updates.map((_, i) => i + 1));
    const counts = o.updates
      .filter((u) => u.type === 'session.activity')
      .map((u) => u.type === 'session.activity' && u.data.activeSubagentCount);
    expect(counts.slice(-2)).toEqual([1, 2]);
    const before = o.updates.length;
    x.fact('tool.started', { toolCallId: 'c', parentToolCallId: 'x' }); // invisible
    expect(o.updates.length).toBe(before);
  });

  it('the task aggregate: most active wins, counts summed', () => {
    const o = new Owner();
    const a = o.execution('s1', 'e1', 1);
    a.start(CLAUDE_CAPS);
    a.subagent('subagent:a');
    const b = o.execution('s2', 'e2', 1);
    b.start(CLAUDE_CAPS);
    b.subagent('subagent:b');
    expect(taskView(o.state).activity).toEqual({
      foregroundActivity: 'background',
      activeSubagentCount: 2,
      sessionsNeedingPerson: 0,
    });
    b.output();
    expect(taskView(o.state).activity).toEqual({
      foregroundActivity: 'generating',
      activeSubagentCount: 2,
      sessionsNeedingPerson: 0,
    });
    expect(o.updates.filter((u) => u.type === 'task.activity').at(-1)?.data).toEqual({
      foregroundActivity: 'generating',
      activeSubagentCount: 2,
      sessionsNeedingPerson: 0,
    });
  });

  it('an entry of another task is refused', () => {
    const o = new Owner('t1');
    expect(() =>
      o.append({
        v: 1,
        taskId: 't2',
        sessionId: 's',
        writer: { role: 'gateway', instance: 'g', seq: 1 },
        type: 'session.reset',
        data: { commandId: 'c' },
      }),
    ).toThrow(/task t2/);
  });
});

describe('updates of one entry fail toward busy', () => {
  const typesSince = (o: Owner, from: number) => o.updates.slice(from).map((u) => u.type);

  it('finished work is removed before the session shows idle; new work follows the busier tier', () => {
    const { o, x } = runningSession(CLAUDE_CAPS);
    x.shell('shell:b1');
    x.endTurn(1);
    expect(activity(o).foregroundActivity).toBe('background');

    let from = o.updates.length;
    x.finished('shell:b1');
    let types = typesSince(o, from);
    expect(types).toEqual(['chat/backgroundWorkRemoved', 'session.activity', 'task.activity']);
    expect(activity(o).foregroundActivity).toBeNull();

    // Work starting while idle: the busier tier arrives before the work that explains it.
    from = o.updates.length;
    x.shell('shell:b2');
    types = typesSince(o, from);
    expect(types).toEqual(['task.activity', 'session.activity', 'chat/backgroundWorkSet']);
  });
});
