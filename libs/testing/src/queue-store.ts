// What a worker's tests stand beside: a real Redis, the event store and the execution queue.
import { executionQueue, type ExecutionQueue } from '@baton/jobs';
import { startRedis, type RedisServer } from '@baton/redis-server';
import { EventStore, connectRedis, type RedisTarget } from '@baton/store';
import { OwnerDouble } from './worker';

export interface QueueStore {
  store: EventStore;
  queue: ExecutionQueue;
  /** Closes the queue and the store (not the Redis they are on). */
  close(): Promise<void>;
}

/** The event store and the execution queue of a deployment (`prefix`, `shards`) on a Redis. */
export function connectQueueStore(target: RedisTarget, prefix: string, shards: number): QueueStore {
  const store = EventStore.connect(target, { shards, prefix });
  // The queue's blocking reads must wait out an outage, never fail for retries.
  const queueConn = connectRedis(target, { maxRetriesPerRequest: null });
  const queue = executionQueue(queueConn, prefix);
  return {
    store,
    queue,
    close: async () => {
      await queue.close();
      queueConn.disconnect();
      await store.close();
    },
  };
}

/** A redis-server of its own, with a deployment's store and queue on it; `stop` ends all. */
export async function startQueueStore(
  prefix: string,
  shards: number,
): Promise<QueueStore & { server: RedisServer; stop(): Promise<void> }> {
  const server = await startRedis();
  const qs = connectQueueStore({ url: server.url }, prefix, shards);
  return {
    ...qs,
    server,
    stop: async () => {
      await qs.close();
      await server.stop();
    },
  };
}

/**
 * A redis-server of its own with a deployment's store and queue, a shard owner's double holding
 * every shard (the worker's counterpart in place of a projector), and the environment a worker
 * process of that deployment is started with; `stop` ends all.
 */
export async function startOwnedQueueStore(prefix: string, shards: number) {
  const qs = await startQueueStore(prefix, shards);
  const owner = new OwnerDouble(qs.store);
  await owner.start();
  return {
    ...qs,
    owner,
    env: { REDIS_URL: qs.server.url, BATON_PREFIX: prefix, BATON_SHARDS: String(shards) },
    stop: async () => {
      await owner.stop();
      await qs.stop();
    },
  };
}
export type OwnedQueueStore = Awaited<ReturnType<typeof startOwnedQueueStore>>;
