import { loadConfig } from '@baton/config';
import { PROJECTOR_SETTINGS, projectorOptions, resolveOptions } from './options';

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
    const base = projectorOptions(loadConfig(PROJECTOR_SETTINGS, {}));
    const other: Record<string, string> = {
      REDIS_URL: REDIS,
      BATON_PREFIX: 'other',
      BATON_INSTANCE_ID: 'other',
      LOG_LEVEL: 'trace',
    };
    for (const [name, s] of Object.entries(PROJECTOR_SETTINGS)) {
      const max = (s.value as { maxValue?: number | null }).maxValue;
      const value = other[name] ?? String(max);
      const changed = projectorOptions(loadConfig(PROJECTOR_SETTINGS, { [name]: value }));
      expect({ name, changed }).not.toEqual({ name, changed: base });
    }
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
