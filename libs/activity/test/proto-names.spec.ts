import { sessionActivity, taskView } from '../src';
import { CLAUDE_CAPS, Owner } from '@baton/testing';

// Session, prompt, execution and tool ids come from clients and agents. A name that is a member of
// Object.prototype is an id like any other: a key of the state, never its prototype.
const NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'];

describe('ids named like Object.prototype members', () => {
  it.each(NAMES)('%s as a session, execution, prompt key and tool id runs a turn', (name) => {
    const o = new Owner();
    const x = o.execution(name, name, 1);
    x.start(CLAUDE_CAPS);
    const p = o.submit(name, name);
    x.dispatch(p, 1);
    x.shell(`shell:${name}`);
    x.output();
    expect(Object.hasOwn(o.state.sessions, name)).toBe(true);
    expect(Object.getPrototypeOf(o.state.sessions)).toBe(Object.prototype);
    expect(sessionActivity(o.session(name))).toMatchObject({ state: 'running' });
    x.endTurn(1);
    expect(sessionActivity(o.session(name)).foregroundActivity).toBe('background');
    x.finished(`shell:${name}`);
    expect(sessionActivity(o.session(name))).toMatchObject({ foregroundActivity: null });
    // Another session is untouched by it.
    const y = o.execution('plain', 'e2', 1);
    y.start();
    expect(
      taskView(o.state)
        .sessions.map((s) => s.sessionId)
        .sort(),
    ).toEqual([name, 'plain'].sort());
  });
});
