import { startRedis, type RedisServer } from '@baton/redis-server';
import {
  connectRedis,
  duplicateForBlocking,
  parseRedisUrl,
  redisTargetFromUrl,
  unixSocketUrl,
  type AvailabilityChange,
  type RedisClient,
} from './connection';
import { isUnavailableError } from './errors';

describe('REDIS_URL', () => {
  it('reads ACL user and percent-encoded password, host, port and db', () => {
    expect(parseRedisUrl('redis://alice:p%40ss%3Aword@redis.internal:6380/2')).toEqual({
      host: 'redis.internal',
      port: 6380,
      username: 'alice',
      password: 'p@ss:word',
      db: 2,
    });
    expect(parseRedisUrl('redis://:secret@localhost')).toEqual({
      host: 'localhost',
      port: 6379,
      password: 'secret',
    });
  });

  it('turns on TLS with SNI for rediss://', () => {
    expect(parseRedisUrl('rediss://u:p@cache.example.com:6380')).toMatchObject({
      host: 'cache.example.com',
      tls: { servername: 'cache.example.com' },
    });
  });

  it('reads a unix socket URL, spaces and all', () => {
    expect(parseRedisUrl('unix:///var/run/baton%20data/redis.sock')).toEqual({
      path: '/var/run/baton data/redis.sock',
    });
    expect(parseRedisUrl(unixSocketUrl('/tmp/a b/redis.sock'))).toEqual({
      path: '/tmp/a b/redis.sock',
    });
    expect(() => parseRedisUrl('unix://')).toThrow(/needs a socket path/);
  });

  it('explains what is wrong with a bad URL without echoing the password', () => {
    expect(() => parseRedisUrl('http://x')).toThrow(/redis:\/\/, rediss:\/\/ or unix:\/\//);
    expect(() => parseRedisUrl('redis://h/db')).toThrow(/database must be a number/);
    expect(() => parseRedisUrl('redis://u:hunter2@[bad')).toThrow(/\*\*\*@/);
    expect(() => parseRedisUrl('redis://u:hunter2@[bad')).not.toThrow(/hunter2/);
  });
});

describe('connectRedis with ACL credentials', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
    const admin = connectRedis({ url: server.url });
    await admin.call('ACL', 'SETUSER', 'alice', 'on', '>p@ss', '~*', '+@all');
    admin.disconnect();
  });
  afterAll(() => server.stop());

  it('authenticates as the URL user', async () => {
    const ok = connectRedis({ url: `redis://alice:p%40ss@127.0.0.1:${server.port}` });
    expect(await ok.call('ACL', 'WHOAMI')).toBe('alice');
    ok.disconnect();
  });

  it('fails with a wrong password', async () => {
    const bad = connectRedis(
      { url: `redis://alice:wrong@127.0.0.1:${server.port}` },
      { maxRetriesPerRequest: 0 },
    );
    bad.on('error', () => undefined);
    await expect(bad.ping()).rejects.toThrow(/WRONGPASS|invalid/i);
    bad.disconnect();
  });
});

describe('redisTargetFromUrl', () => {
  it('reads one server or a cluster from REDIS_URL', () => {
    expect(redisTargetFromUrl('redis://h:1/2')).toEqual({ url: 'redis://h:1/2' });
    expect(redisTargetFromUrl('redis+cluster://a:7000,b:7001')).toEqual({
      cluster: [
        { host: 'a', port: 7000 },
        { host: 'b', port: 7001 },
      ],
    });
    expect(redisTargetFromUrl('rediss+cluster://u:p%40ss@a:7000')).toEqual({
      cluster: [{ host: 'a', port: 7000 }],
      tls: true,
      username: 'u',
      password: 'p@ss',
    });
    expect(() => redisTargetFromUrl('redis+cluster://a:x')).toThrow(/bad cluster node: a:x/);
  });
});

describe('through an outage', () => {
  let server: RedisServer;
  // Disconnected even when a test fails: a client left reconnecting keeps jest from exiting.
  const clients: RedisClient[] = [];
  beforeAll(async () => {
    server = await startRedis();
  });
  afterEach(() => clients.splice(0).forEach((c) => c.disconnect()));
  afterAll(() => server.stop());

  it('reports one line when Redis goes away and one when it is back, not one per retry', async () => {
    const changes: AvailabilityChange[] = [];
    const client = connectRedis(
      { url: server.url },
      { maxReconnectDelayMs: 50, onAvailability: (c) => changes.push(c) },
    );
    clients.push(client);
    await client.ping();
    await server.kill();
    // Many reconnect attempts fail meanwhile (50 ms apart at most).
    await new Promise((r) => setTimeout(r, 1_000));
    await server.restart();
    await client.ping();
    expect(changes.map((c) => c.available)).toEqual([false, true]);
    expect(changes[0]).toMatchObject({ available: false, reason: expect.any(String) });
  });

  it('answers a command within its timeout while Redis is gone; blocking reads are not bound by it', async () => {
    const client = connectRedis({ url: server.url }, { commandTimeoutMs: 300 });
    await client.ping();
    const blocking = duplicateForBlocking(client);
    clients.push(client, blocking);
    // A blocking read longer than the command timeout ends by itself, with nothing read.
    expect(await blocking.xread('BLOCK', 600, 'STREAMS', 'nothing', '$')).toBeNull();
    await server.kill();
    const err = await client.get('k').then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe('Command timed out');
    expect(isUnavailableError(err)).toBe(true);
    await server.restart();
    // Back: the next command that arrives after the reconnect is answered.
    for (;;) {
      const ok = await client.ping().catch(() => null);
      if (ok === 'PONG') break;
    }
  });
});

describe('isUnavailableError', () => {
  it('tells the world failing from a bug', () => {
    for (const m of [
      'Connection is closed.',
      'Command aborted due to connection close',
      'Command timed out',
      "Socket timeout. Expecting data, but didn't receive any in 1000ms.",
      'Too many Cluster redirections. Last error: Error: Connection is closed.',
      "Cluster isn't ready and enableOfflineQueue options is false",
      'connect ECONNREFUSED 127.0.0.1:6379',
      'CLUSTERDOWN The cluster is down',
      'MOVED 3999 127.0.0.1:6381',
      'TRYAGAIN Multiple keys request during rehashing of slot',
      'LOADING Redis is loading the dataset in memory',
      "READONLY You can't write against a read only replica.",
    ]) {
      expect([m, isUnavailableError(new Error(m))]).toEqual([m, true]);
    }
    for (const m of [
      'WRONGTYPE Operation against a key holding the wrong kind of value',
      'ERR syntax error',
      'FENCED shard 3',
      "Cannot read properties of undefined (reading 'x')",
    ]) {
      expect([m, isUnavailableError(new Error(m))]).toEqual([m, false]);
    }
    expect(isUnavailableError(undefined)).toBe(false);
  });
});
