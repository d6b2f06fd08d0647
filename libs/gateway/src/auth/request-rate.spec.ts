import { TenantRequestRate } from './request-rate';

describe('TenantRequestRate', () => {
  it('lets a burst of twice the rate through, then one per 1/rate second, per tenant', () => {
    let t = 0;
    const rate = new TenantRequestRate(10, () => t);
    for (let i = 0; i < 20; i++) expect(rate.take('a')).toBe(0);
    expect(rate.take('a')).toBe(100);
    // Another tenant is not held back by the first.
    expect(rate.take('b')).toBe(0);
    t += 100;
    expect(rate.take('a')).toBe(0);
    expect(rate.take('a')).toBeGreaterThan(0);
    // Idle long enough, the whole burst again, never more.
    t += 60_000;
    for (let i = 0; i < 20; i++) expect(rate.take('a')).toBe(0);
    expect(rate.take('a')).toBeGreaterThan(0);
  });

  it('forgets tenants whose buckets are full again once many are kept', () => {
    let t = 0;
    const rate = new TenantRequestRate(1, () => t);
    for (let i = 0; i < 10_000; i++) rate.take(`t${i}`);
    t += 10_000;
    expect(rate.take('new')).toBe(0);
    expect((rate as unknown as { buckets: Map<string, unknown> }).buckets.size).toBe(1);
  });
});
