import { executionQueue, type ExecutionQueue } from '@baton/jobs';
import type { StreamEntry } from '@baton/protocol';
import { startRedis, startRedisLink, type RedisLink, type RedisServer } from '@baton/redis-server';
import { EventStore, connectRedis, type RedisClient } from '@baton/store';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  GatewayDouble,
  factsOf,
  readAll,
  spawnProjectorAndWorker,
  startExecution,
  waitFor,
  writeBusyRecording,
  type ProjectorAndWorker,
} from '@baton/testing';

/**
 * A Redis outage longer than the execution lease. Redis (AOF, fsync always) is
 * killed with SIGKILL and restarted on the same port and data dir while 4 agents are mid-turn;
 * a projector process owns the tasks and a worker process hosts the agents, both real. Nobody
 * could renew or check a lease during the outage, so nothing may be declared lost for it: the
 * agents keep running, the worker appends what it buffered in order, the turns end normally.
 *
 * Each process reaches Redis through a link (libs/redis-server) that holds its connections
 * during the outage: the projector gets Redis back as soon as it restarts, the worker WORKER_LAG_MS
 * later (as when clients come back one by one; ioredis's reconnect backoff alone makes the order
 * a coin toss). Within one execution lease of the owner's return, so nothing may be lost.
 */

jest.setTimeout(180_000);

const PREFIX = 'og';
const SHARDS = 2;
const EXECUTIONS = 4;
const LEASE_MS = 1_500;
const OUTAGE_MS = 20_000;
const CHUNKS = 300;
const GAP_MS = 100;
/** The worker gets Redis back this long after the projector did (less than one lease). */
const WORKER_LAG_MS = 800;

let server: RedisServer;
let store: EventStore;
let queueConn: RedisClient;
let queue: ExecutionQueue;
let processes: ProjectorAndWorker;
let gateway: GatewayDouble;
let projectorLink: RedisLink;
let workerLink: RedisLink;

beforeAll(async () => {
  server = await startRedis({ aof: true });
  store = EventStore.connect({ url: server.url }, { shards: SHARDS, prefix: PREFIX });
  queueConn = connectRedis({ url: server.url }, { maxRetriesPerRequest: null });
  queue = executionQueue(queueConn, PREFIX);
  // The outage is on purpose: the test's own queue connection may complain, quietly.
  queue.on('error', () => undefined);
  gateway = new GatewayDouble(store);
  const recordings = mkdtempSync(join(tmpdir(), 'baton-outage-'));
  // Each turn lasts CHUNKS * GAP_MS (30 s): longer than the outage, so it spans it.
  writeBusyRecording(join(recordings, 'busy.jsonl'), CHUNKS, GAP_MS);
  projectorLink = await startRedisLink(server);
  workerLink = await startRedisLink(server);
  const common = { BATON_PREFIX: PREFIX, BATON_SHARDS: String(SHARDS) };
  processes = await spawnProjectorAndWorker(
    { ...common, REDIS_URL: projectorLink.url },
    {
      ...common,
      REDIS_URL: workerLink.url,
      WORKER_CONCURRENCY: String(EXECUTIONS),
      WORKER_EXECUTION_LEASE_MS: String(LEASE_MS),
      WORKER_RECORDINGS_DIR: recordings,
    },
  );
});
afterAll(async () => {
  await processes?.stop();
  await queue.close();
  queueConn.disconnect();
  await store.close();
  await Promise.all([projectorLink?.close(), workerLink?.close()]);
  await server.stop();
});

const ofType =
  (type: StreamEntry['type']) =>
  (e: StreamEntry): boolean =>
    e.type === type;

/** Characters of the busy recording's message: `chunk 0 chunk 1 ... `. */
const MESSAGE_CHARS = Array.from({ length: CHUNKS }, (_, i) => `chunk ${i} `.length).reduce(
  (a, b) => a + b,
  0,
);

