import { startRedis, type RedisServer } from '@baton/redis-harness';
import { connectRedis, parseRedisUrl, redisTargetFromUrl, unixSocketUrl } from './connection';

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
