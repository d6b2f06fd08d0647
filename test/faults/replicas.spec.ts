import { taskKey } from '@baton/protocol';
import Redis from 'ioredis';
import { readAll, token, waitFor } from '@baton/testing';
import { LEASE_MS, clusterWithProjectors, type ClusterBaton } from './support';

/**
 * A Cluster of 3 masters, each with 2 replicas, loses a master under load. A
 * replica is promoted by the cluster (the other one follows it) and Baton resumes on it by itself
 * (no process restarted, nothing done by hand). Replication is asynchronous, so the gateway
 * acknowledges a client's command only once a replica has it (GATEWAY_ACK_REPLICAS=1, Redis
 * WAIT): what must survive is every prompt that was acknowledged — each is in its task stream,
 * decided exactly once, after the failover. Prompts answered `unavailable` meanwhile are retried
 * with their keys, as clients do, and are then acknowledged too. (With one replica per master,
 * the promoted one has none left to confirm a write: its shards answer `unavailable` until a
 * replica is back — durability over availability, docs/deploying.md, "Durability and availability".)
 */

jest.setTimeout(180_000);

const SHARDS = 6;
const TENANT = 'acme';
const NODE_TIMEOUT_MS = 1_000;
const tok = token({ tenant: TENANT, scope: 'read prompt' });

let baton: ClusterBaton;

beforeAll(async () => {
  baton = await clusterWithProjectors({
    shards: SHARDS,
    replicas: 2,
    nodeTimeoutMs: NODE_TIMEOUT_MS,
    gatewayEnv: { GATEWAY_STORE_TIMEOUT_MS: '1000', GATEWAY_ACK_REPLICAS: '1' },
  });
});
afterAll(() => baton?.stop());

const prompt = (taskId: string, key: string) => baton.prompt(tok, taskId, key);

it('a master killed under load: its replica takes over, Baton resumes by itself, no acknowledged prompt is lost', async () => {
  const { cluster, store, gateway } = baton;
  const projector = baton.projectors[0]!;
  const tasks = await baton.taskPerShard(TENANT);
  const victimPort = tasks[0]!.port;
  const victim = cluster.servers.find((s) => s.port === victimPort)!;
  const failed = tasks.filter((t) => t.port === victimPort);

  // Load: every task gets prompts one after another, under fresh keys, from before the kill
  // until every task on the failed master has decided again after it.
  const acknowledged = new Map<string, string>(); // key -> taskId
  const decidedAt: { taskId: string; at: number }[] = [];
  const unanswered: { taskId: string; key: string }[] = [];
  const wrong: unknown[] = [];
  let attempts = 0;
  const statuses: unknown[] = [];
  let n = 0;
  let stop = false;
  const load = Promise.all(
    tasks.map(async (t) => {
      while (!stop) {
        const key = `${t.taskId}-${n++}`;
        attempts++;
        const r = await prompt(t.taskId, key);
        if (failed.some((f) => f.taskId === t.taskId)) statuses.push({ key, ...r });
        // 200: decided; 202: acknowledged, its decision still to come (pending).
        if (r.status === 200 || r.status === 202) acknowledged.set(key, t.taskId);
        if (r.status === 200) decidedAt.push({ taskId: t.taskId, at: Date.now() });
        else if (r.status !== 202) {
          // Anything but `unavailable` is a wrong answer; it is kept (not thrown, which would
          // silently end this task's load) and checked once the load is over.
          const code = (r.body.error as { code?: string } | undefined)?.code;
          if (r.status !== 503 || code !== 'unavailable') wrong.push({ key, ...r });
          unanswered.push({ taskId: t.taskId, key });
          await new Promise((res) => setTimeout(res, 100));
        }
      }
    }),
  );
  await waitFor(async () => acknowledged.size >= 30, 'load running');
  const beforeKill = acknowledged.size;
  await victim.kill();
  const killed = Date.now();
  // Resumed: each task of the failed master has a prompt decided after the kill.
  await waitFor(
    async () => {
      const after = decidedAt.filter((d) => d.at > killed).map((d) => d.taskId);
      return failed.every((t) => after.includes(t.taskId));
    },
    'the failed master’s tasks deciding again',
    90_000,
  ).catch((err: unknown) => {
    const warn = (o: string) =>
      o
        .split('\n')
        .filter((l) => /"level":(40|50)/.test(l))
        .slice(-15)
        .join('\n');
    console.log(`projector:\n${warn(projector.output())}\ngateway:\n${warn(gateway.output())}`);
    console.log(JSON.stringify(statuses.slice(-10)));
    throw err;
  });
  const resumedMs = Date.now() - killed;
  expect(await baton.masterPort(store.keys.lease(failed[0]!.shard))).not.toBe(victimPort);
  stop = true;
  await load;
  expect(wrong).toEqual([]);

  // Clients retry what was not acknowledged, with the same keys.
  for (const u of unanswered) {
    await waitFor(async () => (await prompt(u.taskId, u.key)).status === 200, `${u.key} retried`);
    acknowledged.set(u.key, u.taskId);
  }
  // Every acknowledged prompt is in its stream, decided exactly once.
  let lost = 0;
  let duplicated = 0;
  for (const t of tasks) {
    const entries = await readAll(store, taskKey(TENANT, t.taskId));
    const keyOf = new Map<string, string>();
    for (const e of entries) {
      if (e.type === 'prompt.submit') keyOf.set(e.data.promptId, e.data.idempotencyKey);
    }
    const made = new Map<string, number>();
    for (const e of entries) {
      if (
        e.type === 'prompt.admitted' ||
        e.type === 'prompt.queued' ||
        e.type === 'prompt.rejected'
      ) {
        const k = keyOf.get(e.data.promptId)!;
        made.set(k, (made.get(k) ?? 0) + 1);
      }
    }
    for (const [key, taskId] of acknowledged) {
      if (taskId !== t.taskId) continue;
      const c = made.get(key) ?? 0;
      if (c === 0) lost++;
      if (c > 1) duplicated++;
    }
  }
  console.log(
    `cluster 3 masters × 2 replicas, master of ${failed.length} of ${SHARDS} shards killed under load: attempts ` +
      `${attempts + unanswered.length}, acknowledged ${acknowledged.size} (${beforeKill} before ` +
      `the kill), answered unavailable then retried ${unanswered.length}, lost ${lost}, ` +
      `duplicated ${duplicated}; resumed ${resumedMs} ms after the kill (node timeout ` +
      `${NODE_TIMEOUT_MS} ms + lease ${LEASE_MS} ms = ${NODE_TIMEOUT_MS + LEASE_MS} ms)`,
  );
  expect({ lost, duplicated }).toEqual({ lost: 0, duplicated: 0 });
});

