import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';

const int = (min: number, max: number) => z.number().int().min(min).max(max);

/** What `startProjector` accepts; the same rules as the PROJECTOR settings of libs/config. */
export const ProjectorOptions = z
  .object({
    redisUrl: z
      .string()
      .refine(
        (v) => /^rediss?(\+cluster)?:\/\//.test(v),
        'must be a redis://, rediss:// or redis+cluster:// URL',
      ),
    prefix: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,50}$/, 'letters, digits, _ . - only')
      .default('baton'),
    shards: int(1, 16_384).default(64),
    instanceId: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,100}$/, 'letters, digits, _ . : - only')
      .optional(),
    leaseTtlMs: int(200, 600_000).default(2_000),
    renewMs: int(50, 300_000).default(500),
    snapshotEntries: int(1, 10_000_000).default(1_000),
    snapshotMs: int(100, 86_400_000).default(30_000),
    stallMs: int(100, 86_400_000).default(120_000),
    /** Port of /metrics; 0 picks a free one; null (the default in-process) serves none. */
    metricsPort: int(0, 65_535).nullable().default(null),
    logLevel: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('warn'),
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
  const host = hostname()
    .replace(/[^A-Za-z0-9_.-]/g, '-')
    .slice(0, 40);
  // Unique per process start: leases and writer envelopes name the instance.
  const instanceId =
    r.data.instanceId ?? `projector-${host}-${process.pid}-${randomBytes(3).toString('hex')}`;
  return { ...r.data, instanceId };
}
