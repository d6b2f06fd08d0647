// The one-process run's own redis-server: started when nothing answers, persistent across a
// stop and a start (append-only, fsync always), and a one-line install hint when it is missing.
import { freePort } from '@baton/redis-harness';
import { Redis } from 'ioredis';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisUnavailableError, redisAnswers, startEmbeddedRedis } from '../src/embedded-redis';

jest.setTimeout(60_000);

describe('the embedded redis-server', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'baton-embedded-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('starts when asked, keeps every write through a stop and a start', async () => {
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    expect(await redisAnswers(url, 300)).toBe(false);

    let server = await startEmbeddedRedis(dataDir, port);
    expect(server.url).toBe(url);
    expect(server.dataDir).toBe(join(dataDir, 'redis'));
    let client = new Redis(url);
    await client.set('kept', 'yes');
    client.disconnect();
    await server.stop();
    expect(await redisAnswers(url, 300)).toBe(false);

    server = await startEmbeddedRedis(dataDir, port);
    client = new Redis(url);
    expect(await client.get('kept')).toBe('yes');
    client.disconnect();
    await server.stop();
  });

  it('says in one line how to install redis-server when it is missing', async () => {
    const err = await startEmbeddedRedis(dataDir, await freePort(), 'redis-server-not-here').catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RedisUnavailableError);
    expect((err as Error).message).toBe(
      'redis-server is not installed: install it with `apt-get install redis-server` (Debian, Ubuntu) or `brew install redis` (macOS), or set REDIS_URL',
    );
  });
});
