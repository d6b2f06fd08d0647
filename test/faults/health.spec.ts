import { startRedis, type RedisServer } from '@baton/redis-server';
import {
  everyShardOwned,
  spawnGateway,
  token,
  spawnProjectorAndWorker,
  waitFor,
  type ProjectorAndWorker,
} from '@baton/testing';

/**
 * /healthz tells the truth. A real projector process and a real worker process answer
 * 200 while Redis answers them, 503 with the reason while it is killed or paused (SIGSTOP: it
 * keeps its connections and answers nothing), and 200 again once it is back.
 */

jest.setTimeout(120_000);

let server: RedisServer;
let processes: ProjectorAndWorker;
const ports: Record<'projector' | 'worker', number> = { projector: 0, worker: 0 };

/** The port a process logged in its line `msg`. */
function loggedPort(output: string, msg: string): number {
  for (const line of output.split('\n')) {
    try {
      const l = JSON.parse(line) as { msg?: string; metricsPort?: number };
      if (l.msg === msg && typeof l.metricsPort === 'number') return l.metricsPort;
    } catch {
      // not a log line
    }
  }
  throw new Error(`no ${msg} line with a metricsPort in:\n${output}`);
}

async function healthz(role: keyof typeof ports): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${ports[role]}/healthz`, {
    signal: AbortSignal.timeout(5_000),
  });
  return { status: res.status, body: await res.text() };
}

/** Waits until both processes answer `status`; returns what they said. */
async function both(status: number, what: string) {
  const said = { projector: '', worker: '' };
  for (const role of ['projector', 'worker'] as const) {
    said[role] = await waitFor(
      async () => {
        const r = await healthz(role);
        return r.status === status ? r.body : false;
      },
      `${role} ${what}`,
      30_000,
    );
  }
  return said;
}

beforeAll(async () => {
  server = await startRedis();
  const common = { REDIS_URL: server.url, BATON_PREFIX: 'hz', BATON_SHARDS: '2' };
  processes = await spawnProjectorAndWorker(common, common);
  ports.projector = loggedPort(processes.projector.output(), 'projector started');
  ports.worker = loggedPort(processes.worker.output(), 'worker ready');
});
afterAll(async () => {
  server?.resume();
  await processes?.stop();
  await server?.stop();
});

it('answers 200 while Redis answers, 503 with the reason while it is killed, 200 once it is back', async () => {
  expect(await both(200, 'healthy')).toEqual({ projector: 'ok\n', worker: 'ok\n' });

  await server.kill();
  const down = await both(503, 'unhealthy with Redis killed');
  expect(down.projector).toMatch(/^unhealthy: Redis has not answered for \d+ ms\n$/);
  expect(down.worker).toMatch(/^unhealthy: Redis did not answer PING/);

  await server.restart();
  expect(await both(200, 'healthy again')).toEqual({ projector: 'ok\n', worker: 'ok\n' });
});

it('answers 503 with the reason while Redis is paused, 200 once it answers again', async () => {
  server.pause();
  const stalled = await both(503, 'unhealthy with Redis paused');
  expect(stalled.projector).toMatch(/^unhealthy: Redis has not answered for \d+ ms\n$/);
  expect(stalled.worker).toMatch(/^unhealthy: Redis did not answer PING/);

  server.resume();
  expect(await both(200, 'healthy again')).toEqual({ projector: 'ok\n', worker: 'ok\n' });
});

it('a gateway started while Redis is down waits unready, then serves once Redis is back', async () => {
  await server.kill();
  const gateway = await spawnGateway({
    REDIS_URL: server.url,
    BATON_PREFIX: 'hz',
    BATON_SHARDS: '2',
    GATEWAY_STORE_TIMEOUT_MS: '500',
  });
  try {
    // Up, not ready, and saying why; a client's request is answered `unavailable`.
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    const down = await fetch(`${gateway.url}/readyz`);
    expect(down.status).toBe(503);
    expect(await down.json()).toMatchObject({ redis: 'unreachable', updates: 'starting' });
    const tok = token({ tenant: 'hz', scope: 'read prompt' });
    const view = await fetch(`${gateway.url}/v1/tasks/t-down`, {
      headers: { authorization: `Bearer ${tok}` },
    });
    expect(view.status).toBe(503);
    expect(await view.json()).toMatchObject({ error: { code: 'unavailable' } });

    await server.restart();
    await everyShardOwned(gateway); // once Redis is back
    // Serving: a prompt through it is decided by the projector and shows in the view.
    const res = await fetch(`${gateway.url}/v1/tasks/t-down/sessions/s/prompts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'hello', idempotencyKey: 'k-down' }),
    });
    expect([200, 202]).toContain(res.status);
    await waitFor(async () => {
      const v = (await (
        await fetch(`${gateway.url}/v1/tasks/t-down`, {
          headers: { authorization: `Bearer ${tok}` },
        })
      ).json()) as { sessions?: { queue: { entries: unknown[] } }[] };
      return (v.sessions?.[0]?.queue.entries.length ?? 0) === 1;
    }, 'the queued prompt in the view');
  } finally {
    await gateway.stop();
  }
  // It did not exit on its own while it waited.
  expect(await gateway.exited).toBe(0);
});
