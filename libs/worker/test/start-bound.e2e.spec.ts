import { executionJobId } from '@baton/jobs';
import { taskKey, type SessionView } from '@baton/protocol';
import { startRedis, type RedisServer } from '@baton/redis-server';
import { EventStore } from '@baton/store';
import {
  cli,
  everyShardOwned,
  spawnGateway,
  token,
  type GatewayProc,
  childrenOf,
  factsOf,
  readAll,
  spawnProjectorAndWorker,
  waitFor,
  type ProjectorAndWorker,
} from '@baton/testing';

/**
 * An execution that can never be hosted: one worker with one slot, its slot taken. The next
 * execution waits for a worker, visibly (the session's attention, its position in REST and in
 * `baton exec`), for at most EXECUTION_START_TIMEOUT_MS; then the session shows it failed
 * (`no_worker`), and when the slot frees the worker does not start it (dead letter
 * `start_timeout`, nothing in the task stream). Everything real: Redis, a projector, a gateway,
 * a worker process with WORKER_CONCURRENCY=1, and the CLI.
 */

jest.setTimeout(120_000);

const PREFIX = 'sb';
const SHARDS = 2;
/** Long enough for REST to see the wait on a loaded machine; short enough to wait for. */
const START_TIMEOUT_MS = 4_000;
const TENANT = 'local';
const TASK = 'slots';
const KEY = taskKey(TENANT, TASK);

let server: RedisServer;
let store: EventStore;
let processes: ProjectorAndWorker;
let gateway: GatewayProc;
const tok = token({ tenant: TENANT, scope: 'read prompt execute' });

beforeAll(async () => {
  server = await startRedis();
  store = EventStore.connect({ url: server.url }, { shards: SHARDS, prefix: PREFIX });
  const common = {
    REDIS_URL: server.url,
    BATON_PREFIX: PREFIX,
    BATON_SHARDS: String(SHARDS),
    EXECUTION_START_TIMEOUT_MS: String(START_TIMEOUT_MS),
  };
  [processes, gateway] = await Promise.all([
    spawnProjectorAndWorker(common, {
      ...common,
      WORKER_CONCURRENCY: '1',
      WORKER_EXECUTION_LEASE_MS: '1500',
    }),
    spawnGateway(common),
  ]);
  await everyShardOwned(gateway, 60_000);
});
afterAll(async () => {
  await Promise.all([processes?.stop(), gateway?.stop()]);
  await store?.close();
  await server?.stop();
});

