import fc from 'fast-check';
import { startRedis, type RedisServer } from '@baton/redis-server';
import {
  ConflictError,
  EventStore,
  FencedError,
  connectRedis,
  type Lease,
  type RedisClient,
} from '../src';
import { decision, freshPrefix } from './fixtures';

jest.setTimeout(90_000);

type Op =
  | { op: 'acquire'; owner: number }
  | { op: 'renew'; owner: number }
  | { op: 'release'; owner: number }
  | { op: 'write'; owner: number }
  // The lease lapses: the key is deleted, as Redis does when its PEXPIRE runs out.
  | { op: 'expire' };

const owner = fc.integer({ min: 0, max: 2 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('acquire' as const), owner }),
  fc.record({ op: fc.constant('renew' as const), owner }),
  fc.record({ op: fc.constant('release' as const), owner }),
  fc.record({ op: fc.constant('write' as const), owner }),
  fc.record({ op: fc.constant('expire' as const) }),
);

describe('shard leases under generated interleavings', () => {
  let server: RedisServer;
  let client: RedisClient;
  beforeAll(async () => {
    server = await startRedis();
    client = connectRedis({ url: server.url });
  });
  afterAll(async () => {
    client.disconnect();
    await server.stop();
  });

  it('never lets the epoch go back, and only the current holder writes', async () => {
    const shard = 0;
    const task = 'task-under-lease';
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 25 }), async (ops) => {
        const store = new EventStore(client, { shards: 1, prefix: freshPrefix() });
        // What each owner believes it holds, and what the model says is held.
        const held: (Lease | undefined)[] = [undefined, undefined, undefined];
        let holder: Lease | undefined;
        let maxEpoch = 0;
        for (const step of ops) {
          if (step.op === 'expire') {
            await client.del(store.keys.lease(shard));
            holder = undefined;
          } else if (step.op === 'acquire') {
            const r = await store.leases.acquire(shard, `o${step.owner}`, 60_000);
            const free = holder === undefined || holder.owner === `o${step.owner}`;
            expect(r.acquired).toBe(free);
            if (r.acquired) {
              expect(r.lease.epoch).toBeGreaterThan(maxEpoch);
              held[step.owner] = r.lease;
              holder = r.lease;
            }
          } else {
            const mine = held[step.owner];
            if (!mine) continue;
            const current = holder !== undefined && holder.epoch === mine.epoch;
            if (step.op === 'renew') {
              const r = await store.leases.renew(mine, 60_000).catch((e: unknown) => e);
              if (current) {
                expect(r).toMatchObject({ epoch: mine.epoch });
              } else {
                expect(r).toBeInstanceOf(FencedError);
              }
            } else if (step.op === 'release') {
              expect(await store.leases.release(mine)).toBe(current);
              if (current) holder = undefined;
            } else {
              const last = await store.lastId(task);
              const r = await store
                .appendFenced(mine, task, last, [decision(task, 1)])
                .catch((e: unknown) => e);
              if (current) {
                expect(r).toEqual([expect.any(String)]);
              } else {
                expect(r).toBeInstanceOf(FencedError);
                expect(r).not.toBeInstanceOf(ConflictError);
              }
            }
          }
          const epoch = await store.leases.epoch(shard);
          expect(epoch).toBeGreaterThanOrEqual(maxEpoch);
          maxEpoch = epoch;
        }
      }),
      { numRuns: 1_000 },
    );
  });
});
