import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseRedisUrl, unixSocketUrl } from '@baton/store';
import { Redis, type RedisOptions } from 'ioredis';
import { RedisLaunchError, launchRedis, type LaunchedRedis } from './launch';

export class RedisUnavailableError extends Error {
  override name = 'RedisUnavailableError';
}

/**
 * True when the Redis server at `target` (a URL, or connection options such as a TLS CA; not a
 * Cluster) answers PING within `timeoutMs`.
 */
export async function redisAnswers(
  target: string | RedisOptions,
  timeoutMs = 1_000,
): Promise<boolean> {
  const client = new Redis({
    ...(typeof target === 'string' ? parseRedisUrl(target) : target),
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** Where the one-process run's own redis-server keeps its data and its socket. */
export const embeddedRedisDir = (dataDir: string): string => resolve(dataDir, 'redis');
export const embeddedRedisSocket = (dataDir: string): string =>
  resolve(embeddedRedisDir(dataDir), 'redis.sock');

/**
 * The URL of the one-process run's own redis-server when the data folder has one (running or
 * not: a stopped one is an error to report, not a reason to try another Redis): what the CLI's
 * operator commands use when REDIS_URL is not set.
 */
export function embeddedRedisUrl(dataDir: string): string | undefined {
  return existsSync(embeddedRedisDir(dataDir))
    ? unixSocketUrl(embeddedRedisSocket(dataDir))
    : undefined;
}

export interface EmbeddedRedis {
  url: string;
  socket: string;
  dataDir: string;
  /** True when a server an earlier start left running was found on the socket and used. */
  adopted: boolean;
  /** Stops the server; its append-only file keeps everything for the next start. */
  stop(): Promise<void>;
}

// sun_path holds 108 bytes with its terminating NUL.
const MAX_SOCKET_PATH = 107;

/**
 * The one-process run's own redis-server. It listens on no TCP port at all, only on a unix
 * socket inside `<dataDir>/redis`, a folder only this user may enter (mode 0700, socket 0700):
 * on a shared machine no other local user can reach Baton's data or queue a job for its worker,
 * and there is no password to leak. Every write goes to an append-only file, fsynced on every
 * write: a laptop run survives Ctrl-C and a restart with nothing lost. A server an earlier start
 * left running (the run was killed) is used as it is. Throws {@link RedisUnavailableError} with a
 * one-line hint when redis-server is not installed or the socket path is too long.
 */
export async function startEmbeddedRedis(
  dataDir: string,
  binary = 'redis-server',
): Promise<EmbeddedRedis> {
  const dir = embeddedRedisDir(dataDir);
  const socket = embeddedRedisSocket(dataDir);
  const url = unixSocketUrl(socket);
  if (Buffer.byteLength(socket) > MAX_SOCKET_PATH) {
    throw new RedisUnavailableError(
      `the unix socket path ${socket} is longer than ${MAX_SOCKET_PATH} bytes: set a shorter BATON_DATA_DIR, or REDIS_URL`,
    );
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  if (await redisAnswers(url, 500)) {
    return {
      url,
      socket,
      dataDir: dir,
      adopted: true,
      stop: async () => {
        const client = new Redis({ path: socket, maxRetriesPerRequest: 0 });
        client.on('error', () => undefined);
        await client.shutdown().catch(() => undefined);
        client.disconnect();
      },
    };
  }
  if (spawnSync(binary, ['--version']).error) {
    throw new RedisUnavailableError(
      'redis-server is not installed: install it with `apt-get install redis-server` (Debian, Ubuntu) or `brew install redis` (macOS), or set REDIS_URL',
    );
  }
  let server: LaunchedRedis;
  try {
    server = await launchRedis({
      binary,
      args: [
        '--port',
        '0',
        '--unixsocket',
        socket,
        '--unixsocketperm',
        '700',
        '--dir',
        dir,
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--save',
        '',
        '--daemonize',
        'no',
      ],
      name: 'redis-server',
      answers: () => redisAnswers(url, 200),
      timeoutMs: 20_000,
      // Ctrl-C in a terminal signals the whole foreground group, and Redis must outlive the Baton
      // that is still writing to it while it stops (it stops Redis last).
      detached: true,
    });
  } catch (err) {
    if (!(err instanceof RedisLaunchError)) throw err;
    throw new RedisUnavailableError(
      `redis-server did not start: ${err.stderr.trim() || 'no answer'}`,
    );
  }
  return {
    url,
    socket,
    dataDir: dir,
    adopted: false,
    // SIGTERM: Redis finishes its append-only file before it exits.
    stop: () => server.stop('SIGTERM'),
  };
}
