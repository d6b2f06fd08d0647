// The README's run command, as a user runs it: `npm start` (one process: gateway, projector and
// worker) and the CLI against it. What must survive Ctrl-C and a restart: every prompt a user
// sent — a prompt queued before the restart is still queued after it, and runs once an execution
// is there to take it.
import { freePort, startRedis, type RedisServer } from '@baton/redis-server';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { OneProcessRun, Proc, SHORT_LEASES, cli, getJson, waitFor } from '@baton/testing';

jest.setTimeout(300_000);

interface SessionView {
  sessionId: string;
  activity: { state: string; foregroundActivity: string | null; runningGeneration: number | null };
  queue: { entries: { promptId: string; idempotencyKey: string; text: string }[] };
}

describe('the one-process run (npm start) and the CLI', () => {
  let redis: RedisServer;
  let run: OneProcessRun;
  let env: Record<string, string>;
  let gateway: string;
  const procs: Proc[] = [];

  const start = () => run.start();
  const token = () => run.token();
  const session = async (taskId: string, sessionId: string) =>
    getJson<SessionView>(`${gateway}/v1/tasks/${taskId}/sessions/${sessionId}`, token());
  const json = (stdout: string) => JSON.parse(stdout) as Record<string, unknown>;

  beforeAll(async () => {
    redis = await startRedis({ aof: true });
    run = await OneProcessRun.create(redis.url, 'run', 8, SHORT_LEASES);
    ({ env, url: gateway } = run);
  });
  afterAll(async () => {
    for (const p of procs) await p.stop('SIGKILL');
    await run?.stop();
    await redis?.stop();
  });

  it('keeps a queued prompt through Ctrl-C and a restart, then runs it', async () => {
    let baton = await start();
    expect(baton.lines.join('\n')).toContain(`using Redis at ${redis.url}`);

    // An execution of the demo recording at half speed: each turn generates for several seconds.
    const exec = await cli(
      ['exec', 't1', 's1', '--recording', 'demo-claude.jsonl', '--speed', '0.5'],
      env,
    );
    expect(exec.code).toBe(0);
    await waitFor(
      async () => (await session('t1', 's1')).activity.state === 'idle',
      'execution ready',
    );

    const first = await cli(['prompt', 't1', 's1', 'first', '--key', 'k1'], env);
    expect(json(first.stdout)).toMatchObject({ outcome: 'admitted', idempotencyKey: 'k1' });
    const second = await cli(['prompt', 't1', 's1', 'second', '--key', 'k2'], env);
    expect(json(second.stdout)).toMatchObject({ outcome: 'queued', position: 1, reason: 'busy' });
    const secondId = json(second.stdout).promptId;

    // Ctrl-C: a clean stop (exit 0), executions ended by the worker before it goes.
    baton.lines.length = 0;
    const stopped = await baton.stop('SIGINT');
    if (stopped.code !== 0) throw new Error(`stop: ${JSON.stringify(stopped)}\n${baton.tail()}`);
    expect(baton.lines).toContain('SIGINT: stopping');

    baton = await start();
    const queue = await cli(['queue', 't1', 's1'], env);
    expect(queue.code).toBe(0);
    expect(json(queue.stdout)).toMatchObject({
      entries: [{ promptId: secondId, idempotencyKey: 'k2', text: 'second' }],
    });
    const afterRestart = await session('t1', 's1');
    expect(afterRestart.activity.foregroundActivity).toBeNull();

    // A new execution takes the queued prompt: asking again under its key answers its decision.
    expect(
      (await cli(['exec', 't1', 's1', '--recording', 'demo-claude.jsonl', '--speed', '0'], env))
        .code,
    ).toBe(0);
    await waitFor(
      async () => (await session('t1', 's1')).queue.entries.length === 0,
      'queue drained',
    );
    const again = await cli(['prompt', 't1', 's1', 'second', '--key', 'k2'], env);
    expect(json(again.stdout)).toMatchObject({ promptId: secondId, outcome: 'admitted' });

    // Rebuilding the task from its stream alone gives the view the gateway serves.
    await waitFor(async () => {
      const rebuilt = await cli(['rebuild', 't1'], env);
      const served = await getJson(`${gateway}/v1/tasks/t1`, token());
      return (
        JSON.stringify((JSON.parse(rebuilt.stdout) as { view: unknown }).view) ===
        JSON.stringify(served)
      );
    }, 'rebuild to equal the served view');

    // A command the owner refuses is an error: one line, exit 1.
    const refused = await cli(['queue', 't1', 's1', 'cancel', String(secondId)], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toMatch(/^baton: not_queued: /);

    const shards = await cli(['shards'], env);
    expect(shards.stdout).toMatch(/^8\/8 shards owned$/m);
    await baton.stop('SIGINT');
  });

  it('without REDIS_URL runs on a redis-server of its own that listens only on a socket in its data folder', async () => {
    const ownDir = mkdtempSync(join(tmpdir(), 'baton-own-'));
    const port = await freePort();
    const own = {
      ...env,
      REDIS_URL: undefined,
      BATON_DATA_DIR: ownDir,
      GATEWAY_PORT: String(port),
      BATON_GATEWAY_URL: `http://127.0.0.1:${port}`,
      // The gateway's limits are the one-process run's too.
      GATEWAY_MAX_CONNECTIONS_PER_TENANT: '1',
    };
    const p = new Proc(
      'baton-own',
      process.execPath,
      ['dist/apps/baton/src/main.js'],
      own,
      undefined,
      true,
    );
    procs.push(p);
    try {
      await p.waitFor(/Baton is running/, 120_000);
      const socket = join(ownDir, 'redis', 'redis.sock');
      expect(p.lines).toContain(
        `started redis-server on ${socket} (data in ${join(ownDir, 'redis')}, only this user can connect)`,
      );
      expect(statSync(join(ownDir, 'redis')).mode & 0o777).toBe(0o700);
      const ownToken = readFileSync(join(ownDir, 'token'), 'utf8').trim();
      const upgrade = (ws: WebSocket) =>
        new Promise<number>((resolve) => {
          ws.once('open', () => resolve(101));
          ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
          ws.once('error', () => resolve(0));
        });
      const first = new WebSocket(`ws://127.0.0.1:${port}/ws?token=${ownToken}`);
      expect(await upgrade(first)).toBe(101);
      const second = new WebSocket(`ws://127.0.0.1:${port}/ws?token=${ownToken}`);
      expect(await upgrade(second)).toBe(429);
      first.close();
      // The CLI's operator commands find it without being told; client commands use the gateway.
      const shards = await cli(['shards'], own);
      expect(shards.stdout).toMatch(/^8\/8 shards owned$/m);
      // …and say which one they act on.
      expect(shards.stderr.split('\n')).toContain(
        `baton: operator command on Redis unix://${socket}, prefix ${env.BATON_PREFIX}, 8 shards`,
      );
      const prompt = await cli(['prompt', 't-own', 's1', 'hello', '--key', 'k1'], own);
      expect(JSON.parse(prompt.stdout)).toMatchObject({ outcome: 'queued' });
      // An execution at work when Ctrl-C comes: the worker has an agent to stop and facts to write.
      const exec = await cli(
        ['exec', 't-own', 's1', '--recording', 'demo-claude.jsonl', '--speed', '0.5'],
        own,
      );
      expect(exec.code).toBe(0);
      await waitFor(async () => {
        const s = await getJson<SessionView>(
          `http://127.0.0.1:${port}/v1/tasks/t-own/sessions/s1`,
          ownToken,
        );
        return s.activity.state === 'running';
      }, 'the queued prompt running');
      // Ctrl-C reaches the whole process group (its redis-server too, unless that runs in a group
      // of its own): Baton still stops in order — Redis last — and exits 0, not hanging on a
      // Redis that went first.
      expect(await p.ctrlC()).toEqual({ code: 0, signal: null });
      expect(p.lines.join('\n')).not.toMatch(/longer than|ECONNREFUSED|ENOENT/);
      // Stopped with it: nothing listens on the socket any more.
      expect((await cli(['shards'], own)).stderr).toMatch(
        /^baton: cannot reach Redis at unix:\/\//m,
      );
    } finally {
      await p.stop('SIGKILL');
      rmSync(ownDir, { recursive: true, force: true });
    }
  });

  it('answers every CLI error with one line and a non-zero exit', async () => {
    const noGateway = await cli(['queue', 't1', 's1'], {
      ...env,
      BATON_GATEWAY_URL: `http://127.0.0.1:${await freePort()}`,
    });
    expect(noGateway.code).toBe(1);
    expect(noGateway.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^baton: cannot connect to the gateway at http:\/\/127\.0\.0\.1:\d+/),
    ]);
    const usage = await cli(['prompt', 't1'], env);
    expect(usage.code).toBe(2);
    expect(usage.stderr.trim()).toBe('baton: prompt needs <task> <session> <text>');
    const badEnv = await cli(['shards'], { ...env, BATON_SHARDS: 'many' });
    expect(badEnv.code).toBe(2);
    expect(badEnv.stderr.trim()).toMatch(/^baton: BATON_SHARDS="many": /);
    const noRedis = await cli(['shards'], {
      ...env,
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
    });
    expect(noRedis.code).toBe(1);
    // An operator command first says which Redis and prefix it acts on, then its one-line error.
    expect(noRedis.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^baton: operator command on Redis redis:\/\/127\.0\.0\.1:\d+, prefix run\d+, 8 shards$/,
      ),
      expect.stringMatching(
        /^baton: cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+: connect ECONNREFUSED/,
      ),
    ]);
    // Never its password.
    const secret = await cli(['shards'], {
      ...env,
      REDIS_URL: `redis://ops:s3cret-pw@127.0.0.1:${await freePort()}`,
    });
    expect(secret.code).toBe(1);
    expect(secret.stderr).not.toContain('s3cret-pw');
    expect(secret.stderr).toContain('redis://***@127.0.0.1:');
  });
});
