import { WORKER_SETTINGS } from '@baton/config';
import {
  expectEverySettingReachesItsOptions,
  expectUnsetEnvironmentGivesDefaults,
} from '@baton/testing';
import { resolveOptions, workerOptions } from '../src/options';

const REDIS = 'redis://127.0.0.1:1';

describe('worker options from the settings', () => {
  it('an unset environment gives the options their own defaults', () => {
    const fromCode = expectUnsetEnvironmentGivesDefaults(
      WORKER_SETTINGS,
      workerOptions,
      resolveOptions,
    );
    expect(fromCode.periods).toEqual({
      executionLease: 3_000,
      executionStart: 600_000,
      outputCoalesce: 250,
      agentSetup: 30_000,
      shutdown: 25_000,
      killGrace: 2_000,
    });
  });

  it('every setting of the worker reaches its options', () => {
    expectEverySettingReachesItsOptions(WORKER_SETTINGS, workerOptions, {
      WORKER_RECORDINGS_DIR: '/recordings',
      WORKER_WORKSPACE_ROOT: '/workspaces',
    });
  });

  it('takes a period as a number only, within its setting’s range', () => {
    expect(() => resolveOptions({ redisUrl: REDIS, periods: { executionLease: 199 } })).toThrow(
      /periods\.executionLease: /,
    );
    expect(() => resolveOptions({ redisUrl: REDIS, periods: { agentSetup: '500' } })).toThrow(
      /periods\.agentSetup: /,
    );
  });
});
