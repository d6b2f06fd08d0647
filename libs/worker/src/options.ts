import {
  AgentProfile,
  WORKER,
  WORKER_SETTINGS,
  builtinProfiles,
  metricsPortOption,
  parseOptions,
  serviceOptions,
  type WorkerConfig,
} from '@baton/config';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';

type Settings = typeof WORKER_SETTINGS;

/** The options that are settings, by the setting each one is. */
const SETTING_OF = {
  concurrency: 'WORKER_CONCURRENCY',
  factBuffer: 'WORKER_FACT_BUFFER',
} as const satisfies Record<string, keyof Settings>;

/** The worker's periods (ms) that are settings, named by what they bound. */
const PERIOD_SETTING_OF = {
  /** Executions of a dead worker are declared lost after at most this long. */
  executionLease: 'WORKER_EXECUTION_LEASE_MS',
  /**
   * A job no worker took within this long of its enqueue is never started (the task's owner
   * declares its request expired after as long).
   */
  executionStart: 'EXECUTION_START_TIMEOUT_MS',
  /** Foreground output is reported at most once per this period per session. */
  outputCoalesce: 'WORKER_COALESCE_MS',
  /** An agent that has not finished its ACP session setup by then ends as failed. */
  agentSetup: 'WORKER_SETUP_TIMEOUT_MS',
  /** A stop still waiting (on an unreachable Redis) after this long gives up. */
  shutdown: 'WORKER_SHUTDOWN_TIMEOUT_MS',
} as const satisfies Record<string, keyof Settings>;

const OPTIONS = serviceOptions(WORKER_SETTINGS, SETTING_OF, PERIOD_SETTING_OF);
const Periods = z.object({
  ...OPTIONS.periods,
  /** Between SIGTERM and SIGKILL of an agent's process group when its execution ends. */
  killGrace: z.number().int().min(0).max(60_000).default(2_000),
});
export type Periods = z.output<typeof Periods>;

/** What `startWorker` accepts; each option that is a setting has that setting's rules. */
export const WorkerOptions = z.object({
  ...OPTIONS.schemas,
  periods: Periods.prefault({}),
  /** Folder of the recordings a `recording` agent may name (default: the bundled ones). */
  recordingsDir: WORKER.WORKER_RECORDINGS_DIR.value,
  /** The agent profiles executions may start (default: the built-in set of libs/config). */
  profiles: z.record(z.string(), AgentProfile).optional(),
  /** Root of the agents' workspaces, a folder per tenant (default: baton-workspaces in tmpdir). */
  workspaceRoot: WORKER.WORKER_WORKSPACE_ROOT.value,
  /** Port of /healthz and /metrics; 0 picks a free one; null (the default in-process) serves none. */
  metricsPort: metricsPortOption(WORKER.WORKER_METRICS_PORT),
});
export type WorkerOptionsInput = z.input<typeof WorkerOptions>;
export type ResolvedOptions = z.output<typeof WorkerOptions> & {
  instanceId: string;
  profiles: Record<string, AgentProfile>;
  workspaceRoot: string;
};

/** The options of a worker process from its loaded settings. */
export function workerOptions(config: WorkerConfig) {
  return {
    ...OPTIONS.values(config),
    ...(config.WORKER_RECORDINGS_DIR !== undefined
      ? { recordingsDir: config.WORKER_RECORDINGS_DIR }
      : {}),
    ...(config.WORKER_WORKSPACE_ROOT !== undefined
      ? { workspaceRoot: config.WORKER_WORKSPACE_ROOT }
      : {}),
    metricsPort: config.WORKER_METRICS_PORT as number | null,
  } satisfies WorkerOptionsInput;
}

export class WorkerOptionsError extends Error {
  override readonly name = 'WorkerOptionsError';
}

export function resolveOptions(input: unknown): ResolvedOptions {
  const options = parseOptions(WorkerOptions, input, 'worker', WorkerOptionsError);
  return {
    ...options,
    profiles: options.profiles ?? { ...builtinProfiles() },
    workspaceRoot: options.workspaceRoot ?? join(tmpdir(), 'baton-workspaces'),
  };
}
