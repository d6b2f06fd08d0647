// The gateway process: `node dist/apps/gateway/src/main.js`, configured by the
// environment (libs/config: COMMON and GATEWAY settings).
import {
  COMMON,
  ConfigError,
  GATEWAY,
  PROFILES,
  ProfilesError,
  loadConfig,
  loadProfiles,
} from '@baton/config';
import { startGateway } from '@baton/gateway';
import { gatewayLimits } from '@baton/gateway';

async function main(): Promise<void> {
  let config;
  let profiles;
  try {
    config = loadConfig({ ...COMMON, ...GATEWAY, ...PROFILES });
    // The gateway refuses unknown profile names before it queues anything.
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
  const gateway = await startGateway({
    redisUrl: config.REDIS_URL,
    prefix: config.BATON_PREFIX,
    shards: config.BATON_SHARDS,
    host: config.GATEWAY_HOST,
    port: config.GATEWAY_PORT,
    jwtSecret: config.BATON_JWT_SECRET,
    ...(config.BATON_JWT_ISSUER ? { jwtIssuer: config.BATON_JWT_ISSUER } : {}),
    ...(config.BATON_INSTANCE_ID ? { instanceId: config.BATON_INSTANCE_ID } : {}),
    ...gatewayLimits(config),
    logLevel: config.LOG_LEVEL,
    profiles,
  });
  // Tests and scripts read the bound port from this line (GATEWAY_PORT=0 picks a free one).
  process.stdout.write(
    `${JSON.stringify({ msg: 'gateway ready', url: gateway.url, port: gateway.port })}\n`,
  );
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    gateway.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`gateway: stop after ${signal} failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(
    `gateway: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
