import { decide, parkable, parkedView, sessionView } from '../src';
import { CLAUDE_CAPS, Owner } from '@baton/testing';

/** An idle session's execution is parked (its ACP session kept) to free a worker slot. */
function idle() {
  const o = new Owner();
  const x = o.execution('s1', 'e1', 1);
  x.fact('execution.started', {
    startedAt: '2026-11-30T00:00:00Z',
    profile: 'claude',
    workspace: 'repo',
  });
  x.fact('capabilities.negotiated', CLAUDE_CAPS);
  x.fact('agent.session', { acpSessionId: 'acp-1', loadable: true, loaded: false });
  return { o, x };
}

describe('parking', () => {
  it('parks only a session where nothing goes on', () => {
    const { o, x } = idle();
    expect(parkable(o.session())).toBe(true);
    const p = o.submit('s1', 'a');
    expect(parkable(o.session())).toBe(false);
    expect(decide(o.state, { type: 'park', sessionId: 's1', executionId: 'e1' })).toEqual([]);
    x.dispatch(p, 1);
    x.endTurn(1);
    expect(parkable(o.session())).toBe(true);
    x.shell('sh-1');
    expect(parkable(o.session())).toBe(false);
    x.finished('sh-1');
    x.fact('permission.requested', { requestId: 'r', options: [], policy: 'ask' });
    expect(parkable(o.session())).toBe(false);
  });

  it('a park stops the execution with reason parked; its end leaves the session parked with its ACP session', () => {
    const { o, x } = idle();
    expect(o.decideNow({ type: 'park', sessionId: 's1', executionId: 'e1' })).toEqual([
      { type: 'execution.parked', sessionId: 's1', data: { executionId: 'e1' } },
    ]);
    expect(o.session().execution?.stopping).toBe('parked');
    expect(parkedView(o.session())).toBeNull();
    // A prompt meanwhile waits for the next execution.
    o.submit('s1', 'late');
    expect(o.session().queue).toEqual(['p-late']);
    x.end('completed');
    expect(sessionView(o.session()).parked).toEqual({
      executionId: 'e1',
      acpSessionId: 'acp-1',
      loadable: true,
      profile: 'claude',
      workspace: 'repo',
    });
    expect(o.updates.filter((u) => u.type === 'session.parked').at(-1)?.data).toEqual({
      sessionId: 's1',
      parked: sessionView(o.session()).parked,
    });
    // A new execution (the resume) unparks it, and the queued prompt runs on it.
    const y = o.execution('s1', 'e2', 2);
    y.start(CLAUDE_CAPS);
    expect(sessionView(o.session()).parked).toBeNull();
    expect(o.session().turn?.promptId).toBe('p-late');
  });

  it('a stop for another reason is not a park', () => {
    const { o, x } = idle();
    o.command('s1', 'session.reset', {});
    x.end('cancelled');
    expect(parkedView(o.session())).toBeNull();
    expect(decide(o.state, { type: 'park', sessionId: 's1', executionId: 'e1' })).toEqual([]);
  });
});
