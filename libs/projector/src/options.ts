import { COMMON, defaultInstanceId } from '@baton/config';
import { z } from 'zod';

const int = (min: number, max: number) => z.number().int().min(min).max(max);

/** What `startProjector` accepts; the same rules as the PROJECTOR settings of libs/config. */
export const ProjectorOptions = z
  .object({
    redisUrl: COMMON.REDIS_URL.schema,
    prefix: COMMON.BATON_PREFIX.schema.default('baton'),
    shards: int(1, 16_384).default(64),
    instanceId: COMMON.BATON_INSTANCE_ID.schema,
    leaseTtlMs: int(200, 600_000).default(2_000),
    renewMs: int(50, 300_000).default(500),
    snapshotEntries: int(1, 10_000_000).default(1_000),
    snapshotMs: int(100, 86_400_000).default(30_000),
    retentionMs: int(0, 365 * 86_400_000).default(86_400_000),
    stallMs: int(100, 86_400_000).default(120_000),
    cancelGraceMs: int(100, 86_400_000).default(30_000),
    quietMs: int(100, 86_400_000).default(30_000),
    /** An `ask` permission request nobody answered after this long is denied. */
    permissionTimeoutMs: int(100, 7 * 86_400_000).default(600_000),
    /** An execution whose session has been idle this long is parked (0: never). */
    parkIdleMs: int(0, 30 * 86_400_000).default(1_800_000),
    executionStartMs: int(1_000, 7 * 86_400_000).default(600_000),
    /** A task at rest and quiet this long leaves memory (its snapshot stays); 0: never. */
    evictIdleMs: int(0, 30 * 86_400_000).default(600_000),
    /**
     * How often a shard loads the tasks of its live set it does not hold, and counts the feed's
     * notes against those it read (their notes went unread): with the time to read up to that
     * count, the bound on a task's wait when the feed lost its note.
     */
    reconcileMs: int(100, 3_600_000).default(30_000),
    /** Port of /metrics; 0 picks a free one; null (the default in-process) serves none. */
    metricsPort: int(0, 65_535).nullable().default(null),
    logLevel: COMMON.LOG_LEVEL.schema.default('warn'),
    /** Task steps (read, fold, decide, write) running at once across all shards. */
    concurrency: int(1, 1_000).default(32),
  })
  .refine((o) => o.renewMs * 2 <= o.leaseTtlMs, {
    message: 'renewMs must be at most half of leaseTtlMs, or leases lapse between renewals',
    path: ['renewMs'],
  });
export type ProjectorOptionsInput = z.input<typeof ProjectorOptions>;
export type ResolvedOptions = z.output<typeof ProjectorOptions> & { instanceId: string };

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
