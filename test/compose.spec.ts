// docker-compose.yml, run without Docker: each service's command is started with its environment
// as local processes (Redis as a local redis-server, replicas as several processes, each replica
// with its own ports as its container would have), every healthcheck is run as written, and an
// end-to-end smoke goes through the gateway. So the compose file cannot rot unnoticed.
import { BatonClient } from '@baton/client';
import type { Update } from '@baton/protocol';
import { freePort, startRedis, type RedisServer } from '@baton/redis-server';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { mintToken } from '@baton/auth';
import {
  COMPOSE_SECRETS,
  ROLES,
  composeRedisArgs,
  composeRedisUrl,
  composeServices,
  interpolate,
} from './compose-file';
import { Proc, ROOT, runToEnd, waitFor } from '@baton/testing';

jest.setTimeout(300_000);

/**
 * The files of the image: the runtime stage's COPY lines of deploy/Dockerfile applied to this
 * checkout with .dockerignore — what it copies from the build stage is this checkout's dist/, the
 * same `npm run build` — and node_modules linked in (a superset of the image's production
 * dependencies). Services run from here, so a file the image lacks fails the test. (The worker
 * target is the runtime stage plus agents under /opt/agents and tini: no file of Baton's more.)
 */
function imageTree(): string {
  const dockerfile = readFileSync(join(ROOT, 'deploy', 'Dockerfile'), 'utf8');
  const start = dockerfile.indexOf('\nFROM ${NODE_IMAGE} AS runtime');
  expect(start).toBeGreaterThan(-1);
  const next = dockerfile.indexOf('\nFROM ', start + 1);
  const runtime = dockerfile.slice(start, next === -1 ? undefined : next);
  const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((glob) => {
      // `**/` is any run of folders, `*` anything within one name.
      const re = glob
        .split('**/')
        .map((part) => part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*'))
        .join('(?:.*/)?');
      return new RegExp(`^${re}(?:/.*)?$`);
    });
  const dir = mkdtempSync(join(tmpdir(), 'baton-image-'));
  for (const line of runtime.split('\n')) {
    const fromBuild = /^COPY --from=build \/app\/(\S+) (\S+)$/.exec(line.trim());
    if (fromBuild) {
      cpSync(join(ROOT, fromBuild[1]!), join(dir, fromBuild[2]!), { recursive: true });
      continue;
    }
    const m = /^COPY (?!--)(.+) (\S+)$/.exec(line.trim());
    if (!m) continue;
    const sources = m[1]!.split(/\s+/);
    const dest = m[2]!;
    for (const src of sources) {
      const target = dest.endsWith('/') ? join(dir, dest, src) : join(dir, dest);
      cpSync(join(ROOT, src), target, {
        recursive: true,
        filter: (from) => {
          const rel = relative(ROOT, from);
          return rel === '' || !ignored.some((re) => re.test(rel));
        },
      });
    }
  }
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

describe('docker-compose.yml', () => {
  const services = composeServices();
  let redis: RedisServer;
  let image: string;
  const procs: { service: string; proc: Proc; ports: Map<string, number> }[] = [];

  afterAll(async () => {
    for (const { proc } of procs) await proc.stop('SIGKILL');
    await redis?.stop();
    if (image) rmSync(image, { recursive: true, force: true });
  });

  it('declares Redis with AOF and a healthcheck, and every Baton role with healthchecks, restart and scale', () => {
    expect(services.redis?.command).toEqual(expect.arrayContaining(['--appendonly', 'yes']));
    // Run as written in test/security/redis.spec.ts (the health user's PING, nothing else).
    expect(services.redis?.healthcheck?.test[0]).toBe('CMD-SHELL');
    expect(services.redis?.image).toMatch(/^redis:\d+\.\d+\.\d+-alpine$/);
    for (const role of ROLES) {
      const s = services[role]!;
      expect(s.command).toEqual(['node', `dist/apps/${role}/src/main.js`]);
      expect(s.healthcheck?.test[0]).toBe('CMD');
      expect(s.restart).toBe('unless-stopped');
      expect(s.depends_on?.redis?.condition).toBe('service_healthy');
      // Each role is its own Redis user, its password from the environment.
      expect(s.environment?.REDIS_URL).toBe(
        `redis://${role}:\${BATON_REDIS_${role.toUpperCase()}_PASSWORD}@redis:6379`,
      );
      expect(() =>
        composeRedisArgs({
          ...COMPOSE_SECRETS,
          [`BATON_REDIS_${role.toUpperCase()}_PASSWORD`]: '',
        }),
      ).toThrow(new RegExp(`BATON_REDIS_${role.toUpperCase()}_PASSWORD`));
      expect(s.environment?.BATON_PREFIX).toBe('baton');
    }
    // Scaled roles publish no fixed host port (several replicas could not share it).
    expect(services.projector!.deploy?.replicas).toBe(2);
    expect(services.worker!.deploy?.replicas).toBe(2);
    expect(services.projector!.ports).toBeUndefined();
    expect(services.worker!.ports).toBeUndefined();
    expect(() => interpolate(services.gateway!.environment!.BATON_JWT_SECRET!, {})).toThrow(
      /BATON_JWT_SECRET/,
    );
  });

  it('runs as local processes: healthy, and a replay session goes generating → background → idle with prompts queueing and draining', async () => {
    // Redis as the compose file starts it: its users, their passwords and rights.
    redis = await startRedis({ aof: true, args: composeRedisArgs() });
    image = imageTree();
    const vars = { ...COMPOSE_SECRETS };
    for (const role of ['projector', 'worker', 'gateway'] as const) {
      const s = services[role]!;
      for (let replica = 1; replica <= (s.deploy?.replicas ?? 1); replica++) {
        const ports = new Map<string, number>();
        const env: Record<string, string> = {};
        for (const [k, raw] of Object.entries(s.environment ?? {})) {
          let v = interpolate(String(raw), vars);
          if (k === 'REDIS_URL') v = composeRedisUrl(role, redis.url);
          // Each container has its own network namespace; local replicas need their own ports.
          if (k.endsWith('_PORT')) {
            const local = await freePort();
            ports.set(v, local);
            v = String(local);
          }
          env[k] = v;
        }
        env.GATEWAY_HOST = '127.0.0.1';
        const [cmd, ...args] = s.command!;
        const proc = new Proc(
          `${role}-${replica}`,
          cmd === 'node' ? process.execPath : cmd!,
          args,
          env,
          image,
        );
        procs.push({ service: role, proc, ports });
      }
    }

    // Every healthcheck, as written, against the replica's own port.
    for (const { service, proc, ports } of procs) {
      const [kind, cmd, ...args] = services[service]!.healthcheck!.test;
      expect(kind).toBe('CMD');
      const local = args.map((a) =>
        a.replace(/127\.0\.0\.1:(\d+)/g, (m, p: string) => `127.0.0.1:${ports.get(p) ?? p}`),
      );
      // Healthy, or exited: a process that dies at start fails the test at once, with its output.
      await waitFor(
        async () =>
          !proc.running ||
          (await runToEnd(cmd === 'node' ? process.execPath : cmd!, local)).code === 0,
        `${proc.name} healthy`,
        120_000,
      );
      if (!proc.running) throw new Error(`${proc.name} exited at start:\n${proc.tail()}`);
    }

    // The smoke: a client of the gateway, an execution of a replay recording, three prompts.
    const gateway = procs.find((p) => p.service === 'gateway')!;
    const port = gateway.ports.get('8080')!;
    const token = await mintToken(COMPOSE_SECRETS.BATON_JWT_SECRET!, {
      tenant: 'acme',
      scopes: ['read', 'prompt', 'execute'],
    });
    const client = new BatonClient();
    await client.connect(`ws://127.0.0.1:${port}/ws`, token);
    const activity: (string | null)[] = [];
    const decided: Update[] = [];
    const sub = client.subscribe('t-compose', {
      sessionId: 'main',
      onView: (view) => {
        const a = view.sessions.find((s) => s.sessionId === 'main')?.activity.foregroundActivity;
        if (a !== undefined && activity.at(-1) !== a) activity.push(a);
      },
      onUpdate: (u) => {
        if (u.type === 'prompt.decided') decided.push(u);
      },
    });
    await sub.ready;
    // Through the gateway, as any client: the `replay` profile of the workers' built-in set.
    const started = await fetch(
      `http://127.0.0.1:${port}/v1/tasks/t-compose/sessions/main/executions`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          executionId: 'x-compose-1',
          profile: 'replay',
          recording: 'demo-claude.jsonl',
          speed: 2,
        }),
      },
    );
    expect(started.status).toBe(202);
    await waitFor(
      () => sub.view?.sessions.find((s) => s.sessionId === 'main')?.activity.state === 'idle',
      'execution ready',
    );
    const first = await client.prompt({
      taskId: 't-compose',
      sessionId: 'main',
      text: 'one',
      idempotencyKey: 'k1',
    });
    expect(first.decision).toMatchObject({ outcome: 'admitted' });
    const second = await client.prompt({
      taskId: 't-compose',
      sessionId: 'main',
      text: 'two',
      idempotencyKey: 'k2',
    });
    expect(second.decision).toMatchObject({ outcome: 'queued', position: 1 });
    // The queued prompt drains when the first turn ends.
    await waitFor(
      () =>
        decided.some(
          (u) =>
            u.type === 'prompt.decided' &&
            u.data.idempotencyKey === 'k2' &&
            u.data.decision.outcome === 'admitted',
        ),
      'the queued prompt admitted',
    );
    await waitFor(
      () => activity.at(-1) === null && activity.includes('background'),
      'the session idle after background work',
    );
    expect(activity).toEqual(expect.arrayContaining(['generating', 'background', null]));
    await client.close();

    // SIGTERM, as `docker compose down` sends it: every process stops cleanly.
    for (const { proc } of [...procs].reverse()) {
      await expect(proc.stop('SIGTERM')).resolves.toEqual({ code: 0, signal: null });
    }
  });
});
