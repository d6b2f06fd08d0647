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
