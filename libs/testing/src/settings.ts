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
