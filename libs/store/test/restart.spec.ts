import { startRedis, type RedisServer } from '@baton/redis-server';
import { EventStore } from '../src';
import { fact } from './fixtures';

jest.setTimeout(60_000);

describe('a Redis with appendonly yes and appendfsync always killed with -9', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis({ aof: true });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('keeps every acknowledged append, and the same store instance goes on', async () => {
    const store = EventStore.connect(
      { url: server.url },
      { shards: 4 },
      { maxRetriesPerRequest: 1, maxReconnectDelayMs: 100 },
    );
    store.redis.on('error', () => undefined);
    const acknowledged = new Map<string, number>();
    let seq = 0;
    let failures = 0;
    let stop = false;
    let batchesAfterRestart = 0;
    let restarted = false;

    const lease = await store.leases.acquire(1, 'projector-a', 60_000);
    expect(lease.acquired).toBe(true);

    // One writer, batches of 10 over 5 tasks, each batch retried until acknowledged.
    const writer = (async () => {
      while (!stop) {
        const taskId = `task-${seq % 5}`;
        const batch = Array.from({ length: 10 }, (_, i) => fact(taskId, 'w1', seq + i + 1));
        for (;;) {
          try {
            const ids = await store.append(taskId, batch);
            ids.forEach((id, i) => {
              if (id !== null) acknowledged.set(`${taskId}/${batch[i]!.writer.seq}`, 1);
            });
            break;
          } catch {
            failures += 1;
            await new Promise((r) => setTimeout(r, 20));
          }
        }
        seq += 10;
        if (restarted) batchesAfterRestart += 1;
      }
    })();

    while (seq < 2_000) await new Promise((r) => setTimeout(r, 5));
    await server.kill();
    await new Promise((r) => setTimeout(r, 200));
    await server.restart();
    restarted = true;
    while (batchesAfterRestart < 50) await new Promise((r) => setTimeout(r, 5));
    stop = true;
    await writer;

    expect(failures).toBeGreaterThan(0);
    const present = new Map<string, number>();
    for (let t = 0; t < 5; t++) {
      const taskId = `task-${t}`;
      let after = '0-0';
      for (;;) {
        const page = await store.readTask(taskId, after);
        if (page.items.length === 0) break;
        for (const { entry } of page.items) {
          const key = `${taskId}/${entry.writer.seq}`;
          present.set(key, (present.get(key) ?? 0) + 1);
        }
        after = page.lastId;
      }
    }
    for (const key of acknowledged.keys()) expect(present.get(key)).toBe(1);
    expect([...present.values()].every((n) => n === 1)).toBe(true);
    // Every seq the writer produced is there once: retries of batches whose reply was lost
    // during the crash were deduplicated by state that survived in the AOF.
    expect(present.size).toBe(seq);

    // The fencing epoch survived too: the next acquisition is still greater.
    const after = await store.leases.acquire(1, 'projector-b', 60_000);
    expect(after.acquired).toBe(false);
    await store.redis.del(store.keys.lease(1));
    const taken = await store.leases.acquire(1, 'projector-b', 60_000);
    expect(taken.acquired && lease.acquired && taken.lease.epoch > lease.lease.epoch).toBe(true);
    await store.close();
  });
});
