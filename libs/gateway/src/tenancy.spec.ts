import type { EventStore } from '@baton/store';
import { Tenancy } from './tenancy';

describe('Tenancy', () => {
  it('asks Redis again for a task nobody used for the idle period, not for one in use', async () => {
    let now = 0;
    const has = jest.fn(async () => true);
    const store = {
      tenants: { has, add: jest.fn(async () => undefined) },
    } as unknown as EventStore;
    const t = new Tenancy(store, 1_000, () => now);
    for (let i = 0; i < 50; i++) await t.existing('a', `t${i}`);
    expect(has).toHaveBeenCalledTimes(50);
    now = 600;
    await t.existing('a', 't1'); // in use
    now = 1_300;
    await t.write('a', 'fresh');
    expect(t.size).toBe(2);
    await t.existing('a', 't1');
    expect(has).toHaveBeenCalledTimes(50);
    await t.existing('a', 't2');
    expect(has).toHaveBeenCalledTimes(51);
  });
});
