import { taskKey } from '@baton/protocol';
import { within } from '@baton/health';
import { isCluster } from '@baton/store';
import {
  spawnGateway,
  spawnProjector,
  token,
  waitFor,
  type GatewayProc,
  type ServiceProc,
} from '@baton/testing';
import {
  LEASE_MS,
  clusterWithProjectors,
  leasesLostIn,
  restPrompt,
  type ClusterBaton,
} from './support';

/**
 * A Cluster of three masters without replicas, one of them killed (SIGKILL) for
 * longer than the cluster's node timeout (so the others mark it failed, as in production). Only
 * that master's shards may be affected. The master killed holds the projectors' heartbeat key and
 * the tenant's task list, the keys every shard's work would otherwise lean on.
 */

jest.setTimeout(180_000);

const SHARDS = 12;
/** GATEWAY_STORE_TIMEOUT_MS: the bound a request on the dead master's shards is answered within. */
const STORE_BOUND_MS = 1_000;
/** cluster-node-timeout: past it the live masters mark the dead one failed. */
const NODE_TIMEOUT_MS = 2_000;
/** PROJECTOR_ and GATEWAY_SHUTDOWN_TIMEOUT_MS: a stop waiting on the dead master gives up then. */
const SHUTDOWN_MS = 2_000;

let baton: ClusterBaton;
/** A gateway started while the master is down. */
let lateGateway: GatewayProc | undefined;

beforeAll(async () => {
  baton = await clusterWithProjectors({
    shards: SHARDS,
    projectors: 2,
    nodeTimeoutMs: NODE_TIMEOUT_MS,
    projectorEnv: { LOG_LEVEL: 'info', PROJECTOR_SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_MS) },
    gatewayEnv: {
      GATEWAY_STORE_TIMEOUT_MS: String(STORE_BOUND_MS),
      GATEWAY_SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_MS),
    },
  });
});
afterAll(async () => {
  await lateGateway?.stop();
  await baton?.stop();
});

interface Readyz {
  status: string;
  redis: string;
  shards: { total: number; owned: number; unowned: number[]; unreachable?: number[] };
}

const readyz = async (url = baton.gateway.url) => {
  const r = await fetch(`${url}/readyz`);
  return { status: r.status, body: (await r.json()) as Readyz };
};

/** A tenant whose task list lives on the master at `port`. */
async function tenantOn(port: number): Promise<string> {
  const { store } = baton;
  for (let i = 0; ; i++) {
    const tenant = `acme${i}`;
    if ((await baton.masterPort(store.keys.tenantTasks(tenant))) === port) return tenant;
  }
}

/** `count` task ids of `tenant` whose shard is in `shards`, none of them used before. */
function freshTasks(tenant: string, prefix: string, shards: Set<number>, count: number) {
  const out: { taskId: string; shard: number }[] = [];
  for (let i = 0; out.length < count; i++) {
    const taskId = `${prefix}${i}`;
    const shard = baton.store.shardOf(taskKey(tenant, taskId));
    if (shards.has(shard)) out.push({ taskId, shard });
  }
  return out;
}

/** The instance id a projector logs under. */
function instanceOf(p: ServiceProc): string {
  const line = p
    .output()
    .split('\n')
    .find((l) => l.includes('"instance"'));
  return (JSON.parse(line!) as { instance: string }).instance;
}

/** Shards whose leases a projector logged as lost since `from` (an offset in each output). */
function leasesLost(from: number[]): number[] {
  return baton.projectors.flatMap((p, i) => leasesLostIn(p.output().slice(from[i])));
}

