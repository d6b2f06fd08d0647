import {
  COMMON,
  PROJECTOR,
  defaultInstanceId,
  optionSchemas,
  optionValues,
  type ConfigOf,
} from '@baton/config';
import { z } from 'zod';

/** The settings a projector process reads. */
export const PROJECTOR_SETTINGS = { ...COMMON, ...PROJECTOR };
type Settings = typeof PROJECTOR_SETTINGS;
export type ProjectorConfig = ConfigOf<Settings>;

/**
 * The options that are settings, by the setting each one is: the one place an option meets its
 * environment variable. Range, default and meaning are the setting's (libs/config).
 */
const SETTING_OF = {
  prefix: 'BATON_PREFIX',
  shards: 'BATON_SHARDS',
  snapshotEntries: 'PROJECTOR_SNAPSHOT_ENTRIES',
} as const satisfies Record<string, keyof Settings>;

/** Every period of the projector (ms), named by what it bounds, by the setting it is. */
const PERIOD_SETTING_OF = {
  /** A dead projector's shards are taken over after at most this long. */
  shardLease: 'PROJECTOR_LEASE_TTL_MS',
  /** Between two renewals of the shard leases (and balancing rounds). */
  leaseRenewal: 'PROJECTOR_RENEW_MS',
  /** A task's new entries wait at most this long for a snapshot. */
  snapshotDelay: 'PROJECTOR_SNAPSHOT_MS',
  /** Entries younger than this stay behind a snapshot (the history query reads them). */
  retention: 'PROJECTOR_RETENTION_MS',
  /** A running prompt with no agent event this long is stalled. */
  turnStall: 'PROJECTOR_STALL_MS',
  /** A cancel the agent has not answered this long ends the turn. */
  cancelAnswer: 'PROJECTOR_CANCEL_GRACE_MS',
  /** Output outside any turn shows generating until quiet this long. */
  outputQuiet: 'PROJECTOR_QUIET_MS',
  /** An `ask` permission request nobody answered this long is denied. */
  permissionAnswer: 'PROJECTOR_PERMISSION_TIMEOUT_MS',
  /** An execution whose session is idle this long is parked (0: never). */
  parkIdle: 'PROJECTOR_PARK_IDLE_MS',
  /** An execution no worker started this long is failed (no_worker). */
  executionStart: 'EXECUTION_START_TIMEOUT_MS',
  /** A task at rest and quiet this long leaves memory (its snapshot stays); 0: never. */
  evictIdle: 'PROJECTOR_EVICT_IDLE_MS',
  /**
   * How often a shard loads the tasks of its live set it does not hold, and counts the feed's
   * notes against those it read: the bound on a task's wait when the feed lost its note.
   */
  reconcile: 'PROJECTOR_RECONCILE_MS',
} as const satisfies Record<string, keyof Settings>;

const Periods = z.object(optionSchemas(PROJECTOR_SETTINGS, PERIOD_SETTING_OF));
export type Periods = z.output<typeof Periods>;

/** What `startProjector` accepts; each option that is a setting has that setting's rules. */
export const ProjectorOptions = z
  .object({
    redisUrl: COMMON.REDIS_URL.value,
    instanceId: COMMON.BATON_INSTANCE_ID.value,
    ...optionSchemas(PROJECTOR_SETTINGS, SETTING_OF),
    periods: Periods.prefault({}),
    /** Port of /metrics; 0 picks a free one; null (the default in-process) serves none. */
    metricsPort: PROJECTOR.PROJECTOR_METRICS_PORT.value.nullable().default(null),
    logLevel: COMMON.LOG_LEVEL.value.default('warn'),
    /** Task steps (read, fold, decide, write) running at once across all shards. */
    concurrency: z.number().int().min(1).max(1_000).default(32),
  })
  .refine((o) => o.periods.leaseRenewal * 2 <= o.periods.shardLease, {
    message: 'leaseRenewal must be at most half of shardLease, or leases lapse between renewals',
    path: ['periods', 'leaseRenewal'],
  });
export type ProjectorOptionsInput = z.input<typeof ProjectorOptions>;
export type ResolvedOptions = z.output<typeof ProjectorOptions> & { instanceId: string };

/** The options of a projector process from its loaded settings. */
export function projectorOptions(config: ProjectorConfig) {
  return {
    redisUrl: config.REDIS_URL,
    ...(config.BATON_INSTANCE_ID !== undefined ? { instanceId: config.BATON_INSTANCE_ID } : {}),
    ...optionValues(config, SETTING_OF),
    periods: optionValues(config, PERIOD_SETTING_OF),
    metricsPort: config.PROJECTOR_METRICS_PORT as number | null,
    logLevel: config.LOG_LEVEL,
  } satisfies ProjectorOptionsInput;
}

export class ProjectorOptionsError extends Error {
  override readonly name = 'ProjectorOptionsError';
}

export function resolveOptions(input: unknown): ResolvedOptions {
  const r = ProjectorOptions.safeParse(input);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `  ${i.path.join('.') || '(options)'}: ${i.message}`);
    throw new ProjectorOptionsError(`invalid projector options:\n${lines.join('\n')}`);
  }
  // Unique per process start: leases and writer envelopes name the instance.
  const instanceId = r.data.instanceId ?? defaultInstanceId('projector');
  return { ...r.data, instanceId };
}
