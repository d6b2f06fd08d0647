// Redis is not an open door. Attacks from someone who reaches the compose file's Redis on the
// network: without credentials, with a wrong password, and with one role's credentials reaching
// for more than that role needs. Then the same credentials over a Cluster and over TLS, where
// Baton must keep working. (The one-process run's own server is tried as another local user in
// libs/redis-server/test/embedded.spec.ts; a job injected with valid credentials in profiles.spec.ts.)
import {
  freePort,
  redisAnswers,
  startRedis,
  startRedisCluster,
  type RedisServer,
} from '@baton/redis-server';
import { EventStore, redisTargetFromUrl, type RedisClient } from '@baton/store';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';
import {
  COMPOSE_SECRETS,
  ROLES,
  composeRedisArgs,
  composeRedisUrl,
  composeServices,
  type Role,
} from '../compose-file';
import { everyShardOwned, spawnGateway, spawnProjector, tokenFor, waitFor } from '@baton/testing';

jest.setTimeout(120_000);

const PASSWORD = (role: Role) => COMPOSE_SECRETS[`BATON_REDIS_${role.toUpperCase()}_PASSWORD`]!;

/** A client that never retries: every refusal surfaces as the command's error. */
function client(options: RedisOptions): Redis {
  const c = new Redis({
    ...options,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
    enableReadyCheck: false,
  });
  c.on('error', () => undefined);
  return c;
}

const refusal = (p: Promise<unknown>) =>
  p.then(
    (v) => `accepted: ${JSON.stringify(v)}`,
    (e: Error) => e.message,
  );

