import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';

const int = (min: number, max: number) => z.number().int().min(min).max(max);

/** What `startWorker` accepts; the same rules as the WORKER settings of libs/config. */
export const WorkerOptions = z.object({
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
  concurrency: int(1, 10_000).default(4),
  executionLeaseMs: int(200, 600_000).default(3_000),
  /** Folder of the recordings a `recording` agent may name (default: the bundled ones). */
  recordingsDir: z.string().min(1).optional(),
  coalesceMs: int(0, 10_000).default(250),
  setupTimeoutMs: int(100, 600_000).default(30_000),
  /** Between SIGTERM and SIGKILL of an agent's process group when its execution ends. */
  killGraceMs: int(0, 60_000).default(2_000),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('warn'),
  /** Port of /healthz and /metrics; 0 picks a free one; null (the default in-process) serves none. */
  metricsPort: int(0, 65_535).nullable().default(null),
});
export type WorkerOptionsInput = z.input<typeof WorkerOptions>;
export type ResolvedOptions = z.output<typeof WorkerOptions> & { instanceId: string };

export class WorkerOptionsError extends Error {
  override readonly name = 'WorkerOptionsError';
}

export function resolveOptions(input: unknown): ResolvedOptions {
  const r = WorkerOptions.safeParse(input);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `  ${i.path.join('.') || '(options)'}: ${i.message}`);
    throw new WorkerOptionsError(`invalid worker options:\n${lines.join('\n')}`);
  }
  const host = hostname()
    .replace(/[^A-Za-z0-9_.-]/g, '-')
    .slice(0, 40);
  // Unique per process start: writer instances and logs name it.
  const instanceId =
    r.data.instanceId ?? `worker-${host}-${process.pid}-${randomBytes(3).toString('hex')}`;
  return { ...r.data, instanceId };
}
