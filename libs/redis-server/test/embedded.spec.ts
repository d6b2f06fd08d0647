// The one-process run's own redis-server: only on a unix socket in a folder only this user may
// enter, persistent across a stop and a start (append-only, fsync always), a leftover server
// adopted, and a one-line install hint when it is missing.
import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  RedisUnavailableError,
  embeddedRedisUrl,
  redisAnswers,
  startEmbeddedRedis,
} from '../src/embedded';

jest.setTimeout(60_000);

const NOBODY = 65534;

describe('the embedded redis-server', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'baton-embedded-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('listens only on a socket this user alone can reach, and keeps every write through a stop and a start', async () => {
    const socket = join(dataDir, 'redis', 'redis.sock');
    expect(embeddedRedisUrl(dataDir)).toBeUndefined();

    let server = await startEmbeddedRedis(dataDir);
    expect(server).toMatchObject({
      url: `unix://${socket}`,
      socket,
      dataDir: join(dataDir, 'redis'),
      adopted: false,
    });
    expect(embeddedRedisUrl(dataDir)).toBe(server.url);
    expect(statSync(join(dataDir, 'redis')).mode & 0o777).toBe(0o700);
    expect(statSync(socket).mode & 0o777).toBe(0o700);
    let client = new Redis({ path: socket });
    // No TCP listener at all.
    expect(await client.config('GET', 'port')).toEqual(['port', '0']);
    await client.set('kept', 'yes');
    client.disconnect();

    // Another local user cannot even reach the socket.
    if (process.getuid?.() === 0) {
      const other = spawnSync('redis-cli', ['-s', socket, 'PING'], {
        uid: NOBODY,
        gid: NOBODY,
        encoding: 'utf8',
      });
      expect(`${other.stdout}${other.stderr}`).toMatch(/Permission denied/);
      expect(other.stdout).not.toContain('PONG');
    }

    await server.stop();
    expect(await redisAnswers(server.url, 300)).toBe(false);
    expect(embeddedRedisUrl(dataDir)).toBe(server.url);

    server = await startEmbeddedRedis(dataDir);
    client = new Redis({ path: socket });
    expect(await client.get('kept')).toBe('yes');
    client.disconnect();

    // A run killed with kill -9 leaves its server running: the next start uses it.
    const again = await startEmbeddedRedis(dataDir);
    expect(again.adopted).toBe(true);
    await again.stop();
    expect(await redisAnswers(server.url, 300)).toBe(false);
    await server.stop();
  });

  it('says in one line what is wrong when it cannot start', async () => {
    const err = await startEmbeddedRedis(
      mkdtempSync(join(tmpdir(), 'baton-none-')),
      'redis-server-not-here',
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedisUnavailableError);
    expect((err as Error).message).toBe(
      'redis-server is not installed: install it with `apt-get install redis-server` (Debian, Ubuntu) or `brew install redis` (macOS), or set REDIS_URL',
    );
    const deep = join(dataDir, 'x'.repeat(120));
    await expect(startEmbeddedRedis(deep)).rejects.toThrow(
      /is longer than 107 bytes: set a shorter BATON_DATA_DIR, or REDIS_URL/,
    );
  });
});