describe("the compose file's Redis", () => {
  let redis: RedisServer;
  const opened: Redis[] = [];
  const as = async (role: Role | 'anonymous', password?: string) => {
    const c = client({
      host: '127.0.0.1',
      port: redis.port,
      // Without credentials, RESP2: ioredis's RESP3 handshake (HELLO) is itself refused.
      ...(role === 'anonymous'
        ? { protocol: 2 as const }
        : { username: role, password: password ?? PASSWORD(role) }),
    });
    opened.push(c);
    await c.connect().catch(() => undefined);
    return c;
  };

  beforeAll(async () => {
    redis = await startRedis({ args: composeRedisArgs() });
  });
  afterAll(async () => {
    for (const c of opened) c.disconnect();
    await redis?.stop();
  });

  it('lets a client without credentials do nothing, and the health user only PING', async () => {
    const anon = await as('anonymous');
    const attempts = (c: Redis) => [
      () => c.get('baton:x'),
      () => c.xadd('baton:{b:0}:task:t1', '*', 'e', '{}'),
      () => c.lpush('{baton:q}:executions:wait', 'job'),
      () => c.eval("return redis.call('get', KEYS[1])", 1, 'baton:x'),
      () => c.keys('*'),
      () => c.flushall(),
      () => c.config('GET', '*'),
      () => c.call('ACL', 'WHOAMI'),
    ];
    // `default` is off: nothing at all, not even PING.
    expect(await refusal(anon.ping())).toMatch(/^NOAUTH/);
    for (const attempt of attempts(anon)) expect(await refusal(attempt())).toMatch(/^NOAUTH/);
    // Nobody logs in as `default`, whatever the password (it keeps every right, for AOF replay).
    for (const password of ['', 'x', 'nopass']) {
      expect(await refusal(anon.call('AUTH', 'default', password))).toMatch(/^WRONGPASS/);
    }
    const health = await as('anonymous');
    expect(await health.call('AUTH', 'health', 'anything')).toBe('OK');
    expect(await health.ping()).toBe('PONG');
    for (const attempt of attempts(health)) expect(await refusal(attempt())).toMatch(/^NOPERM/);
  });

  it('passes its healthcheck as written, and fails it when Redis refuses the PING', () => {
    const [kind, script] = composeServices().redis!.healthcheck!.test;
    expect(kind).toBe('CMD-SHELL');
    const run = (port: number) =>
      spawnSync('sh', ['-c', script!.replace('redis-cli ', `redis-cli -p ${port} `)]).status;
    expect(run(redis.port)).toBe(0);
    // Without the health user's PING (an anonymous PING, a LOADING server) redis-cli still exits
    // 0; the check must not.
    const anonymousPing = script!.replace(/--user \S+ --pass \S+ /, '');
    expect(
      spawnSync('sh', ['-c', anonymousPing.replace('redis-cli ', `redis-cli -p ${redis.port} `)])
        .status,
    ).toBe(1);
  });

  it('refuses every role with a wrong password, and a user that does not exist', async () => {
    const anon = await as('anonymous');
    for (const [user, password] of [
      ...ROLES.map((r) => [r, 'not-the-password']),
      ['gateway', PASSWORD('worker')],
      ['admin', 'x'],
    ]) {
      expect(await refusal(anon.call('AUTH', user!, password!))).toMatch(/^WRONGPASS/);
      // Still anonymous after a failed AUTH.
      expect(await refusal(anon.get('baton:probe'))).toMatch(/^NOAUTH/);
    }
    const rightPassword = await as('gateway');
    expect(await rightPassword.call('ACL', 'WHOAMI')).toBe('gateway');
    expect(await rightPassword.ping()).toBe('PONG');
  });

  /** A key of each family (shard 0, task `acme/t`), as libs/store names them. */
  const K = {
    stream: 'baton:{b:0}:ts:acme/t',
    transcript: 'baton:{b:0}:tt:acme/t',
    snapshot: 'baton:{b:0}:tsnap:acme/t',
    lease: 'baton:{b:0}:lease',
    epoch: 'baton:{b:0}:epoch',
    updates: 'baton:{b:0}:updates',
    views: 'baton:{b:0}:views',
    dead: 'baton:{b:0}:dead',
    inbox: 'baton:{b:0}:xi:acme%2Ft:x1',
    projectors: 'baton:projectors',
  };

  it('gives each role keys under the prefix only, and the projector not the job queue', async () => {
    for (const role of ROLES) {
      const c = await as(role);
      expect(await c.xadd(K.stream, '*', 'probe', role)).toMatch(/^\d+-\d+$/);
      expect(await refusal(c.set('other:probe', role))).toMatch(/^NOPERM/);
      expect(await refusal(c.get('batonx:probe'))).toMatch(/^NOPERM/);
      // A script is held to the same patterns as the commands it runs.
      expect(
        await refusal(c.eval("return redis.call('set', KEYS[1], 'x')", 1, 'other:via-script')),
      ).toMatch(/NOPERM|No permissions/);
      expect(await c.eval("return redis.call('xlen', KEYS[1])", 1, K.stream)).toBeGreaterThan(0);
    }
    const projector = await as('projector');
    expect(await refusal(projector.lpush('{baton:q}:executions:wait', 'job'))).toMatch(/^NOPERM/);
    for (const role of ['gateway', 'worker'] as const) {
      const c = await as(role);
      expect(await c.hset(`{baton:q}:executions:probe-${role}`, 'by', role)).toBe(1);
    }
  });

  it("keeps each role to its families: a worker's or a gateway's credential takes over nothing", async () => {
    const projector = await as('projector');
    await projector.hset(K.lease, 'owner', 'projector-1', 'epoch', '7');
    await projector.xadd(K.updates, '*', 't', 'acme/t', 's', '1', 'u', '{}');
    await projector.xadd(K.dead, '*', 'reason', 'probe');
    const worker = await as('worker');
    for (const attempt of [
      () => worker.hset(K.lease, 'owner', 'worker-1'),
      () => worker.hgetall(K.lease),
      () => worker.incr(K.epoch),
      () => worker.zadd(K.projectors, Date.now() + 60_000, 'worker-1'),
      () => worker.xadd(K.updates, '*', 't', 'acme/t', 's', '2', 'u', '{}'),
      () => worker.hset(K.views, 'acme/t', '{}'),
      () => worker.hset(K.snapshot, 'state', '{}'),
      () => worker.sadd('baton:{t:acme}:tasks', 't'),
    ]) {
      expect(await refusal(attempt())).toMatch(/^NOPERM/);
    }
    // What a worker does: facts, its inbox, its transcript, its dead letters.
    expect(await worker.xadd(K.transcript, '*', 'e', '{}')).toMatch(/^\d+-\d+$/);
    expect(await worker.xrange(K.inbox, '-', '+')).toEqual([]);
    expect(await worker.xadd(K.dead, '*', 'reason', 'worker probe')).toMatch(/^\d+-\d+$/);

    const gateway = await as('gateway');
    for (const attempt of [
      () => gateway.hset(K.lease, 'owner', 'gateway-1'),
      () => gateway.incr(K.epoch),
      () => gateway.zadd(K.projectors, Date.now() + 60_000, 'gateway-1'),
      () => gateway.xadd(K.updates, '*', 't', 'acme/t', 's', '2', 'u', '{}'),
      () => gateway.hset(K.views, 'acme/t', '{}'),
      () => gateway.del(K.dead),
      () => gateway.xtrim(K.dead, 'MAXLEN', 0),
      () => gateway.xadd(K.inbox, '*', 'm', '{}'),
    ]) {
      expect(await refusal(attempt())).toMatch(/^NOPERM/);
    }
    // What a gateway reads: leases (readiness), updates, views; what it keeps: tenants.
    expect(await gateway.hget(K.lease, 'owner')).toBe('projector-1');
    expect((await gateway.xrange(K.updates, '-', '+')).length).toBeGreaterThan(0);
    expect(await gateway.sadd('baton:{t:acme}:tasks', 't')).toBe(1);
    // The lease is as the projector left it; the dead letters are all there.
    expect(await projector.hget(K.lease, 'owner')).toBe('projector-1');
    expect(await projector.xlen(K.dead)).toBe(2);
  });

  it('lets no role flush, reconfigure, list every key, manage users, debug, watch or stop the server', async () => {
    for (const role of ROLES) {
      const c = await as(role);
      for (const attempt of [
        () => c.flushall(),
        () => c.flushdb(),
        () => c.config('SET', 'appendonly', 'no'),
        () => c.config('GET', 'requirepass'),
        () => c.keys('*'),
        () => c.call('ACL', 'LIST'),
        () => c.call('ACL', 'SETUSER', role, '+@all', '~*'),
        () => c.call('DEBUG', 'SLEEP', '0'),
        () => c.call('MONITOR'),
        () => c.call('SHUTDOWN', 'NOSAVE'),
        () => c.call('REPLICAOF', '127.0.0.1', '1'),
        () => c.call('MODULE', 'LIST'),
        () => c.call('SORT', K.stream, 'BY', 'other:*'),
        () => c.publish('baton:channel', 'x'),
        () => c.call('FUNCTION', 'FLUSH'),
        () => c.call('FUNCTION', 'DELETE', 'x'),
        () => c.call('SCRIPT', 'FLUSH'),
        () => c.call('SCRIPT', 'KILL'),
        () => c.select(1),
      ]) {
        // DEBUG is refused before the ACL is asked (enable-debug-command no); both are a no.
        expect(await refusal(attempt())).toMatch(/^NOPERM|^ERR DEBUG command not allowed/);
      }
    }
    // The server is still up and nothing was flushed.
    expect(await (await as('gateway')).xlen(K.stream)).toBeGreaterThan(0);
  });

  it('refuses the whole stack when a role has no password set', () => {
    for (const role of ROLES) {
      expect(() =>
        composeRedisArgs({
          ...COMPOSE_SECRETS,
          [`BATON_REDIS_${role.toUpperCase()}_PASSWORD`]: '',
        }),
      ).toThrow(`set BATON_REDIS_${role.toUpperCase()}_PASSWORD`);
    }
  });
});

