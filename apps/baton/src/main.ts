/**
 * Baton in one process, for a laptop: `npm start` (add `-- --demo` for bundled replay sessions).
 * Gateway, projector and worker run together against REDIS_URL; when REDIS_URL is not set, a
 * redis-server of our own is started with its data in BATON_DATA_DIR, reachable only through a
 * unix socket there. Ctrl-C stops everything cleanly; the next start continues where this one left.
 */
import { stopTracing } from './tracing';
import {
  COMMON,
  ConfigError,
  GATEWAY,
  PROFILES,
  PROJECTOR,
  ProfilesError,
  RUN,
  WORKER,
  loadConfig,
  loadProfiles,
  optional,
} from '@baton/config';
import { resolve } from 'node:path';
import { writeFileSync } from 'node:fs';
import { startGateway } from '@baton/gateway';
import { gatewayLimits } from '@baton/gateway';
import { projectorOptions, startProjector } from '@baton/projector';
import { startWorker, workerOptions } from '@baton/worker';
import { startDemo } from './demo';
import { redact } from '@baton/store';
import {
  RedisUnavailableError,
  redisAnswers,
  startEmbeddedRedis,
  type EmbeddedRedis,
} from '@baton/redis-server';
import { localSecret, mintToken } from '@baton/auth';

const USAGE = `usage: npm start [-- --demo]
  --demo   start replay executions of bundled recordings on a few tasks`;

async function main(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const unknown = argv.filter((a) => a !== '--demo');
  if (unknown.length > 0) throw new UsageError(`unknown option ${unknown[0]}\n${USAGE}`);

  const config = loadConfig({
    ...COMMON,
    ...PROJECTOR,
    ...WORKER,
    ...PROFILES,
    ...GATEWAY,
    // Unset, the run makes a secret of its own (localSecret) and prints a token.
    BATON_JWT_SECRET: optional(GATEWAY.BATON_JWT_SECRET),
    ...RUN,
  });
  const profiles = loadProfiles();
  const demo = argv.includes('--demo') || config.BATON_DEMO;
  const dataDir = resolve(config.BATON_DATA_DIR);
  const say = (line: string) => process.stdout.write(`${line}\n`);

  // REDIS_URL set: that Redis, and nothing else. Not set: a redis-server of our own on a unix
  // socket only this user can reach (see startEmbeddedRedis).
  let redisUrl = config.REDIS_URL;
  let embedded: EmbeddedRedis | null = null;
  if (process.env.REDIS_URL) {
    if (!/\+cluster:/.test(redisUrl) && !(await redisAnswers(redisUrl))) {
      throw new RedisUnavailableError(`nothing answers at REDIS_URL=${redact(redisUrl)}`);
    }
    say(`using Redis at ${redact(redisUrl)}`);
  } else {
    embedded = await startEmbeddedRedis(dataDir);
    redisUrl = embedded.url;
    say(
      `${embedded.adopted ? 'using the redis-server left running' : 'started redis-server'} on ${embedded.socket} (data in ${embedded.dataDir}, only this user can connect)`,
    );
  }

  const common = {
    redisUrl,
    prefix: config.BATON_PREFIX,
    shards: config.BATON_SHARDS,
    // On a laptop the addresses above matter more than every lease taken: warnings only,
    // unless LOG_LEVEL asks for more.
    logLevel: process.env.LOG_LEVEL ? config.LOG_LEVEL : ('warn' as const),
  };
  // One process: each part is named by its role (not BATON_INSTANCE_ID) and serves no /metrics.
  const { instanceId: _projectorId, ...projectorSettings } = projectorOptions(config);
  const projector = await startProjector({ ...projectorSettings, ...common, metricsPort: null });
  const { instanceId: _workerId, ...workerSettings } = workerOptions(config);
  const worker = await startWorker({
    ...workerSettings,
    ...common,
    metricsPort: null,
    profiles: { ...profiles },
  });
  const jwtSecret = config.BATON_JWT_SECRET ?? localSecret(dataDir);
  const gateway = await startGateway({
    ...common,
    host: config.GATEWAY_HOST,
    port: config.GATEWAY_PORT,
    jwtSecret,
    ...(config.BATON_JWT_ISSUER ? { jwtIssuer: config.BATON_JWT_ISSUER } : {}),
    ...gatewayLimits(config),
    profiles,
  });
  const token = await mintToken(jwtSecret, {
    tenant: 'local',
    // Least privilege: views, prompts, and executions of the configured profiles; no admin.
    scopes: ['read', 'prompt', 'execute', 'delete'],
    ...(config.BATON_JWT_ISSUER ? { issuer: config.BATON_JWT_ISSUER } : {}),
  });
  // The CLI reads it from here by default.
  writeFileSync(resolve(dataDir, 'token'), `${token}\n`, { mode: 0o600 });

  const ws = gateway.url.replace(/^http/, 'ws');
  say(`Baton is running (projector ${projector.instanceId}, worker ${worker.instanceId})`);
  say(`  page       ${gateway.url}/?token=${token}`);
  say(`  WebSocket  ${ws}/ws?token=…   AHP channel ${ws}/ahp`);
  say(`  REST       ${gateway.url}/v1/tasks   OpenAPI ${gateway.url}/openapi.json`);
  say(`  token      tenant "local", scopes read prompt execute delete (saved in ${dataDir}/token)`);
  say(`  profiles   ${Object.keys(profiles).sort().join(', ')}`);
  say('Ctrl-C stops it; the next start continues where it left off.');

  let demoHandle: { stop(): Promise<void> } | null = null;
  if (demo)
    demoHandle = await startDemo({
      gatewayUrl: gateway.url,
      token,
      say,
    });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      say(`${signal} again: exiting without waiting`);
      process.exit(130);
    }
    stopping = true;
    say(`\n${signal}: stopping`);
    // Stopping is bounded: whatever hangs, the process ends and says so.
    setTimeout(() => {
      say(`stopping took longer than ${STOP_TIMEOUT_MS / 1000} s: exiting`);
      process.exit(1);
    }, STOP_TIMEOUT_MS).unref();
    await demoHandle?.stop().catch(() => undefined);
    await gateway.stop().catch((e: unknown) => say(`gateway: ${String(e)}`));
    await worker.stop().catch((e: unknown) => say(`worker: ${String(e)}`));
    await projector.stop().catch((e: unknown) => say(`projector: ${String(e)}`));
    await embedded?.stop();
    await stopTracing().catch(() => undefined);
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}

/** How long an orderly stop may take (executions ended, facts written, Redis shut down). */
const STOP_TIMEOUT_MS = 20_000;

class UsageError extends Error {}

main(process.argv.slice(2)).catch((err: unknown) => {
  const known =
    err instanceof ConfigError ||
    err instanceof ProfilesError ||
    err instanceof RedisUnavailableError ||
    err instanceof UsageError;
  process.stderr.write(
    `baton: ${known ? (err as Error).message : String((err as Error)?.stack ?? err)}\n`,
  );
  process.exit(known ? 2 : 1);
});
