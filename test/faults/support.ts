import { taskKey } from '@baton/protocol';
import { isCluster, type EventStore } from '@baton/store';

type Json = Record<string, unknown>;

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
