// A failover that lost an acquisition's INCR and lease write (asynchronous replication) lets the
// next acquisition, on the promoted replica, hand out the same epoch number to another owner. The
// fence names the writer by epoch and owner, so the first owner's writes are refused at once, not
// only from its next renewal on (what an epoch-only fence did).
import { EventStore, FencedError } from '../src';
import { decision, freshPrefix, startBackend, update, type Backend } from './fixtures';

jest.setTimeout(60_000);

describe('fence after a failover that lost an acquisition', () => {
  let backend: Backend;
  let store: EventStore;

  beforeAll(async () => {
    backend = await startBackend('single');
    store = new EventStore(backend.client(), { shards: 16, prefix: freshPrefix() });
  });
  afterAll(async () => {
    await store?.close();
    await backend?.stop();
  });

  it('refuses the writes of an owner whose epoch number was handed out again to another', async () => {
    const t = 'task-failover';
    const shard = store.shardOf(t);
    const a = await store.leases.acquire(shard, 'projector-a', 30_000);
    if (!a.acquired) throw new Error('a could not acquire');
    // The promoted replica never saw A's acquisition: no lease, the epoch counter one behind.
    const r = backend.client();
    await r.del(store.keys.lease(shard));
    await r.set(store.keys.epoch(shard), String(a.lease.epoch - 1));
    const b = await store.leases.acquire(shard, 'projector-b', 30_000);
    if (!b.acquired) throw new Error('b could not acquire');
    expect(b.lease.epoch).toBe(a.lease.epoch); // the same number, another owner

    // A still believes it owns the shard (its renewal is not due yet) and writes: every fenced
    // write of A is refused, and B's goes through.
    await expect(
      store.commit(a.lease, t, {
        expectedLastId: '0-0',
        entries: [decision(t, 1)],
        updates: [update(t, 1)],
      }),
    ).rejects.toThrow(FencedError);
    await expect(store.leases.renew(a.lease, 30_000)).rejects.toThrow(FencedError);
    await expect(store.snapshots.write(a.lease, t, '0-1', { seq: 0 }, 0)).rejects.toThrow(
      FencedError,
    );
    await expect(
      store.commit(b.lease, t, {
        expectedLastId: '0-0',
        entries: [decision(t, 1)],
        updates: [update(t, 1)],
      }),
    ).resolves.toBeDefined();
  });
});
