// Proofs with real projector processes and a real redis-server: kill -9 under traffic, and a
// paused projector (SIGSTOP past its leases) that resumes.
import { waitFor } from '@baton/testing';
import { freshPrefix, redisForFile } from './support';
import { Traffic, counts, drainAndCheck, drive, owners, simTasks, stopAllTraffic } from './traffic';

jest.setTimeout(240_000);

const redis = redisForFile({ beforeStop: stopAllTraffic });

it('kill -9 of one of three projectors under traffic: its shards are taken over, updates stay gapless, views equal a fresh fold', async () => {
  const prefix = freshPrefix();
  const SHARDS = 12;
  const store = redis.store(prefix, SHARDS);
  const ps = ['a', 'b', 'c'].map((n) => redis.spawn({ prefix, shards: SHARDS, id: `fo-${n}` }));
  const ids = ps.map((p) => p.id);
  await waitFor(async () => {
    const c = counts(await owners(store), ids);
    return c.every((n) => n === SHARDS / 3);
  }, 'three projectors share the shards');

  const traffic = new Traffic(store, simTasks('fo', 200), 'fo');
  await traffic.startExecutions();
  const stop = drive(traffic, 15);
  await waitFor(() => traffic.turnsEnded > 100, 'traffic flowing', 60_000);

  const victim = ps[0]!;
  const victimShards = [...(await owners(store))]
    .filter(([, o]) => o === victim.id)
    .map(([s]) => s);
  expect(victimShards).toHaveLength(SHARDS / 3);
  const killedAt = Date.now();
  victim.signal('SIGKILL');
  await victim.exited;
  await waitFor(
    async () => {
      const o = await owners(store);
      return victimShards.every((s) => o.has(s) && o.get(s) !== victim.id);
    },
    "the killed projector's shards owned again",
    30_000,
  );
  const takeoverMs = Date.now() - killedAt;
  const turnsAtTakeover = traffic.turnsEnded;
  await waitFor(
    () => traffic.turnsEnded > turnsAtTakeover + 100,
    'traffic flowing after the takeover',
    60_000,
  );
  await stop();

  await drainAndCheck(store, traffic, ps, SHARDS);
  const o = await owners(store);
  expect(counts(o, ids.slice(1))).toEqual([SHARDS / 2, SHARDS / 2]);
  console.log(
    `failover: shards of the killed projector owned again ${takeoverMs} ms after kill -9 (lease 1000 ms); ` +
      `${traffic.submitted} prompts, ${traffic.duplicateDeliveries} re-deliveries ignored by the worker`,
  );
});

it('fencing: a projector paused past its leases writes nothing under them once resumed, notices and drops them', async () => {
  const prefix = freshPrefix();
  const SHARDS = 8;
  const store = redis.store(prefix, SHARDS);
  const a = redis.spawn({ prefix, shards: SHARDS, id: 'fe-a' });
  const b = redis.spawn({ prefix, shards: SHARDS, id: 'fe-b' });
  await waitFor(
    async () => counts(await owners(store), [a.id, b.id]).every((n) => n === SHARDS / 2),
    'two projectors share the shards',
  );
  const started = await a.waitForLog((l) => l.msg === 'projector started', 'start');
  const metricsPort = started.metricsPort as number;

  const traffic = new Traffic(store, simTasks('fe', 60), 'fe');
  await traffic.startExecutions();
  const stop = drive(traffic, 6);
  await waitFor(() => traffic.turnsEnded > 50, 'traffic flowing', 60_000);

  const aShards = [...(await owners(store))].filter(([, o]) => o === a.id).map(([s]) => s);
  a.signal('SIGSTOP');
  await waitFor(
    async () => {
      const o = await owners(store);
      return aShards.every((s) => o.get(s) === b.id);
    },
    "the paused projector's shards taken over",
    30_000,
  );
  // Traffic for its former shards piles up in its sockets while it sleeps.
  const turns = traffic.turnsEnded;
  await waitFor(() => traffic.turnsEnded > turns + 50, 'traffic flowing without it', 60_000);
  a.signal('SIGCONT');
  await waitFor(
    () =>
      aShards.every((s) =>
        a.logs.some(
          (l) =>
            l.msg.startsWith('lease lost') &&
            (l.shard === s || (l.shards as number[] | undefined)?.includes(s)),
        ),
      ),
    'the resumed projector noticed every lost lease',
    30_000,
  );
  // It rejoins and gets its share back, under new epochs.
  await waitFor(
    async () => counts(await owners(store), [a.id, b.id]).every((n) => n === SHARDS / 2),
    'balanced again',
  );
  await stop();
  await drainAndCheck(store, traffic, [a, b], SHARDS);

  const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const lost = Number(
    /baton_projector_lease_changes_total\{change="lost"\} (\d+)/.exec(metrics)?.[1] ?? 0,
  );
  expect(lost).toBeGreaterThanOrEqual(aShards.length);
  const fenced = /baton_projector_fenced_writes_total\{[^}]*\} (\d+)/g;
  let fencedWrites = 0;
  for (const m of metrics.matchAll(fenced)) fencedWrites += Number(m[1]);
  console.log(
    `fencing: resumed projector lost ${lost} leases; ${fencedWrites} of its writes were refused by the fence`,
  );
});
