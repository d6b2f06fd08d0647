import { token, waitFor } from '@baton/testing';
import { LEASE_MS, clusterWithProjectors, leasesLostIn, type ClusterBaton } from './support';

/**
 * On a Redis Cluster, losing one master costs only the shards that live on it.
 * Three masters (`cluster-require-full-coverage no`, so the others keep serving their slots), a
 * real projector and a real gateway. The master killed is the one holding the projectors'
 * heartbeat key (every ownership round writes it: a round that waited on it would stall every
 * shard), the worst one to lose.
 * What must survive: tasks on the two live masters keep deciding and publishing (a prompt is
 * answered with its decision, which the gateway learns from the published update), and their
 * shards' leases are never dropped; the dead master's tasks answer `unavailable`, quickly; once
 * the master is back, its tasks decide again, by themselves.
 */

jest.setTimeout(180_000);

const SHARDS = 12;
const TENANT = 'acme';
const tok = token({ tenant: TENANT, scope: 'read prompt' });

let baton: ClusterBaton;

beforeAll(async () => {
  baton = await clusterWithProjectors({
    shards: SHARDS,
    projectorEnv: { LOG_LEVEL: 'info' },
    gatewayEnv: { GATEWAY_STORE_TIMEOUT_MS: '1000' },
  });
});
afterAll(() => baton?.stop());

const prompt = (taskId: string, key: string) => baton.prompt(tok, taskId, key);

it('one master of three lost: the others keep deciding, its tasks answer unavailable, and come back', async () => {
  const { cluster, store, projectors } = baton;
  const projector = projectors[0]!;
  // One task per shard, and the master each shard lives on.
  const tasks = await baton.taskPerShard(TENANT);
  const victimPort = await baton.masterPort(store.keys.projectors());
  const victim = cluster.servers.find((s) => s.port === victimPort)!;
  const dead = tasks.filter((t) => t.port === victimPort);
  const live = tasks.filter((t) => t.port !== victimPort);
  expect(live.length).toBeGreaterThan(0);
  expect(dead.length).toBeGreaterThan(0);
  for (const t of tasks) {
    expect(await prompt(t.taskId, `${t.taskId}-before`)).toMatchObject({
      status: 200,
      body: { status: 'decided' },
    });
  }
  const logFrom = projector.output().length;

  await victim.kill();
  const killed = Date.now();
  // The live masters' tasks decide, every one of them, again and again, for several lease
  // periods: long enough for a lease that was not renewed to lapse.
  let attempts = 0;
  let decided = 0;
  let firstDecidedMs: number | undefined;
  for (let round = 0; round < 3 || Date.now() - killed < 4 * LEASE_MS; round++) {
    for (const t of live) {
      const r = await waitFor(async () => {
        attempts++;
        const a = await prompt(t.taskId, `${t.taskId}-during-${round}`);
        return a.status === 200 ? a : undefined;
      }, `${t.taskId} decides with a master down`);
      expect(r.body).toMatchObject({ status: 'decided' });
      decided++;
      firstDecidedMs ??= Date.now() - killed;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  // The dead master's tasks: unavailable (retryable), never internal, never a hang.
  for (const t of dead) {
    expect(await prompt(t.taskId, `${t.taskId}-during`)).toMatchObject({
      status: 503,
      body: { error: { code: 'unavailable' } },
    });
  }
  // No lease of a live master's shard was dropped.
  const deadShards = new Set(dead.map((t) => t.shard));
  const dropped = leasesLostIn(projector.output().slice(logFrom));
  expect(dropped.filter((s) => !deadShards.has(s))).toEqual([]);

  await victim.restart();
  const back = Date.now();
  for (const t of dead) {
    const r = await waitFor(
      async () => {
        attempts++;
        const a = await prompt(t.taskId, `${t.taskId}-after`);
        return a.status === 200 ? a : undefined;
      },
      `${t.taskId} decides once its master is back`,
      60_000,
    );
    expect(r.body).toMatchObject({ status: 'decided' });
  }
  const recoverMs = Date.now() - back;
  console.log(
    `cluster, 1 of 3 masters killed (${dead.length} of ${SHARDS} shards on it): live shards ` +
      `decided ${decided} prompts (first ${firstDecidedMs} ms after the kill), ` +
      `leases of live shards dropped ${dropped.filter((s) => !deadShards.has(s)).length}; ` +
      `dead shards answered unavailable ${dead.length}/${dead.length}; ` +
      `back: every dead shard deciding ${recoverMs} ms after the master restarted; ` +
      `attempts ${attempts}`,
  );
});
