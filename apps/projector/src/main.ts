// The projector process: `node dist/apps/projector/src/main.js`, configured by the
// environment (libs/config: COMMON and PROJECTOR settings).
import { ConfigError, loadConfig } from '@baton/config';
import { PROJECTOR_SETTINGS, projectorOptions, startProjector } from '@baton/projector';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(PROJECTOR_SETTINGS);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const projector = await startProjector(projectorOptions(config));
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
