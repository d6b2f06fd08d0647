/**
 * The worker process: `node dist/apps/worker/src/main.js`, configured by environment
 * variables (libs/config COMMON + WORKER). SIGTERM or SIGINT stops it cleanly: no new jobs, every
 * running execution ended (with its execution.ended fact, its agent's process group killed), then
 * exit 0.
 */
import {
  COMMON,
  ConfigError,
  PROFILES,
  ProfilesError,
  WORKER,
  loadConfig,
  loadProfiles,
} from '@baton/config';
import { startWorker } from '@baton/worker';

async function main(): Promise<void> {
  let config;
  let profiles;
  try {
    config = loadConfig({ ...COMMON, ...WORKER, ...PROFILES });
    profiles = loadProfiles();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    if (err instanceof ProfilesError) {
      process.stderr.write(`invalid configuration: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const worker = await startWorker({
    redisUrl: config.REDIS_URL,
    prefix: config.BATON_PREFIX,
    shards: config.BATON_SHARDS,
    ...(config.BATON_INSTANCE_ID !== undefined ? { instanceId: config.BATON_INSTANCE_ID } : {}),
    concurrency: config.WORKER_CONCURRENCY,
    executionLeaseMs: config.WORKER_EXECUTION_LEASE_MS,
    executionStartTimeoutMs: config.EXECUTION_START_TIMEOUT_MS,
    ...(config.WORKER_RECORDINGS_DIR !== undefined
      ? { recordingsDir: config.WORKER_RECORDINGS_DIR }
      : {}),
    profiles: { ...profiles },
    ...(config.WORKER_WORKSPACE_ROOT !== undefined
      ? { workspaceRoot: config.WORKER_WORKSPACE_ROOT }
      : {}),
    coalesceMs: config.WORKER_COALESCE_MS,
    factBuffer: config.WORKER_FACT_BUFFER,
    setupTimeoutMs: config.WORKER_SETUP_TIMEOUT_MS,
    metricsPort: config.WORKER_METRICS_PORT,
    logLevel: config.LOG_LEVEL,
  });
  const onSignal = (signal: NodeJS.Signals) => {
    process.stderr.write(`worker ${worker.instanceId}: ${signal}, stopping\n`);
    worker.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`worker ${worker.instanceId}: stop failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
}

main().catch((err: unknown) => {
  process.stderr.write(`worker failed to start: ${String(err)}\n`);
  process.exit(1);
});
