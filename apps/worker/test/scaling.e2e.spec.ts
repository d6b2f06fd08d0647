import { enqueueExecution, executionQueue, type ExecutionQueue } from '@baton/jobs';
import { startRedis, type RedisServer } from '@baton/redis-harness';
import { EventStore, connectRedis, type RedisClient } from '@baton/store';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  OwnerDouble,
  childrenOf,
  factsOf,
  groupAlive,
  readAll,
  spawnWorker,
  until,
  writeBusyRecording,
  type WorkerProcess,
} from './support';

/**
 * Horizontal scaling with real processes: three workers share thirty long executions; one is
 * killed with SIGKILL. Its executions' leases lapse (so the owner can declare them lost) and its
 * agents go with it; the other twenty executions go on untouched.
 */

const PREFIX = 'sc';
const SHARDS = 4;
const LEASE_MS = 1_500;
const EXECUTIONS = 30;

let server: RedisServer;
let store: EventStore;
let queueConn: RedisClient;
let queue: ExecutionQueue;
let owner: OwnerDouble;
let workers: WorkerProcess[] = [];

beforeAll(async () => {
  server = await startRedis();
  store = EventStore.connect({ url: server.url }, { shards: SHARDS, prefix: PREFIX });
  queueConn = connectRedis({ url: server.url }, { maxRetriesPerRequest: null });
  queue = executionQueue(queueConn, PREFIX);
  owner = new OwnerDouble(store);
  await owner.start();
});
afterAll(async () => {
  for (const w of workers) w.child.kill('SIGTERM');
  await Promise.all(workers.map((w) => w.exited));
  await owner.stop();
  await queue.close();
  queueConn.disconnect();
  await store.close();
  await server.stop();
});

const refOf = (i: number) => ({
  taskId: `task-${i}`,
  sessionId: `session-${i}`,
  executionId: `exec-${i}`,
});
type Ref = ReturnType<typeof refOf>;

const expiredLeases = async () => {
  const all = await Promise.all(
    Array.from({ length: SHARDS }, (_, s) => store.executions.expiredLeases(s)),
  );
  return new Set(all.flat().map((l) => l.executionId));
};

it('spreads 30 executions over 3 workers; a killed worker loses only its own', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-recordings-'));
  // Two minutes of output every 200 ms: the sessions stay busy for the whole test.
  writeBusyRecording(join(dir, 'busy.jsonl'), 600, 200);
  workers = await Promise.all(
    [0, 1, 2].map((i) =>
      spawnWorker({
        REDIS_URL: server.url,
        BATON_PREFIX: PREFIX,
        BATON_SHARDS: String(SHARDS),
        BATON_INSTANCE_ID: `scale-worker-${i}`,
        WORKER_CONCURRENCY: '10',
        WORKER_EXECUTION_LEASE_MS: String(LEASE_MS),
        WORKER_RECORDINGS_DIR: dir,
      }),
    ),
  );
  const refs: Ref[] = Array.from({ length: EXECUTIONS }, (_, i) => refOf(i));
  for (const ref of refs) {
    await enqueueExecution(queue, {
      v: 1,
      ...ref,
      agent: { kind: 'recording', recording: 'busy' },
    });
    await owner.deliver(ref, 'p1', 1);
  }

  // Every execution runs and generates; each worker hosts its share.
  const hostOf = new Map<string, string>();
  for (const ref of refs) {
    await until(
      async () => {
        const facts = factsOf(await readAll(store, ref.taskId), ref.executionId);
        const started = facts.find((f) => f.type === 'execution.started');
        if (!started || !facts.some((f) => f.type === 'foreground.output')) return false;
        hostOf.set(
          ref.executionId,
          started.type === 'execution.started' ? started.data.workerId! : '',
        );
        return true;
      },
      `${ref.executionId} generating`,
      120_000,
    );
  }
  const perWorker = workers.map(
    (w) => [...hostOf.values()].filter((h) => h === w.instanceId).length,
  );
  expect(perWorker).toEqual([10, 10, 10]);

  const victim = workers[0]!;
  const victimAgents = childrenOf(victim.pid);
  expect(victimAgents).toHaveLength(10);
  const lost = refs.filter((r) => hostOf.get(r.executionId) === victim.instanceId);
  const kept = refs.filter((r) => hostOf.get(r.executionId) !== victim.instanceId);
  expect(await expiredLeases()).toEqual(new Set());

  victim.child.kill('SIGKILL');
  await victim.exited;
  const factsAtKill = new Map<string, number>();
  for (const ref of kept) {
    factsAtKill.set(
      ref.executionId,
      factsOf(await readAll(store, ref.taskId), ref.executionId).length,
    );
  }

  // The victim's leases lapse, and only theirs.
  const expired = await until(async () => {
    const e = await expiredLeases();
    return lost.every((r) => e.has(r.executionId)) ? e : false;
  }, 'the victim’s leases lapsed');
  expect([...expired].sort()).toEqual(lost.map((r) => r.executionId).sort());

  // Its agents lost their client (stdin closed) and are gone with it.
  await until(() => victimAgents.every((pid) => !groupAlive(pid)), 'the victim’s agents gone');

  // The others go on: new facts for every one of them, none ended, their leases alive.
  for (const ref of kept) {
    await until(
      async () =>
        factsOf(await readAll(store, ref.taskId), ref.executionId).length >=
        factsAtKill.get(ref.executionId)! + 3,
      `${ref.executionId} still flowing`,
    );
    const facts = factsOf(await readAll(store, ref.taskId), ref.executionId);
    expect(facts.some((f) => f.type === 'execution.ended')).toBe(false);
  }
  expect([...(await expiredLeases())].sort()).toEqual(lost.map((r) => r.executionId).sort());
  for (const ref of lost) {
    const facts = factsOf(await readAll(store, ref.taskId), ref.executionId);
    expect(facts.some((f) => f.type === 'execution.ended')).toBe(false);
  }
}, 240_000);
