import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';

/** The address the one-process run uses when REDIS_URL is not set. */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export class RedisUnavailableError extends Error {
  override name = 'RedisUnavailableError';
}

/** True when a Redis answers PING at `url` within `timeoutMs`. */
export async function redisAnswers(url: string, timeoutMs = 1_000): Promise<boolean> {
  const client = new Redis(url, {
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

export interface EmbeddedRedis {
  url: string;
  dataDir: string;
  /** Stops the server; its append-only file keeps everything for the next start. */
  stop(): Promise<void>;
}

/**
 * Starts a redis-server of our own on the default address, persisting every write to an
 * append-only file under `dataDir` (fsync on every write: a laptop run must survive Ctrl-C and a
 * restart with nothing lost). Throws {@link RedisUnavailableError} with a one-line install hint
 * when redis-server is not installed.
 */
export async function startEmbeddedRedis(
  dataDir: string,
  port = 6379,
  binary = 'redis-server',
): Promise<EmbeddedRedis> {
  const dir = resolve(dataDir, 'redis');
  if (spawnSync(binary, ['--version']).error) {
    throw new RedisUnavailableError(
      'redis-server is not installed: install it with `apt-get install redis-server` (Debian, Ubuntu) or `brew install redis` (macOS), or set REDIS_URL',
    );
  }
  mkdirSync(dir, { recursive: true });
  const child: ChildProcess = spawn(
    binary,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
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
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (await redisAnswers(url, 200)) break;
    const early = await Promise.race([
      exited,
      new Promise((r) => setTimeout(() => r('wait'), 100)),
    ]);
    if (early !== 'wait' || i > 100) {
      child.kill('SIGKILL');
      throw new RedisUnavailableError(
        `redis-server did not start: ${stderr.trim() || 'no answer'}`,
      );
    }
  }
  return {
    url,
    dataDir: dir,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
}
