import { PROJECTOR_SETTINGS } from '@baton/config';
import {
  expectEverySettingReachesItsOptions,
  expectUnsetEnvironmentGivesDefaults,
} from '@baton/testing';
import { projectorOptions, resolveOptions } from './options';

const REDIS = 'redis://127.0.0.1:1';

describe('projector options from the settings', () => {
  it('an unset environment gives the options their own defaults', () => {
    const fromCode = expectUnsetEnvironmentGivesDefaults(
      PROJECTOR_SETTINGS,
      projectorOptions,
      resolveOptions,
    );
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
