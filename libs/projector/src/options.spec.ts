import { PROJECTOR_SETTINGS, loadConfig } from '@baton/config';
import { expectEverySettingReachesItsOptions } from '@baton/testing';
import { projectorOptions, resolveOptions } from './options';

const REDIS = 'redis://127.0.0.1:1';

describe('projector options from the settings', () => {
  it('an unset environment gives the options their own defaults', () => {
    const fromEnv = resolveOptions({
      ...projectorOptions(loadConfig(PROJECTOR_SETTINGS, { REDIS_URL: REDIS })),
      instanceId: 'p',
    });
    const fromCode = resolveOptions({ redisUrl: REDIS, instanceId: 'p' });
    // In a process of its own it serves /metrics and logs at LOG_LEVEL's default; in-process not.
    expect({ ...fromEnv, metricsPort: null, logLevel: 'warn' }).toEqual(fromCode);
    expect(fromCode.periods.shardLease).toBe(2_000);
    expect(fromCode.periods.executionStart).toBe(600_000);
  });

  it('every setting of the projector reaches its options', () => {
    expectEverySettingReachesItsOptions(PROJECTOR_SETTINGS, projectorOptions);
  });

  it('takes a period as a number only, within its setting’s range', () => {
    expect(() => resolveOptions({ redisUrl: REDIS, periods: { turnStall: 99 } })).toThrow(
      /periods\.turnStall: /,
    );
    expect(() => resolveOptions({ redisUrl: REDIS, periods: { turnStall: '500' } })).toThrow(
      /periods\.turnStall: /,
    );
    expect(resolveOptions({ redisUrl: REDIS, periods: { turnStall: 500 } }).periods).toMatchObject({
      turnStall: 500,
      cancelAnswer: 30_000,
    });
  });
});
