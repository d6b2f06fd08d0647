/**
 * The worker process: `node dist/apps/worker/src/main.js`, configured by environment
 * variables (libs/config COMMON + WORKER). SIGTERM or SIGINT stops it cleanly: no new jobs, every
 * running execution ended (with its execution.ended fact, its agent's process group killed), then
 * exit 0.
 */
import { stopTracing } from './tracing';
import { PROFILES, loadConfig, loadProfiles, settingsOrExit } from '@baton/config';
import { runMain, stopOnSignals } from '@baton/health';
import { WORKER_SETTINGS, startWorker, workerOptions } from '@baton/worker';

runMain('worker', async () => {
  const { config, profiles } = settingsOrExit(() => ({
    config: loadConfig({ ...WORKER_SETTINGS, ...PROFILES }),
    profiles: loadProfiles(),
  }));
  const options = workerOptions(config);
  const worker = await startWorker({ ...options, profiles: { ...profiles } });
  // The stop bounds its own waits at the shutdown period; the margin lets it log why first.
  stopOnSignals(
    `worker ${worker.instanceId}`,
    () => worker.stop(),
    stopTracing,
    options.periods.shutdown + 1_000,
  );
});
