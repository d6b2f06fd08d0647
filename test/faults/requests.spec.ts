import { taskKey } from '@baton/protocol';
import { startRedis, startRedisLink, type RedisLink, type RedisServer } from '@baton/redis-server';
import { EventStore } from '@baton/store';
import {
  Client,
  readAll,
  restClient,
  startProjectorsAndGateway,
  token,
  waitFor,
  type Services,
} from '@baton/testing';

/**
 * No client request blocks for the length of an outage, and what it is
 * told is the truth. A real gateway reaches Redis through a link the test can stall (a network
 * that stops answering: no error, only silence) or that loses Redis altogether (killed with
 * SIGKILL). While the fault holds, every request — prompts over REST and WebSocket, a view read —
 * must be answered, `unavailable` (retryable), never `internal`: the fault is only lifted once
 * all of them have their answer, so a request that waited for the end of the outage would never
 * get one and the test would fail. Then each prompt is retried with its idempotency key, as the
 * client library does: every one is acknowledged, and each key is in the task stream exactly
 * once — those written during the stall (their bytes reached Redis later) are not made twice.
 */

jest.setTimeout(120_000);

const PREFIX = 'rq';
const SHARDS = 2;
const TENANT = 'acme';
const TASK = 'requests';
const KEY = taskKey(TENANT, TASK);
const STORE_TIMEOUT_MS = 1_000;
const tok = token({ tenant: TENANT, scope: 'read prompt execute' });

let server: RedisServer;
let store: EventStore;
let link: RedisLink;
let services: Services;
let ws: Client;
let rest: ReturnType<typeof restClient>;

beforeAll(async () => {
  server = await startRedis({ aof: true });
  store = EventStore.connect({ url: server.url }, { shards: SHARDS, prefix: PREFIX });
  link = await startRedisLink(server);
  const common = { BATON_PREFIX: PREFIX, BATON_SHARDS: String(SHARDS) };
  services = await startProjectorsAndGateway({
    projectors: [{ ...common, REDIS_URL: server.url }],
    gateway: {
      ...common,
      REDIS_URL: link.url,
      GATEWAY_STORE_TIMEOUT_MS: String(STORE_TIMEOUT_MS),
      LOG_LEVEL: 'info',
    },
  });
  rest = restClient(services.gateway.url, tok);
  ws = await Client.connect(services.gateway.wsUrl, tok);
  // The task exists: its first prompt went through.
  expect(await restPrompt('first')).toMatchObject({ status: 200 });
  // The executions queue is open (an execution waits for a worker): its connection sees the
  // faults too, and must not print them.
  expect(
    await rest('POST', `/v1/tasks/${TASK}/sessions/s2/executions`, {
      executionId: 'x1',
      profile: 'replay',
      recording: 'generic-turn',
      speed: 0,
    }),
  ).toMatchObject({ status: 202 });
});
afterAll(async () => {
  await ws?.close();
  await services?.stop();
  await store?.close();
  await link?.close();
  await server?.stop();
});

type Json = Record<string, unknown>;

const restPrompt = (key: string) =>
  rest('POST', `/v1/tasks/${TASK}/sessions/s1/prompts`, { text: key, idempotencyKey: key });
const wsPrompt = async (key: string) => {
  const reply = await ws.request({
    op: 'prompt',
    taskId: TASK,
    sessionId: 's1',
    text: key,
    idempotencyKey: key,
  });
  return reply.ok === true
    ? { status: 200, body: reply.result as Json }
    : { status: 503, body: { error: reply.error } as Json };
};

interface Attempt {
  key: string;
  via: 'rest' | 'ws';
}

async function underFault(name: string, fault: () => Promise<void>, heal: () => Promise<void>) {
  const attempts: Attempt[] = [
    ...Array.from({ length: 5 }, (_, i) => ({ key: `${name}-rest-${i}`, via: 'rest' as const })),
    ...Array.from({ length: 3 }, (_, i) => ({ key: `${name}-ws-${i}`, via: 'ws' as const })),
  ];
  const send = (a: Attempt) => (a.via === 'rest' ? restPrompt(a.key) : wsPrompt(a.key));
  await fault();
  const started = Date.now();
  const [answers, view, ready] = await Promise.all([
    Promise.all(attempts.map(async (a) => ({ ...(await send(a)), ms: Date.now() - started }))),
    rest('GET', `/v1/tasks/${TASK}`),
    fetch(`${services.gateway.url}/readyz`).then((r) => r.status),
  ]);
  // Every answer is in while the fault still holds.
  const answeredMs = Math.max(...answers.map((a) => a.ms));
  for (const a of [...answers, view]) {
    expect(a).toMatchObject({ status: 503, body: { error: { code: 'unavailable' } } });
  }
  expect(ready).toBe(503);
  await heal();

  // Retried with the same keys until acknowledged, as a client does.
  const healed = Date.now();
  let tries = 0;
  for (const a of attempts) {
    await waitFor(
      async () => {
        tries++;
        const r = await send(a);
        return r.status === 200 ? r : undefined;
      },
      `${a.key} acknowledged`,
      30_000,
    );
  }
  const recoverMs = Date.now() - healed;
  // A retried key appends its submit again; the owner answers it with the decision it has. So
  // a prompt made is a first decision, and each key must have exactly one.
  const entries = await readAll(store, KEY);
  const keyOf = new Map<string, string>();
  for (const e of entries) {
    if (e.type === 'prompt.submit') keyOf.set(e.data.promptId, e.data.idempotencyKey);
  }
  const made = entries.flatMap((e) =>
    e.type === 'prompt.admitted' || e.type === 'prompt.queued' || e.type === 'prompt.rejected'
      ? [keyOf.get(e.data.promptId)]
      : [],
  );
  const count = (k: string) => made.filter((x) => x === k).length;
  const lost = attempts.filter((a) => count(a.key) === 0).length;
  const duplicated = attempts.filter((a) => count(a.key) > 1).length;
  console.log(
    `${name}: attempts ${attempts.length} (+1 view read), all answered unavailable within ` +
      `${answeredMs} ms (store timeout ${STORE_TIMEOUT_MS} ms); after the fault: acknowledged ` +
      `${attempts.length} in ${tries} tries, lost ${lost}, duplicated ${duplicated}, ` +
      `time to recover ${recoverMs} ms`,
  );
  expect({ lost, duplicated }).toEqual({ lost: 0, duplicated: 0 });
}

it('a stalled network: every request is answered unavailable while it lasts, and nothing is made twice', async () => {
  await underFault(
    'stall',
    async () => link.stall(),
    async () => link.open(),
  );
});

it('Redis killed: every request is answered unavailable while it is gone, and nothing is lost', async () => {
  await underFault(
    'kill',
    () => server.kill(),
    () => server.restart(),
  );
});

it('says so once in its log when each fault starts and once when it ends, with no error or stack trace', () => {
  const lines = services.gateway.output().split('\n');
  // Two faults (the stall, the kill): a line each way for each, whatever the number of retries.
  expect(lines.filter((l) => l.includes('redis is unreachable'))).toHaveLength(2);
  expect(lines.filter((l) => l.includes('redis is back'))).toHaveLength(2);
  expect(lines.filter((l) => /"level":(50|60)/.test(l))).toEqual([]);
  expect(lines.filter((l) => l.includes('"stack"') || /^\s+at /.test(l))).toEqual([]);
});
