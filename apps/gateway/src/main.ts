// The gateway process: `node dist/apps/gateway/src/main.js`, configured by the
// environment (libs/config: COMMON and GATEWAY settings).
import { stopTracing } from './tracing';
import { COMMON, GATEWAY, PROFILES, loadConfig, loadProfiles, settingsOrExit } from '@baton/config';
import { gatewayLimits, startGateway } from '@baton/gateway';
import { runMain, stopOnSignals } from '@baton/health';

runMain('gateway', async () => {
  const { config, profiles } = settingsOrExit(() => ({
    config: loadConfig({ ...COMMON, ...GATEWAY, ...PROFILES }),
    // The gateway refuses unknown profile names before it queues anything.
    profiles: loadProfiles(),
  }));
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
  stopOnSignals('gateway', () => gateway.stop(), stopTracing, config.GATEWAY_SHUTDOWN_TIMEOUT_MS);
});
