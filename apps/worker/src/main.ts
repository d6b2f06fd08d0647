/**
 * The worker process: `node dist/apps/worker/src/main.js`, configured by environment
 * variables (libs/config COMMON + WORKER). SIGTERM or SIGINT stops it cleanly: no new jobs, every
 * running execution ended (with its execution.ended fact, its agent's process group killed), then
 * exit 0.
 */
import { ConfigError, PROFILES, ProfilesError, loadConfig, loadProfiles } from '@baton/config';
import { WORKER_SETTINGS, startWorker, workerOptions } from '@baton/worker';

async function main(): Promise<void> {
  let config;
  let profiles;
  try {
    config = loadConfig({ ...WORKER_SETTINGS, ...PROFILES });
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
  const worker = await startWorker({ ...workerOptions(config), profiles: { ...profiles } });
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