/** The compose file's users, set on a running server (a Cluster node, a TLS server). */
async function applyComposeUsers(c: RedisClient | Redis): Promise<void> {
  const args = composeRedisArgs();
  const users: string[][] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] !== '--user') continue;
    const rules: string[] = [];
    for (let j = i + 1; j < args.length && !args[j]!.startsWith('--'); j++) rules.push(args[j]!);
    users.push(rules);
  }
  // default last: until then this client is default and needs its rights.
  users.sort((a, b) => Number(a[0] === 'default') - Number(b[0] === 'default'));
  for (const [name, ...rules] of users) await c.call('ACL', 'SETUSER', name!, 'reset', ...rules);
}

describe('a Redis Cluster with the compose users', () => {
  it('keeps Baton working with credentials, and refuses a client without them', async () => {
    const cluster = await startRedisCluster(3);
    try {
      for (const s of cluster.servers) {
        const admin = client({ host: '127.0.0.1', port: s.port });
        await admin.connect();
        await applyComposeUsers(admin);
        admin.disconnect();
      }
      const seeds = cluster.servers.map((s) => `127.0.0.1:${s.port}`).join(',');
      const url = `redis+cluster://projector:${PASSWORD('projector')}@${seeds}`;
      const store = EventStore.connect(redisTargetFromUrl(url), { shards: 8, prefix: 'baton' });
      try {
        // Tasks on every master: appends and reads under the role's user.
        for (let i = 0; i < 24; i++) {
          await store.redis.set(`baton:{b:${i % 8}}:probe`, String(i));
          expect(await store.redis.get(`baton:{b:${i % 8}}:probe`)).toBe(String(i));
        }
      } finally {
        await store.close();
      }
      // Without credentials a node refuses everything.
      for (const s of cluster.servers) {
        const anon = client({ host: '127.0.0.1', port: s.port, protocol: 2 });
        await anon.connect();
        expect(await refusal(anon.ping())).toMatch(/^NOAUTH/);
        expect(await refusal(anon.call('CLUSTER', 'SLOTS'))).toMatch(/^NOAUTH/);
        expect(await refusal(anon.get('baton:{b:0}:probe'))).toMatch(/^NOAUTH/);
        anon.disconnect();
      }
    } finally {
      await cluster.stop();
    }
  });
});

