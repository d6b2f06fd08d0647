import { taskKey } from '@baton/protocol';
import { randomBytes } from 'node:crypto';
import { startRedisCluster, type RedisClusterHandle } from '@baton/redis-server';
import { EventStore, isCluster } from '@baton/store';
import { startProjectorsAndGateway, type GatewayProc, type ServiceProc } from '@baton/testing';

type Json = Record<string, unknown>;

/** The projector's shard lease (@baton/testing spawnProjector: PROJECTOR_LEASE_TTL_MS). */
export const LEASE_MS = 2_000;

/** A prompt through a gateway's REST API, under `key` as its text and its idempotency key. */
export async function restPrompt(gatewayUrl: string, token: string, taskId: string, key: string) {
  const res = await fetch(`${gatewayUrl}/v1/tasks/${taskId}/sessions/s1/prompts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text: key, idempotencyKey: key }),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

/** The port of the master serving `key`'s slot, as the cluster sees it now. */
export async function masterPort(store: EventStore, key: string): Promise<number> {
  const r = store.redis;
  if (!isCluster(r)) throw new Error('not a cluster');
  const slot = Number(await r.call('CLUSTER', 'KEYSLOT', key));
  const ranges = (await r.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
  const range = ranges.find(([lo, hi]) => slot >= lo && slot <= hi);
  if (!range) throw new Error(`slot ${slot} has no master`);
  return Number(range[2][1]);
}

/** One task of `tenant` per shard, with the port of the master its shard lives on. */
export async function taskPerShard(store: EventStore, tenant: string, shards: number) {
  const tasks: { taskId: string; shard: number; port: number }[] = [];
  for (let i = 0; tasks.length < shards; i++) {
    const taskId = `t${i}`;
    const shard = store.shardOf(taskKey(tenant, taskId));
    if (tasks.some((t) => t.shard === shard)) continue;
    tasks.push({ taskId, shard, port: await masterPort(store, store.keys.lease(shard)) });
  }
  return tasks;
}

/** Shards a projector's log says it lost the lease of (one line may name several). */
export function leasesLostIn(output: string): number[] {
  return output
    .split('\n')
    .filter((l) => l.includes('lease lost'))
    .flatMap((l) => {
      const line = JSON.parse(l) as { shard?: number; shards?: number[] };
      return line.shards ?? [line.shard!];
    });
}

export interface ClusterBaton {
  cluster: RedisClusterHandle;
  /** For the test's own reads. */
  store: EventStore;
  projectors: ServiceProc[];
  gateway: GatewayProc;
  /** The env the gateway was started with, for another one like it. */
  gatewayEnv: Record<string, string>;
  /** What the projectors were started with: another one joins with it. */
  projectorEnv: Record<string, string>;
  /** A prompt over the gateway's REST API to session s1, under `key` (restPrompt). */
  prompt(token: string, taskId: string, key: string): ReturnType<typeof restPrompt>;
  /** The port of the master serving `key`'s slot now. */
  masterPort(key: string): Promise<number>;
  /** One task of `tenant` per shard, with the port of its shard's master. */
  taskPerShard(tenant: string): ReturnType<typeof taskPerShard>;
  stop(): Promise<void>;
}

/**
 * A Redis Cluster of three masters that keeps serving the live masters' slots while one is lost
 * (`cluster-require-full-coverage no`), and Baton on it: projectors and a gateway, each a real
 * process, with every shard owned.
 */
export async function clusterWithProjectors(o: {
  shards: number;
  projectors?: number;
  replicas?: number;
  nodeTimeoutMs?: number;
  projectorEnv?: Record<string, string>;
  gatewayEnv?: Record<string, string>;
}): Promise<ClusterBaton> {
  const cluster = await startRedisCluster(3, {
    requireFullCoverage: false,
    ...(o.replicas === undefined ? {} : { replicas: o.replicas }),
    ...(o.nodeTimeoutMs === undefined ? {} : { nodeTimeoutMs: o.nodeTimeoutMs }),
  });
  const prefix = `c${randomBytes(3).toString('hex')}`;
  const store = EventStore.connect({ cluster: cluster.nodes }, { shards: o.shards, prefix });
  const env = {
    REDIS_URL: `redis+cluster://${cluster.nodes.map((n) => `${n.host}:${n.port}`).join(',')}`,
    BATON_PREFIX: prefix,
    BATON_SHARDS: String(o.shards),
  };
  // A load test of failover, not of the tenant's request rate.
  const gatewayEnv = { ...env, GATEWAY_MAX_REQUESTS_PER_SECOND: '1000000', ...o.gatewayEnv };
  const projectorEnv = { ...env, ...o.projectorEnv };
  const { projectors, gateway } = await startProjectorsAndGateway({
    projectors: Array.from({ length: o.projectors ?? 1 }, () => projectorEnv),
    gateway: gatewayEnv,
  });
  return {
    cluster,
    store,
    projectors,
    gateway,
    gatewayEnv,
    projectorEnv,
    prompt: (token, taskId, key) => restPrompt(gateway.url, token, taskId, key),
    masterPort: (key) => masterPort(store, key),
    taskPerShard: (tenant) => taskPerShard(store, tenant, o.shards),
    stop: async () => {
      await Promise.all([gateway.stop(), ...projectors.map((p) => p.stop())]);
      await store.close();
      await cluster.stop();
    },
  };
}
