import { BatonClient, type Subscription } from '@baton/client';
import type { TaskView } from '@baton/protocol';
import { startRedis, type RedisServer } from '@baton/redis-server';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startProjectorsAndGateway, token, waitFor, type Services } from '@baton/testing';
import { composeEnv, composeRedisArgs, type Role } from '../compose-file';

/**
 * Redis loses writes it had acknowledged — here, restarted from an older copy of its append-only
 * file, the compose file's own Redis with its ACL — while a client watches a task through the
 * client library. What the client was sent is then no longer the log's history: prompts it shows
 * are gone, and the seqs it holds are used again for other updates. It must be told (a snapshot
 * flagged resync) and end up showing exactly what the log holds, never the lost prompts.
 */

jest.setTimeout(180_000);

const SHARDS = 2;
const TENANT = 'acme';
const tok = token({ tenant: TENANT, scope: 'read prompt' });

let redis: RedisServer;
let services: Services;
const backup = mkdtempSync(join(tmpdir(), 'baton-aof-backup-'));

beforeAll(async () => {
  redis = await startRedis({ aof: true, args: composeRedisArgs() });
  const env = (role: Role) => composeEnv(role, redis.url, SHARDS);
  services = await startProjectorsAndGateway({
    projectors: [env('projector')],
    gateway: env('gateway'),
  });
});
afterAll(async () => {
  await services?.stop();
  await redis?.stop();
  rmSync(backup, { recursive: true, force: true });
});

const keysOf = (view: TaskView | null) =>
  view?.sessions.find((s) => s.sessionId === 's1')?.queue.entries.map((e) => e.idempotencyKey) ??
  [];

/** The queue as the log holds it now, read afresh through REST. */
async function served(): Promise<string[]> {
  const res = await fetch(`${services.gateway.url}/v1/tasks/t-div`, {
    headers: { authorization: `Bearer ${tok}` },
  });
  return keysOf((await res.json()) as TaskView);
}

it('a client watching a task whose history Redis lost is resynced to what the log holds', async () => {
  const client = new BatonClient();
  await client.connect(`${services.gateway.wsUrl}/ws`, tok);
  let resyncs = 0;
  const sub: Subscription = client.subscribe('t-div', { onResync: () => resyncs++ });
  await sub.ready;
  const prompt = (key: string) =>
    client.prompt({ taskId: 't-div', sessionId: 's1', text: key, idempotencyKey: key });

  // No execution: each prompt waits in the queue, and the client shows it.
  for (const k of ['k1', 'k2', 'k3']) await prompt(k);
  await waitFor(() => keysOf(sub.view).length === 3, 'three prompts shown');
  // Quiet for a moment (the owner's own writes done), then a copy of what Redis has on disk.
  await new Promise((r) => setTimeout(r, 500));
  cpSync(join(redis.dir, 'appendonlydir'), join(backup, 'appendonlydir'), { recursive: true });

  for (const k of ['k4', 'k5', 'k6']) await prompt(k);
  await waitFor(() => keysOf(sub.view).length === 6, 'six prompts shown');

  // Redis comes back from the older copy: k4..k6 were acknowledged, and are gone.
  await redis.kill();
  rmSync(join(redis.dir, 'appendonlydir'), { recursive: true, force: true });
  cpSync(join(backup, 'appendonlydir'), join(redis.dir, 'appendonlydir'), { recursive: true });
  await redis.restart();
  await waitFor(async () => (await served().catch(() => [])).length === 3, 'Redis back, older');

  // Life goes on: a new prompt. The client must now show what the log holds — k1..k3 and k7 —
  // and never again k4..k6.
  await waitFor(
    async () =>
      (await prompt('k7').then(
        () => true,
        () => false,
      )) || undefined,
    'k7 accepted',
    30_000,
  );
  const expected = ['k1', 'k2', 'k3', 'k7'];
  await waitFor(async () => (await served()).join() === expected.join(), 'the log holds k7');
  await waitFor(
    () => keysOf(sub.view).join() === expected.join(),
    `the client showing ${expected.join()}`,
    30_000,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; it shows ${keysOf(sub.view).join()}`);
  });
  expect(resyncs).toBeGreaterThanOrEqual(1);
  await client.close();
});