describe('Redis over TLS with the compose users', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-tls-'));
  let server: ChildProcess | undefined;
  afterAll(() => {
    server?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs a gateway and a projector on rediss:// with their passwords', async () => {
    const f = (n: string) => join(dir, n);
    const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
    ssl(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=baton-test-ca',
      '-keyout',
      f('ca.key'),
      '-out',
      f('ca.crt'),
    );
    ssl(
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      '/CN=localhost',
      '-keyout',
      f('redis.key'),
      '-out',
      f('redis.csr'),
    );
    execFileSync('sh', ['-c', `printf 'subjectAltName=DNS:localhost,IP:127.0.0.1' > ${f('ext')}`]);
    ssl(
      'x509',
      '-req',
      '-in',
      f('redis.csr'),
      '-CA',
      f('ca.crt'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      f('ext'),
      '-out',
      f('redis.crt'),
    );

    const port = await freePort();
    server = spawn(
      'redis-server',
      [
        '--port',
        '0',
        '--tls-port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--tls-cert-file',
        f('redis.crt'),
        '--tls-key-file',
        f('redis.key'),
        '--tls-ca-cert-file',
        f('ca.crt'),
        '--tls-auth-clients',
        'no',
        '--dir',
        dir,
        '--save',
        '',
        ...composeRedisArgs(),
      ],
      { stdio: 'ignore' },
    );
    const tls = { ca: readFileSync(f('ca.crt')), servername: 'localhost' };
    await waitFor(
      () => redisAnswers({ host: '127.0.0.1', port, tls, username: 'health', password: 'health' }),
      'redis-server on TLS',
    );

    // Plain TCP to the TLS port gets nothing.
    const plain = client({
      host: '127.0.0.1',
      port,
      username: 'gateway',
      password: PASSWORD('gateway'),
      connectTimeout: 1_000,
    });
    expect(await refusal(plain.connect().then(() => plain.ping()))).not.toMatch(/^accepted/);
    plain.disconnect();

    const env = (role: Role) => ({
      REDIS_URL: composeRedisUrl(role, `redis://localhost:${port}`).replace(/^redis:/, 'rediss:'),
      BATON_PREFIX: 'baton',
      BATON_SHARDS: '2',
      NODE_EXTRA_CA_CERTS: f('ca.crt'),
    });
    const projector = await spawnProjector(env('projector'));
    const gateway = await spawnGateway({ ...env('gateway'), GATEWAY_ADMISSION_WAIT_MS: '5000' });
    try {
      await everyShardOwned(gateway, 60_000);
      const res = await fetch(`${gateway.url}/v1/tasks/t-tls/sessions/main/prompts`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tokenFor('acme')}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ text: 'over TLS', idempotencyKey: 'k-tls' }),
      });
      const body = (await res.json()) as { status: string; decision?: { outcome: string } };
      // Decided by the projector: the prompt went gateway → Redis → projector → Redis → gateway.
      expect(body).toMatchObject({ status: 'decided', decision: { outcome: 'queued' } });
    } finally {
      await gateway.stop();
      await projector.stop();
    }
  });
});
