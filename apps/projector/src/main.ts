// The projector process: `node dist/apps/projector/src/main.js`, configured by the
// environment (libs/config: COMMON and PROJECTOR settings).
import { COMMON, ConfigError, PROJECTOR, loadConfig } from '@baton/config';
import { startProjector } from '@baton/projector';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig({ ...COMMON, ...PROJECTOR });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const projector = await startProjector({
    redisUrl: config.REDIS_URL,
    prefix: config.BATON_PREFIX,
    shards: config.BATON_SHARDS,
    ...(config.BATON_INSTANCE_ID ? { instanceId: config.BATON_INSTANCE_ID } : {}),
    leaseTtlMs: config.PROJECTOR_LEASE_TTL_MS,
    renewMs: config.PROJECTOR_RENEW_MS,
    snapshotEntries: config.PROJECTOR_SNAPSHOT_ENTRIES,
    snapshotMs: config.PROJECTOR_SNAPSHOT_MS,
    retentionMs: config.PROJECTOR_RETENTION_MS,
    stallMs: config.PROJECTOR_STALL_MS,
    cancelGraceMs: config.PROJECTOR_CANCEL_GRACE_MS,
    quietMs: config.PROJECTOR_QUIET_MS,
    permissionTimeoutMs: config.PROJECTOR_PERMISSION_TIMEOUT_MS,
    parkIdleMs: config.PROJECTOR_PARK_IDLE_MS,
    evictIdleMs: config.PROJECTOR_EVICT_IDLE_MS,
    reconcileMs: config.PROJECTOR_RECONCILE_MS,
    executionStartMs: config.EXECUTION_START_TIMEOUT_MS,
    metricsPort: config.PROJECTOR_METRICS_PORT,
    logLevel: config.LOG_LEVEL,
  });
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    // Release the leases first, so other instances take the shards now, not at lease expiry.
    projector.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`projector: stop after ${signal} failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(
    `projector: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