type Json = Record<string, unknown>;
async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(`${gateway.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

const sessionPath = (sessionId: string) => `/v1/tasks/${TASK}/sessions/${sessionId}`;
const startExecution = (sessionId: string, executionId: string) =>
  call('POST', `${sessionPath(sessionId)}/executions`, {
    executionId,
    profile: 'replay',
    recording: 'generic-turn',
    speed: 0,
  });
const sessionView = async (sessionId: string): Promise<SessionView | undefined> => {
  const r = await call('GET', sessionPath(sessionId));
  return r.status === 200 ? (r.body as unknown as SessionView) : undefined;
};

/** A session's view once `holds` is true of it. */
const sessionWhen = (
  sessionId: string,
  holds: (v: SessionView) => boolean,
  what: string,
  timeoutMs?: number,
) =>
  waitFor(
    async () => {
      const v = await sessionView(sessionId);
      return v && holds(v) ? v : false;
    },
    what,
    timeoutMs,
  );

/** The attention of a session whose execution waits for a worker. */
const waitingForWorker = (executionId: string) => ({
  kind: 'waiting',
  reason: 'waiting_for_worker',
  executionId,
});

const factTypes = async (executionId: string) =>
  factsOf(await readAll(store, KEY), executionId).map((f) => f.type);
const deadLetter = async (executionId: string) => {
  const page = await store.deadLetters.read(store.shardOf(KEY));
  return page.items.find((d) => d.sourceId === executionJobId(KEY, executionId));
};

it('shows an execution waiting for a worker with its position, fails it after the bound, and never starts it', async () => {
  // A takes the only slot and keeps it (a replay agent waits for prompts until it is stopped).
  const a = await startExecution('s1', 'A');
  expect(a.status).toBe(202);
  await waitFor(async () => (await factTypes('A')).includes('execution.started'), 'A started');

  // A prompt on s3 waits for an execution; C, started below, will be it.
  const prompt = await call('POST', `${sessionPath('s3')}/prompts`, {
    text: 'hello',
    idempotencyKey: 'k1',
  });
  expect(prompt.body).toMatchObject({ decision: { outcome: 'queued' } });

  // B: nothing can host it. The reply says it waits, first in line.
  const requestedAt = Date.now();
  const b = await startExecution('s2', 'B');
  expect(b).toEqual({
    status: 202,
    body: { executionId: 'B', jobId: executionJobId(KEY, 'B'), state: 'waiting', position: 1 },
  });
  expect(await call('GET', `${sessionPath('s2')}/executions/B`)).toEqual({
    status: 200,
    body: { executionId: 'B', state: 'waiting', position: 1 },
  });
  // The session shows why: waiting for a worker, naming the execution.
  const waiting = await sessionWhen(
    's2',
    (v) => v.activity.attention?.reason === 'waiting_for_worker',
    's2 waiting for a worker',
  );
  expect(waiting.activity.attention).toMatchObject(waitingForWorker('B'));

  // `baton exec` says so too: C waits behind B; s3's queued prompt now waits for a worker.
  const c = await cli(
    ['exec', TASK, 's3', '--recording', 'generic-turn', '--speed', '0', '--execution-id', 'C'],
    { BATON_GATEWAY_URL: gateway.url, BATON_TOKEN: tok },
  );
  expect(c.code).toBe(0);
  expect(c.stdout.split('\n')[0]).toBe('waiting for a worker (position 2)');
  expect(JSON.parse(c.stdout.split('\n')[1]!)).toMatchObject({
    executionId: 'C',
    state: 'waiting',
    position: 2,
  });
  // The worker's scrape says how deep the queue is: what an autoscaler adds workers on.
  const ready = processes.worker
    .output()
    .split('\n')
    .find((l) => l.includes('"worker ready"'))!;
  const port = (JSON.parse(ready) as { metricsPort: number }).metricsPort;
  const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  expect(metrics).toMatch(/^baton_worker_executions_waiting\{[^}]*\} 2$/m);
  const s3 = await sessionWhen(
    's3',
    (v) => v.queue.blockedBy === 'waiting_for_worker',
    's3 queue blocked by waiting_for_worker',
  );
  expect(s3.activity.attention).toMatchObject(waitingForWorker('C'));

  // Past the bound, the owner gives up on B: the session shows the failure with its reason.
  const failed = await sessionWhen(
    's2',
    (v) => v.activity.attention?.kind === 'failed',
    's2 failed',
    START_TIMEOUT_MS + 30_000,
  );
  expect(failed.activity.attention).toMatchObject({
    kind: 'failed',
    reason: 'no_worker',
    executionId: 'B',
  });
  expect(Date.now() - requestedAt).toBeGreaterThanOrEqual(START_TIMEOUT_MS);

  // C's request expires too (its session's queued prompt then waits for another execution).
  const expired = async () =>
    (await readAll(store, KEY))
      .filter((e) => e.type === 'execution.request_expired')
      .map((e) => (e.data as { executionId: string }).executionId);
  await waitFor(async () => (await expired()).length === 2, 'both requests expired');
  expect((await expired()).sort()).toEqual(['B', 'C']);
  // s3 says why, as docs/protocol.md does: the failure, and a queue that waits for an execution.
  // Its prompt is told so too (a retry of its key gets the decision as it stands): no worker is
  // coming, and its claim was never released.
  const s3failed = await sessionWhen(
    's3',
    (v) => v.activity.attention?.reason === 'no_worker',
    's3 failed',
  );
  expect(s3failed.queue.blockedBy).toBe('no_execution');
  const retried = await call('POST', `${sessionPath('s3')}/prompts`, {
    text: 'hello',
    idempotencyKey: 'k1',
  });
  expect(retried.body).toMatchObject({
    decision: { outcome: 'queued', position: 1, reason: 'no_execution' },
  });

  // A ends (its agent dies): the slot is free, and the worker takes B and C — and starts neither.
  const agents = childrenOf(processes.worker.pid);
  expect(agents).toHaveLength(1);
  process.kill(-agents[0]!, 'SIGKILL');
  await waitFor(async () => (await factTypes('A')).includes('execution.ended'), 'A ended');
  for (const id of ['B', 'C']) {
    const dead = await waitFor(() => deadLetter(id), `${id} dead-lettered`);
    expect(dead.reason).toMatch(/^execution job refused: start_timeout: no worker took it/);
    expect(JSON.parse(dead.raw)).toMatchObject({ taskId: KEY, executionId: id });
    // The dead letter is written before the worker's refusal moves the job to failed: wait for it.
    const path = `/v1/tasks/${TASK}/sessions/s${id === 'B' ? 2 : 3}/executions/${id}`;
    await waitFor(
      async () => (await call('GET', path)).body.state !== 'active',
      `${id} no longer active`,
    );
    expect(await call('GET', path)).toEqual({
      status: 200,
      body: { executionId: id, state: 'failed', position: null },
    });
  }
  // Nothing of B or C reached the task stream: no execution.started, no fact at all.
  expect(await factTypes('B')).toEqual([]);
  expect(await factTypes('C')).toEqual([]);
  // The session still says why its prompt waits.
  expect((await sessionView('s2'))!.activity.attention).toMatchObject({
    kind: 'failed',
    reason: 'no_worker',
  });
});
