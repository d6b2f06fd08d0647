import { TenantCountedMap, TenantLimits } from './tenant-limits';

describe('TenantLimits', () => {
  it('counts connections per tenant, each given back once', () => {
    const l = new TenantLimits(2, 10);
    const a1 = l.openConnection('a')!;
    const a2 = l.openConnection('a')!;
    expect(l.openConnection('a')).toBeNull();
    expect(l.openConnection('b')).not.toBeNull();
    a1();
    a1();
    expect(l.connectionsOf('a')).toBe(1);
    expect(l.openConnection('a')).not.toBeNull();
    a2();
    expect(l.connectionsOf('a')).toBe(1);
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