it('one master of three killed past the node timeout: only its shards stop, and answer in time', async () => {
  const { cluster, store, projectors } = baton;
  const victimPort = await baton.masterPort(store.keys.projectors());
  const victim = cluster.servers.find((s) => s.port === victimPort)!;
  const tenant = await tenantOn(victimPort);
  const tok = token({ tenant, scope: 'read prompt' });
  const prompt = (taskId: string, key: string) => baton.prompt(tok, taskId, key);
  const shardPort = new Map<number, number>();
  for (let s = 0; s < SHARDS; s++) shardPort.set(s, await baton.masterPort(store.keys.lease(s)));
  const onVictim = (want: boolean) =>
    new Set([...shardPort].filter(([, p]) => (p === victimPort) === want).map(([s]) => s));
  const deadShards = onVictim(true);
  const liveShards = onVictim(false);
  expect(deadShards.size).toBeGreaterThan(0);
  expect(liveShards.size).toBeGreaterThan(0);

  // Tasks written before the kill, one per shard: the gateway knows them as the tenant's.
  const known = freshTasks(tenant, 'k', new Set(shardPort.keys()), SHARDS * 8).filter(
    (t, i, all) => all.findIndex((u) => u.shard === t.shard) === i,
  );
  expect(known).toHaveLength(SHARDS);
  for (const t of known) {
    expect(await prompt(t.taskId, `${t.taskId}-before`)).toMatchObject({
      status: 200,
      body: { status: 'decided' },
    });
  }
  const logFrom = projectors.map((p) => p.output().length);

  await victim.kill();
  // The live masters mark it failed past the node timeout, as a production Cluster does.
  await waitFor(async () => {
    const r = store.redis;
    if (!isCluster(r)) throw new Error('not a cluster');
    const live = r.nodes('master').find((n) => n.options.port !== victimPort)!;
    const nodes = String(await live.call('CLUSTER', 'NODES'));
    return nodes.split('\n').some((l) => l.includes(`:${victimPort}@`) && /\bfail\b/.test(l));
  }, 'the dead master marked failed');

  // For several leases from then: every answer is checked, none retried.
  let decided = 0;
  let unavailable = 0;
  /** Answers for the dead master's tasks later than the bound the issue promises (2 s). */
  let late = 0;
  let slowestMs = 0;
  const from = Date.now();
  for (let round = 0; round < 2 || Date.now() - from < 3 * LEASE_MS; round++) {
    const live = [
      ...known.filter((t) => liveShards.has(t.shard)),
      // Tasks never written before: their first prompt records them as the tenant's.
      ...freshTasks(tenant, `f${round}-`, liveShards, 2),
    ];
    for (const t of live) {
      expect(await prompt(t.taskId, `${t.taskId}-during-${round}`)).toMatchObject({
        status: 200,
        body: { status: 'decided' },
      });
      decided++;
    }
    const dead = [
      ...known.filter((t) => deadShards.has(t.shard)),
      ...freshTasks(tenant, `g${round}-`, deadShards, 1),
    ];
    for (const t of dead) {
      const asked = performance.now();
      const a = await prompt(t.taskId, `${t.taskId}-during-${round}`);
      const tookMs = performance.now() - asked;
      expect(a).toMatchObject({ status: 503, body: { error: { code: 'unavailable' } } });
      unavailable++;
      slowestMs = Math.max(slowestMs, tookMs);
      if (tookMs > 2 * STORE_BOUND_MS) late++;
    }
    // Readiness names what is lost and nothing else; the gateway keeps serving the rest.
    const ready = await readyz();
    expect(ready).toEqual({
      status: 200,
      body: {
        status: 'ready',
        redis: 'degraded',
        updates: 'following',
        shards: {
          total: SHARDS,
          owned: liveShards.size,
          unowned: [],
          unreachable: [...deadShards].sort((a, b) => a - b),
        },
      },
    });
  }
  // GATEWAY_STORE_TIMEOUT_MS is the one wait such an answer may have; twice it is the 2 s bound.
  expect(late).toBe(0);
  const dropped = leasesLost(logFrom).filter((s) => !deadShards.has(s));
  expect(dropped).toEqual([]);

  // A gateway started while the master is down serves the live masters' tasks.
  lateGateway = await spawnGateway(baton.gatewayEnv);
  const lateUrl = lateGateway.url;
  await waitFor(
    async () => (await readyz(lateUrl)).status === 200,
    'a gateway started meanwhile ready',
    10 * LEASE_MS,
  );
  for (const t of known) {
    const a = await restPrompt(lateUrl, tok, t.taskId, `${t.taskId}-late-gateway`);
    if (liveShards.has(t.shard)) {
      expect(a).toMatchObject({ status: 200, body: { status: 'decided' } });
    } else expect(a).toMatchObject({ status: 503, body: { error: { code: 'unavailable' } } });
  }

  // A projector lost while the master is down: the other takes its live shards over, so the
  // balancing of every shard does not wait on the master that holds the instance set.
  const gone = projectors[1]!;
  const goneId = instanceOf(gone);
  await gone.stop('SIGKILL');
  const lostAt = Date.now();
  await waitFor(
    async () => {
      for (const s of liveShards) {
        const lease = await store.leases.read(s);
        if (!lease || lease.owner === goneId) return false;
      }
      return true;
    },
    'the live shards of the killed projector taken over',
    10 * LEASE_MS,
  );
  const takeoverMs = Date.now() - lostAt;
  // The lease is written before the new owner has caught its tasks up, so a first answer may be
  // 202 pending (the REST wait ran out); the same idempotency key then reads the decision.
  for (const t of known.filter((k) => liveShards.has(k.shard))) {
    const key = `${t.taskId}-after-takeover`;
    const first = await prompt(t.taskId, key);
    expect([200, 202]).toContain(first.status);
    await waitFor(
      async () => {
        const a = first.status === 200 ? first : await prompt(t.taskId, key);
        return a.status === 200 && a.body.status === 'decided';
      },
      `${key} decided by the new owner`,
      10 * LEASE_MS,
    );
  }

  // Stopped while the master is down (SIGTERM, as an orchestrator stops a pod), a gateway and a
  // projector exit within their shutdown bound rather than wait for the master to come back.
  const stillRunning = 'still running past its shutdown bound';
  const exits = await Promise.all(
    [lateGateway, projectors[0]!].map((p) => within(p.stop(), 4 * SHUTDOWN_MS, stillRunning)),
  );
  expect(exits).not.toContain(stillRunning);

  await victim.restart();
  const back = Date.now();
  projectors[0] = await spawnProjector({ ...baton.projectorEnv });
  for (const t of known.filter((k) => deadShards.has(k.shard))) {
    await waitFor(
      async () => {
        const a = await prompt(t.taskId, `${t.taskId}-back`);
        return a.status === 200 && a.body.status === 'decided';
      },
      `${t.taskId} decides once its master is back`,
      60_000,
    );
  }
  console.log(
    `cluster, 1 of 3 masters killed past the node timeout (${deadShards.size} of ${SHARDS} ` +
      `shards on it, with the instance set and the tenant's older task list): live shards ` +
      `decided ${decided}/${decided} prompts, dead shards answered unavailable ` +
      `${unavailable}/${unavailable} (slowest ${Math.round(slowestMs)} ms, bound ` +
      `${STORE_BOUND_MS} ms), leases of live shards dropped ${dropped.length}; a projector ` +
      `killed meanwhile: its live shards taken over in ${takeoverMs} ms; back: every dead shard ` +
      `deciding ${Date.now() - back} ms after the master restarted`,
  );
});
