import { sessionActivity, sessionView, taskView } from '../src';
import { mergeUsage } from '../src/evolve/usage';
import { CLAUDE_CAPS, Owner } from '@baton/testing';

function running() {
  const o = new Owner();
  const x = o.execution('s1', 'e1', 1);
  x.start(CLAUDE_CAPS);
  x.fact('agent.session', { acpSessionId: 'acp-1', loadable: true, loaded: false });
  return { o, x };
}

const usageUpdates = (o: Owner) =>
  o.updates.flatMap((u) =>
    u.type === 'session.activity' && u.data.usage !== undefined ? [u.data.usage] : [],
  );

describe('usage on the session view', () => {
  it('is absent until the agent reports any: views of silent agents stay as they were', () => {
    const { o } = running();
    expect(JSON.stringify(sessionView(o.session()))).not.toContain('usage');
    expect(sessionActivity(o.session()).usage).toBeUndefined();
    expect(usageUpdates(o)).toEqual([]);
  });

  it('each report replaces the fields it carries; the activity update carries the whole of it', () => {
    const { o, x } = running();
    x.fact('usage.reported', { used: 90_000, size: 200_000 });
    x.fact('usage.reported', { used: 95_000, cost: { amount: 0.5, currency: 'USD' } });
    x.fact('usage.reported', { tokens: { input: 400, output: 40, total: 440 } });
    const usage = {
      used: 95_000,
      size: 200_000,
      cost: { amount: 0.5, currency: 'USD' },
      tokens: { input: 400, output: 40, total: 440 },
    };
    expect(sessionView(o.session()).activity.usage).toEqual(usage);
    expect(usageUpdates(o)).toEqual([
      { used: 90_000, size: 200_000 },
      { used: 95_000, size: 200_000, cost: { amount: 0.5, currency: 'USD' } },
      usage,
    ]);
  });

  it('a report that changes nothing changes no state and publishes nothing', () => {
    const { o, x } = running();
    x.fact('usage.reported', {
      used: 1,
      size: 10,
      cost: { amount: 1, currency: 'USD' },
      tokens: { total: 5 },
    });
    const before = o.state;
    const published = o.updates.length;
    x.fact('usage.reported', { used: 1, cost: { amount: 1, currency: 'USD' } });
    x.fact('usage.reported', { size: 10, tokens: { total: 5 } });
    x.fact('usage.reported', {});
    expect(o.session()).toBe(before.sessions.s1);
    expect(o.updates.length).toBe(published);
  });

  it('a report of an execution that is not live is ignored', () => {
    const { o, x } = running();
    x.end('completed');
    x.fact('usage.reported', { used: 5 });
    const other = o.execution('s1', 'e-old', 1);
    other.fact('usage.reported', { used: 6 });
    expect(o.session().usage).toBeUndefined();
  });

  it('a fresh agent session clears it (null, told to clients); a loaded one keeps it', () => {
    const { o, x } = running();
    x.fact('usage.reported', { used: 7, size: 100 });
    x.end('completed');
    const loaded = o.execution('s1', 'e2', 2);
    loaded.start(CLAUDE_CAPS);
    loaded.fact('agent.session', { acpSessionId: 'acp-1', loadable: true, loaded: true });
    expect(sessionView(o.session()).activity.usage).toEqual({ used: 7, size: 100 });
    loaded.end('completed');
    const fresh = o.execution('s1', 'e3', 3);
    fresh.start(CLAUDE_CAPS);
    fresh.fact('agent.session', { acpSessionId: 'acp-2', loadable: true, loaded: false });
    expect(sessionView(o.session()).activity.usage).toBeNull();
    expect(usageUpdates(o).at(-1)).toBeNull();
  });

  it('a reset clears it; a session that never reported stays without it', () => {
    const { o, x } = running();
    o.command('s1', 'session.reset', {});
    expect(o.session().usage).toBeUndefined();
    x.fact('usage.reported', { used: 3 });
    o.command('s1', 'session.reset', {});
    expect(o.session().usage).toBeNull();
  });

  it('a deleted session shows none, and the task view holds what the session shows', () => {
    const { o, x } = running();
    x.fact('usage.reported', { used: 3 });
    expect(taskView(o.state).sessions[0]!.activity.usage).toEqual({ used: 3 });
    o.command('s1', 'session.delete', {});
    expect(sessionActivity(o.session()).usage).toBeUndefined();
  });
});

describe('mergeUsage', () => {
  it('keeps the known object when a report repeats it, and makes a new one when any field moves', () => {
    const known = { used: 1, cost: { amount: 1, currency: 'USD' }, tokens: { input: 2 } };
    expect(mergeUsage(known, { used: 1, tokens: { input: 2 } })).toBe(known);
    expect(mergeUsage(known, { cost: { amount: 1, currency: 'EUR' } })).toEqual({
      ...known,
      cost: { amount: 1, currency: 'EUR' },
    });
    expect(mergeUsage(known, { tokens: { input: 2, output: 1 } })).toEqual({
      ...known,
      tokens: { input: 2, output: 1 },
    });
    expect(mergeUsage(null, {})).toBeNull();
    expect(mergeUsage(undefined, { size: 4 })).toEqual({ size: 4 });
  });
});