it('a write no replica confirmed is not acknowledged: unavailable, and the retry under its key makes it once', async () => {
  const { cluster, store } = baton;
  const taskId = 'unconfirmed';
  const lease = store.keys.lease(store.shardOf(taskKey(TENANT, taskId)));
  const port = await baton.masterPort(lease);
  // The master's replicas, as the master itself sees them: after the first test's failover the
  // promoted master gets its replicas back only once they have reconfigured and synced, and
  // another node's CLUSTER NODES may still show the old topology. Every replica it lists must be
  // online (else one that comes online while the others are paused would confirm the write).
  const replicaPorts = await waitFor(async () => {
    const { listed, online } = await replicasOf(port);
    return listed.length > 0 && listed.every((p) => online.includes(p)) ? online : undefined;
  }, `every replica of the master on ${port} online`);
  const replicas = cluster.servers.filter((s) => replicaPorts.includes(s.port));
  expect(replicas.length).toBe(replicaPorts.length);

  for (const s of replicas) s.pause();
  try {
    expect(await prompt(taskId, 'k')).toMatchObject({
      status: 503,
      body: { error: { code: 'unavailable' } },
    });
  } finally {
    for (const s of replicas) s.resume();
  }
  const retried = await waitFor(async () => {
    const a = await prompt(taskId, 'k');
    return a.status === 200 ? a : undefined;
  }, 'the retry acknowledged');
  expect(retried.body).toMatchObject({ status: 'decided', decision: { outcome: 'queued' } });
  const entries = await readAll(store, taskKey(TENANT, taskId));
  const submits = entries.filter((e) => e.type === 'prompt.submit');
  // The unconfirmed write did land on the master; the retry found it: one prompt.
  expect(
    entries.filter((e) => e.type === 'prompt.queued' || e.type === 'prompt.admitted'),
  ).toHaveLength(1);
  expect(submits.length).toBeGreaterThanOrEqual(1);
});

/**
 * The replicas of the master on `port` as it lists them (its own CLUSTER NODES, failed ones aside)
 * and those it reports online (INFO replication, `slaveN:...state=online`).
 */
async function replicasOf(port: number): Promise<{ listed: number[]; online: number[] }> {
  const master = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await master.connect();
    const nodes = String(await master.call('CLUSTER', 'NODES')).split('\n');
    const myId = nodes.find((l) => l.includes('myself'))!.split(' ')[0]!;
    const listed = nodes
      .filter((l) => l.split(' ')[3] === myId && !l.split(' ')[2]!.includes('fail'))
      .map((l) => Number(/:(\d+)@/.exec(l)![1]));
    const info = await master.info('replication');
    const online = [...info.matchAll(/^slave\d+:.*port=(\d+),state=online/gm)].map((m) =>
      Number(m[1]),
    );
    return { listed, online };
  } finally {
    master.disconnect();
  }
}
