// Checks of a process's options against the settings they come from (libs/config).
import { loadConfig, type Setting } from '@baton/config';

/** A value other than the default for each setting every process reads that is not a number. */
const COMMON_OTHERS: Record<string, string> = {
  REDIS_URL: 'redis://127.0.0.1:1',
  BATON_PREFIX: 'other',
  BATON_INSTANCE_ID: 'other',
  LOG_LEVEL: 'trace',
};

/**
 * Every setting of `settings` changes the options `toOptions` makes from the loaded settings:
 * each is set in turn to its range's maximum, or to its value in `others` (the process's own
 * settings that are not numbers).
 */
export function expectEverySettingReachesItsOptions<G extends Record<string, Setting>>(
  settings: G,
  toOptions: (config: ReturnType<typeof loadConfig<G>>) => unknown,
  others: Record<string, string> = {},
): void {
  const base = toOptions(loadConfig(settings, {}));
  for (const [name, s] of Object.entries(settings)) {
    const max = (s.value as { maxValue?: number | null }).maxValue;
    const value = others[name] ?? COMMON_OTHERS[name] ?? String(max);
    const changed = toOptions(loadConfig(settings, { [name]: value }));
    expect({ name, changed }).not.toEqual({ name, changed: base });
  }
}

/**
 * An unset environment (REDIS_URL only) gives the options `resolve` gives a URL alone from code,
 * but for what only a process of its own has: it serves /metrics and logs at LOG_LEVEL's
 * default; in-process not. Returns those defaults, for the spec's checks of its own values.
 */
export function expectUnsetEnvironmentGivesDefaults<G extends Record<string, Setting>, Out>(
  settings: G,
  toOptions: (config: ReturnType<typeof loadConfig<G>>) => object,
  resolve: (input: unknown) => Out,
): Out {
  const redisUrl = COMMON_OTHERS.REDIS_URL!;
  const fromEnv = resolve({
    ...toOptions(loadConfig(settings, { REDIS_URL: redisUrl })),
    instanceId: 'i',
  });
  const fromCode = resolve({ redisUrl, instanceId: 'i' });
  expect({ ...fromEnv, metricsPort: null, logLevel: 'warn' }).toEqual(fromCode);
  return fromCode;
}
