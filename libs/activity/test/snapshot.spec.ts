import type { Capabilities } from '@baton/protocol';
import { CLAUDE_CAPS, Owner } from '@baton/testing';
import { STATE_VERSION, initialTaskState, snapshotOf, stateFromSnapshot } from '../src';

describe('snapshots', () => {
  it('read back only a state of this version and this task', () => {
    const state = initialTaskState('t1');
    const stored = JSON.parse(JSON.stringify(snapshotOf(state))) as unknown;
    expect(stateFromSnapshot(stored, 't1')).toEqual(state);
    expect(stateFromSnapshot(stored, 't2')).toBeNull();
    expect(stateFromSnapshot({ stateVersion: STATE_VERSION - 1, state }, 't1')).toBeNull();
    // A snapshot written before versions existed: the bare state.
    expect(stateFromSnapshot(state, 't1')).toBeNull();
    expect(stateFromSnapshot(null, 't1')).toBeNull();
    expect(
      stateFromSnapshot({ stateVersion: STATE_VERSION, state: { taskId: 't1' } }, 't1'),
    ).toBeNull();
  });
});

describe('capabilities shared between sessions', () => {
  /** A session whose execution negotiated `caps` (a copy of its own, as parsed from Redis). */
  const negotiated = (o: Owner, sessionId: string, caps: Capabilities) => {
    const x = o.execution(sessionId, `e-${sessionId}`, 1);
    x.fact('execution.started', { startedAt: '2026-12-07T00:00:00Z', profile: 'claude' });
    x.fact('capabilities.negotiated', structuredClone(caps));
    return o.state.sessions[sessionId]!.execution!.capabilities!;
  };

  it('hold one frozen copy of equal payloads, from the stream and from a snapshot alike', () => {
    const o = new Owner();
    const a = negotiated(o, 's1', CLAUDE_CAPS);
    const b = negotiated(o, 's2', CLAUDE_CAPS);
    expect(a).toEqual(CLAUDE_CAPS);
    expect(b).toBe(a);
    expect(Object.isFrozen(a) && Object.isFrozen(a.agent) && Object.isFrozen(a.attestedKinds)).toBe(
      true,
    );
    // Another payload is its own.
    const c = negotiated(o, 's3', { ...CLAUDE_CAPS, agent: { name: 'other' } });
    expect(c).not.toBe(a);
    expect(c.agent).toEqual({ name: 'other' });
    // A large payload stays its session's own: the table holds small ones only.
    const large = { ...CLAUDE_CAPS, _meta: { note: 'x'.repeat(20_000) } };
    const d = negotiated(o, 's4', large);
    expect(negotiated(o, 's5', large)).not.toBe(d);
    expect(Object.isFrozen(d)).toBe(false);
    // A state read back from its snapshot (JSON) shares them as the fold does, and is equal.
    const stored = JSON.parse(JSON.stringify(snapshotOf(o.state))) as unknown;
    const restored = stateFromSnapshot(stored, o.state.taskId)!;
    expect(restored).toEqual(o.state);
    expect(restored.sessions['s1']!.execution!.capabilities).toBe(a);
    expect(restored.sessions['s3']!.execution!.capabilities).toBe(c);
  });
});
