import { TenantCountedMap, TenantLimits } from './tenant-limits';

describe('TenantLimits', () => {
  it('counts connections per tenant', () => {
    const l = new TenantLimits(2, 10);
    expect(l.openConnection('a')).toBe(true);
    expect(l.openConnection('a')).toBe(true);
    expect(l.openConnection('a')).toBe(false);
    expect(l.openConnection('b')).toBe(true);
    l.closeConnection('a');
    expect(l.connectionsOf('a')).toBe(1);
    expect(l.openConnection('a')).toBe(true);
    l.closeConnection('a');
    l.closeConnection('a');
    expect(l.connectionsOf('a')).toBe(0);
    l.closeConnection('a');
    expect(l.connectionsOf('a')).toBe(0);
  });

  it('counts the subscriptions of every connection of a tenant, however they are removed', () => {
    const l = new TenantLimits(10, 3);
    const m1 = new TenantCountedMap<number>(l, 'a');
    const m2 = new TenantCountedMap<number>(l, 'a');
    m1.set('x', 1).set('y', 2).set('x', 3);
    m2.set('x', 1);
    expect(l.subscriptionsOf('a')).toBe(3);
    expect(l.maySubscribe('a')).toBe(false);
    expect(l.maySubscribe('b')).toBe(true);
    m1.delete('nope');
    m1.delete('y');
    expect(l.subscriptionsOf('a')).toBe(2);
    m2.clear();
    m1.clear();
    expect(l.subscriptionsOf('a')).toBe(0);
  });
});
