import {
  PROJECTOR,
  PROJECTOR_SETTINGS,
  metricsPortOption,
  optionSchemas,
  optionValues,
  parseOptions,
  serviceOptions,
  type ProjectorConfig,
} from '@baton/config';
import { z } from 'zod';

type Settings = typeof PROJECTOR_SETTINGS;

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
  /** Raw entries older than this go where the history spans answer for them. */
  hotWindow: 'PROJECTOR_HOT_WINDOW_MS',
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
  /** A stop still waiting (on an unreachable Redis) after this long gives up; leases lapse. */
  shutdown: 'PROJECTOR_SHUTDOWN_TIMEOUT_MS',
} as const satisfies Record<string, keyof Settings>;

/** The bounds on what one task's prompts may hold waiting (libs/activity AdmissionLimits). */
const LIMIT_SETTING_OF = {
  sessionsPerTask: 'PROJECTOR_MAX_SESSIONS_PER_TASK',
  queuedBytesPerSession: 'PROJECTOR_MAX_QUEUED_BYTES_PER_SESSION',
  queuedBytesPerTask: 'PROJECTOR_MAX_QUEUED_BYTES_PER_TASK',
} as const satisfies Record<string, keyof Settings>;

/** The options that are settings, besides the periods and the limits. */
const SETTING_OF = {
  snapshotEntries: 'PROJECTOR_SNAPSHOT_ENTRIES',
} as const satisfies Record<string, keyof Settings>;

const OPTIONS = serviceOptions(PROJECTOR_SETTINGS, SETTING_OF, PERIOD_SETTING_OF);
const Periods = z.object(OPTIONS.periods);
const Limits = z.object(optionSchemas(PROJECTOR_SETTINGS, LIMIT_SETTING_OF));
export type Limits = z.output<typeof Limits>;
export type Periods = z.output<typeof Periods>;

/** What `startProjector` accepts; each option that is a setting has that setting's rules. */
export const ProjectorOptions = z
  .object({
    ...OPTIONS.schemas,
    periods: Periods.prefault({}),
    limits: Limits.prefault({}),
    /** Port of /metrics; 0 picks a free one; null (the default in-process) serves none. */
    metricsPort: metricsPortOption(PROJECTOR.PROJECTOR_METRICS_PORT),
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
    ...OPTIONS.values(config),
    limits: optionValues(config, LIMIT_SETTING_OF),
    metricsPort: config.PROJECTOR_METRICS_PORT as number | null,
  } satisfies ProjectorOptionsInput;
}

export class ProjectorOptionsError extends Error {
  override readonly name = 'ProjectorOptionsError';
}

export function resolveOptions(input: unknown): ResolvedOptions {
  return parseOptions(ProjectorOptions, input, 'projector', ProjectorOptionsError);
}
