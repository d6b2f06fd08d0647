import { AgentProfile, COMMON, builtinProfiles, defaultInstanceId } from '@baton/config';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';

const int = (min: number, max: number) => z.number().int().min(min).max(max);

/** What `startWorker` accepts; the same rules as the WORKER settings of libs/config. */
export const WorkerOptions = z.object({
  redisUrl: COMMON.REDIS_URL.schema,
  prefix: COMMON.BATON_PREFIX.schema.default('baton'),
  shards: int(1, 16_384).default(64),
  instanceId: COMMON.BATON_INSTANCE_ID.schema,
  concurrency: int(1, 10_000).default(4),
  executionLeaseMs: int(200, 600_000).default(3_000),
  /**
   * A job no worker took within this long of its enqueue is never started (EXECUTION_START_TIMEOUT_MS:
   * the task's owner declares its request expired after as long).
   */
  executionStartTimeoutMs: int(1_000, 7 * 86_400_000).default(600_000),
  /** Folder of the recordings a `recording` agent may name (default: the bundled ones). */
  recordingsDir: z.string().min(1).optional(),
  /** The agent profiles executions may start (default: the built-in set of libs/config). */
  profiles: z.record(z.string(), AgentProfile).optional(),
  /** Root of the agents' workspaces, a folder per tenant (default: baton-workspaces in tmpdir). */
  workspaceRoot: z.string().min(1).optional(),
  coalesceMs: int(0, 10_000).default(250),
  /** Facts an execution holds while Redis is unreachable; past it the agent is stopped. */
  factBuffer: int(10, 10_000_000).default(10_000),
  setupTimeoutMs: int(100, 600_000).default(30_000),
  /** Between SIGTERM and SIGKILL of an agent's process group when its execution ends. */
  killGraceMs: int(0, 60_000).default(2_000),
  logLevel: COMMON.LOG_LEVEL.schema.default('warn'),
  /** Port of /healthz and /metrics; 0 picks a free one; null (the default in-process) serves none. */
  metricsPort: int(0, 65_535).nullable().default(null),
});
export type WorkerOptionsInput = z.input<typeof WorkerOptions>;
export type ResolvedOptions = z.output<typeof WorkerOptions> & {
  instanceId: string;
  profiles: Record<string, AgentProfile>;
  workspaceRoot: string;
};

export class WorkerOptionsError extends Error {
  override readonly name = 'WorkerOptionsError';
}

export function resolveOptions(input: unknown): ResolvedOptions {
  const r = WorkerOptions.safeParse(input);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `  ${i.path.join('.') || '(options)'}: ${i.message}`);
    throw new WorkerOptionsError(`invalid worker options:\n${lines.join('\n')}`);
  }
  // Unique per process start: writer instances and logs name it.
  const instanceId = r.data.instanceId ?? defaultInstanceId('worker');
  return {
    ...r.data,
    instanceId,
    profiles: r.data.profiles ?? { ...builtinProfiles() },
    workspaceRoot: r.data.workspaceRoot ?? join(tmpdir(), 'baton-workspaces'),
  };
}
