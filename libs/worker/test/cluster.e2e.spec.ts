import type { ExecutionQueue } from '@baton/jobs';
import { startRedisCluster, type RedisClusterHandle } from '@baton/redis-server';
import type { EventStore } from '@baton/store';
import {
  OwnerDouble,
  connectQueueStore,
  factsOf,
  readAll,
  spawnWorker,
  startExecution,
  waitFor,
  type QueueStore,
  type WorkerProcess,
} from '@baton/testing';

/**
 * The worker process unchanged on a 3-master Redis Cluster (REDIS_URL=redis+cluster://...): the
 * queue's keys share one slot, each task's keys (stream, inbox, raw frames, leases) share their
 * shard's slot, and executions of tasks in different slots run side by side.
 */

const PREFIX = 'cw';
const SHARDS = 8;

let cluster: RedisClusterHandle;
let rig: QueueStore;
let store: EventStore;
let queue: ExecutionQueue;
let owner: OwnerDouble;
let worker: WorkerProcess;

beforeAll(async () => {
  cluster = await startRedisCluster(3);
  rig = connectQueueStore({ cluster: cluster.nodes }, PREFIX, SHARDS);
  ({ store, queue } = rig);
  owner = new OwnerDouble(store);
  await owner.start();
  worker = await spawnWorker({
    REDIS_URL: `redis+cluster://${cluster.nodes.map((n) => `${n.host}:${n.port}`).join(',')}`,
    BATON_PREFIX: PREFIX,
    BATON_SHARDS: String(SHARDS),
    WORKER_CONCURRENCY: '4',
  });
}, 60_000);
afterAll(async () => {
  worker?.child.kill('SIGTERM');
  await worker?.exited;
  await owner.stop();
  await rig.close();
  await cluster.stop();
});

it('runs executions of tasks in several shards (slots), turn to end, on a Cluster', async () => {
  const refs = Array.from({ length: 4 }, (_, i) => ({
    taskId: `local/cluster-task-${i}`,
    sessionId: `s-${i}`,
    executionId: `x-${i}`,
  }));
  expect(new Set(refs.map((r) => store.shardOf(r.taskId))).size).toBeGreaterThan(1);
  for (const ref of refs) {
    await startExecution(store, queue, ref, { recording: 'codex-exec-command', speed: 0 });
    await owner.deliver(ref, 'p1', 1);
  }
  for (const ref of refs) {
    await waitFor(
      async () =>
        factsOf(await readAll(store, ref.taskId), ref.executionId).some(
          (f) => f.type === 'turn.ended',
        ),
      `${ref.executionId} turn ended`,
    );
    await owner.stopExecution(ref);
  }
  for (const ref of refs) {
    const end = await waitFor(
      async () =>
        factsOf(await readAll(store, ref.taskId), ref.executionId).find(
          (f) => f.type === 'execution.ended',
        ),
      `${ref.executionId} ended`,
    );
    expect(end.data).toMatchObject({ reason: 'cancelled' });
    // The raw-frame log's last write may land just after the end (it is drained after facts).
    await waitFor(
      async () => (await store.rawFrames.read(ref.taskId, ref.executionId)).items.length > 5,
      `${ref.executionId} raw frames`,
    );
  }
});