it('an outage longer than the execution lease loses no execution; the turns finish', async () => {
  const refs = Array.from({ length: EXECUTIONS }, (_, i) => ({
    taskId: `local/outage-${i}`,
    sessionId: 's',
    executionId: 'x1',
  }));
  for (const ref of refs) {
    await startExecution(store, queue, ref, { recording: 'busy', speed: 1 });
    await gateway.submit(ref, 'p1');
  }
  // Every agent is mid-turn: its output reached the stream.
  for (const ref of refs) {
    await waitFor(
      async () => (await readAll(store, ref.taskId)).some(ofType('foreground.output')),
      `${ref.taskId} streaming`,
    );
  }
  const before = await Promise.all(refs.map(async (r) => (await readAll(store, r.taskId)).length));

  const { projector, worker } = processes;
  const logFrom = { projector: projector.output().length, worker: worker.output().length };
  projectorLink.hold();
  workerLink.hold();
  await server.kill();
  await new Promise((r) => setTimeout(r, OUTAGE_MS));
  await server.restart();
  const back = Date.now();
  projectorLink.open();
  await new Promise((r) => setTimeout(r, WORKER_LAG_MS));
  workerLink.open();

  // Recovered: every execution's buffered facts reached the stream again.
  await waitFor(async () => {
    const now = await Promise.all(refs.map(async (r) => (await readAll(store, r.taskId)).length));
    return now.every((n, i) => n > before[i]!);
  }, 'every execution appending again');
  const recoverMs = Date.now() - back;

  const streams = await waitFor(async () => {
    const all = await Promise.all(refs.map((r) => readAll(store, r.taskId)));
    return all.every((es) => es.some(ofType('turn.ended')) || es.some(ofType('execution.lost')))
      ? all
      : false;
  }, 'every turn ended');
  // A lease left to lapse now would still be declared lost: give the owner two periods to act.
  await new Promise((r) => setTimeout(r, 2 * LEASE_MS));
  const final = await Promise.all(refs.map((r) => readAll(store, r.taskId)));
  const lost = final.reduce((n, es) => n + es.filter(ofType('execution.lost')).length, 0);
  console.log(
    `outage ${OUTAGE_MS} ms (execution lease ${LEASE_MS} ms): executions ${EXECUTIONS}, ` +
      `lost ${lost}, time to recover ${recoverMs} ms after Redis was back ` +
      `(the worker's link ${WORKER_LAG_MS} ms after the projector's)`,
  );

  expect(lost).toBe(0);
  // No noise: each process says once that Redis went away and once that it is back, with no
  // error, no stack trace and no line per failed retry (item 7). What the outage caused (a shard
  // lease that lapsed meanwhile) is still a warning of its own.
  for (const [name, proc] of [
    ['projector', projector],
    ['worker', worker],
  ] as const) {
    const lines = proc.output().slice(logFrom[name]).split('\n');
    expect([name, lines.filter((l) => l.includes('redis is unreachable')).length]).toEqual([
      name,
      1,
    ]);
    expect([name, lines.filter((l) => l.includes('redis is back')).length]).toEqual([name, 1]);
    expect([name, lines.filter((l) => /"level":(50|60)/.test(l))]).toEqual([name, []]);
    expect([name, lines.filter((l) => /\n?\s+at /.test(l) || l.includes('"stack"'))]).toEqual([
      name,
      [],
    ]);
  }
  for (const [i, entries] of final.entries()) {
    expect(streams[i]!.some(ofType('turn.ended'))).toBe(true);
    const facts = factsOf(entries, refs[i]!.executionId);
    // Complete and in order: one writer, its seqs 1..n with no gap or repeat, in stream order.
    const writers = new Set(facts.map((f) => f.writer.instance));
    expect(writers.size).toBe(1);
    expect(facts.map((f) => f.writer.seq)).toEqual(facts.map((_, k) => k + 1));
    const chars = facts.reduce(
      (n, f) =>
        f.type === 'foreground.output' && f.data.channel === 'message'
          ? n + (f.data.chars ?? 0)
          : n,
      0,
    );
    expect(chars).toBe(MESSAGE_CHARS);
    expect(facts.filter(ofType('execution.ended'))).toHaveLength(0);
    expect(facts.find(ofType('turn.ended'))).toMatchObject({ data: { stopReason: 'end_turn' } });
  }
});

it('a worker that does not come back is still declared lost: one lease period after the owner did', async () => {
  const refs = Array.from({ length: EXECUTIONS }, (_, i) => ({
    taskId: `local/outage-${i}`,
    executionId: 'x1',
  }));
  projectorLink.hold();
  workerLink.hold();
  await server.kill();
  await new Promise((r) => setTimeout(r, 2_000));
  await server.restart();
  // Only the projector gets Redis back: to it, the worker is gone.
  projectorLink.open();
  const back = Date.now();
  await waitFor(async () => {
    const all = await Promise.all(refs.map((r) => readAll(store, r.taskId)));
    return all.every((es) => es.some(ofType('execution.lost')));
  }, 'every execution declared lost');
  const lostAfterMs = Date.now() - back;
  console.log(
    `worker cut off for good: executions ${EXECUTIONS} declared lost ${lostAfterMs} ms after ` +
      `the projector got Redis back (execution lease ${LEASE_MS} ms)`,
  );
  expect(lostAfterMs).toBeGreaterThanOrEqual(LEASE_MS);
  // Back, the worker finds its leases gone and stops the agents: their ends are recorded.
  workerLink.open();
  for (const ref of refs) {
    await waitFor(
      async () =>
        factsOf(await readAll(store, ref.taskId), ref.executionId).some(ofType('execution.ended')),
      `${ref.taskId} ended`,
    );
  }
});
