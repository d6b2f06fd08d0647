// Redis commands per fact, counted (INFO commandstats, the commands inside Lua scripts included)
// on a real redis-server with an in-process projector: the worker's append, the owner's read,
// fold and publication, as at 1,000 facts/s over 100 tasks in the e2e bench, where each fact is
// its own append. A count, not a time: it moves only when a change adds or saves commands.
import type { EventStore } from '@baton/store';
import type { ProjectorHandle } from '../src/projector';
import { TaskPlayer, UpdatePredictor } from '../../../bench/replay-facts';
import { waitFor } from '@baton/testing';
import { freshPrefix, metricSum, redisForFile } from './support';

jest.setTimeout(120_000);

const SHARDS = 4;
const TASKS = 16;
const ROUNDS = 40;
/**
 * The bound, over 7.4 measured here (11.2 before the shard's joined reads and publications, 8.5
 * while every append added its task to the live set, 7.6 while reads were joined per shard).
 * Per fact: the append — EVALSHA, the dedupe HMGET and HSET, the XADD and its feed note (5; the
 * live set's SADD only with the dedupe hash's renewal, a quarter of its TTL apart, or after a
 * put-away); an XADD per update (0.67 here); the owner's reads of the tasks that step in the same
 * turn, of every shard, joined in one XREAD of their streams; a publication per shard for them
 * (EVALSHA, the lease HMGET, the seqs HMGET and HSET, the views HSET); the feed XREADs. In a round,
 * the first note wakes the owner alone and the other fifteen come in its next read.
 */
const MAX_COMMANDS_PER_FACT = 8.5;

const redis = redisForFile();
let store: EventStore;
let projector: ProjectorHandle;

beforeAll(async () => {
  store = redis.store(freshPrefix(), SHARDS);
  projector = await redis.projector({
    redisUrl: redis.url,
    prefix: store.keys.prefix,
    shards: SHARDS,
    logLevel: 'silent',
    // No clock-driven work inside the count: no renewal, snapshot, timer or eviction is due.
    periods: {
      shardLease: 60_000,
      leaseRenewal: 20_000,
      snapshotDelay: 600_000,
      outputQuiet: 600_000,
      turnStall: 600_000,
      evictIdle: 0,
    },
    snapshotEntries: 1_000_000,
  });
  await projector.ready();
});

async function commandCalls(): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const info = await store.redis.info('commandstats');
  for (const m of info.matchAll(/cmdstat_([^:]+):calls=(\d+)/g)) out.set(m[1]!, Number(m[2]));
  return out;
}

it(`costs at most ${MAX_COMMANDS_PER_FACT} Redis commands per fact, each fact its own append, ${TASKS} tasks at once`, async () => {
  // The e2e bench's load: the facts of the bundled recordings, as a worker appends them.
  const players = Array.from({ length: TASKS }, (_, t) => new TaskPlayer(`cmd-${t}`, 3, 'w1', t));
  const predictors = players.map((p) => new UpdatePredictor(p.taskId));
  const published = () => metricSum(projector.registry, 'baton_projector_updates_published_total');
  let expected = 0;
  const round = () =>
    Promise.all(
      players.map(async (p, t) => {
        const f = p.next();
        expected += predictors[t]!.apply(f.entry).length;
        // As a worker does: an execution's lease before its start, dropped after its end.
        if (f.starts) await store.executions.renewLease(f.starts, 600_000);
        await store.append(p.taskId, [f.entry]);
        if (f.ends) await store.executions.dropLease(f.ends);
      }),
    );
  const published_ = async () => {
    const want = expected;
    await waitFor(async () => (await published()) >= want, `${want} updates published`, 30_000);
  };
  // Warm-up: every task loaded, its executions started.
  for (let r = 0; r < 10; r++) await round();
  await published_();

  const before = await commandCalls();
  const facts = ROUNDS * TASKS;
  const updatesBefore = expected;
  // A round: one fact to every task at once, as the bench's load sends each tick's facts.
  for (let r = 0; r < ROUNDS; r++) {
    await round();
    await published_();
  }
  const after = await commandCalls();
  expect(await published()).toBe(expected);

  // The test's own INFO is not the path's.
  const calls = new Map<string, number>();
  for (const [c, n] of after) {
    const d = n - (before.get(c) ?? 0) - (c === 'info' ? 1 : 0);
    if (d > 0) calls.set(c, d);
  }
  const total = [...calls.values()].reduce((a, b) => a + b, 0);
  const perFact = total / facts;
  const breakdown = [...calls]
    .sort((a, b) => b[1] - a[1])
    .map(([c, n]) => `${c} ${(n / facts).toFixed(2)}`)
    .join(', ');
  process.stderr.write(
    `commands per fact: ${perFact.toFixed(2)} (${breakdown}); updates per fact ${((expected - updatesBefore) / facts).toFixed(2)}\n`,
  );
  expect(perFact).toBeLessThanOrEqual(MAX_COMMANDS_PER_FACT);
});
