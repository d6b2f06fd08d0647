import { startRedis, type RedisServer } from '@baton/redis-server';
import { connectRedis } from '@baton/store';
import { spawnLeasedProjector, waitFor, type ProjectorProcess } from '@baton/testing';

/**
 * Leases are lost together (an outage past the lease, a Redis that lost its writes, a takeover):
 * the projector says so in one line naming the shards — a line per shard was 64 warnings per
 * outage as shipped — and takes them all again.
 */

jest.setTimeout(120_000);

const SHARDS = 16;
let server: RedisServer;
let projector: ProjectorProcess;

beforeAll(async () => {
  server = await startRedis({ aof: true });
  projector = await spawnLeasedProjector({
    REDIS_URL: server.url,
    BATON_PREFIX: 'll',
    BATON_SHARDS: String(SHARDS),
  });
});
afterAll(async () => {
  projector?.child.kill('SIGTERM');
  await projector?.exited;
  await server?.stop();
});

const lines = (from: number) =>
  projector
    .output()
    .slice(from)
    .split('\n')
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as { msg: string; shard?: number; shards?: number[] }];
      } catch {
        return [];
      }
    });

it('reports leases lost together in one line, then takes them again', async () => {
  await waitFor(
    () => lines(0).filter((l) => l.msg === 'lease acquired').length === SHARDS,
    'every shard owned',
  );
  const from = projector.output().length;
  // Redis forgets every lease at once (as a restart from an older dump does): each renewal is
  // fenced.
  const redis = connectRedis({ url: server.url });
  for (let s = 0; s < SHARDS; s++) await redis.del(`ll:{b:${s}}:lease`);
  redis.disconnect();
  await waitFor(
    () => lines(from).filter((l) => l.msg === 'lease acquired').length === SHARDS,
    'every shard owned again',
    60_000,
  );
  await waitFor(() => lines(from).some((l) => l.msg.startsWith('lease lost')), 'the loss reported');
  // Nothing more is said of it after the first line.
  await new Promise((r) => setTimeout(r, 1_000));
  const lost = lines(from).filter((l) => l.msg.startsWith('lease lost'));
  expect(lost).toHaveLength(1);
  expect([...lost[0]!.shards!].sort((a, b) => a - b)).toEqual(
    Array.from({ length: SHARDS }, (_, s) => s),
  );
});
