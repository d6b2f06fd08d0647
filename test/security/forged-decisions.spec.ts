// A stolen worker credential may append to task streams (facts are its job), so it can append an
// entry shaped like an owner's decision. Under the compose file's Redis users, with a real
// projector and gateway, such an entry never counts: the owner's fold dead-letters every decision
// whose fence is not a lease the shard had, or is older than the last decision's.
import { startRedis, type RedisServer } from '@baton/redis-server';
import { SCHEMA_VERSION } from '@baton/protocol';
import { KeyLayout } from '@baton/store';
import { Redis } from 'ioredis';
import {
  everyShardOwned,
  spawnGateway,
  spawnProjector,
  tokenFor,
  waitFor,
  type GatewayProc,
  type ServiceProc,
} from '@baton/testing';
import { COMPOSE_SECRETS, composeRedisArgs, composeRedisUrl, type Role } from '../compose-file';

jest.setTimeout(120_000);

const SHARDS = 2;
const keys = new KeyLayout(SHARDS, 'baton');
const TASK = 't-forged';
const KEY = `acme/${TASK}`;
const shard = keys.shardOf(KEY);
const token = tokenFor('acme');

let redis: RedisServer;
let gateway: GatewayProc;
let projector: ServiceProc;
const opened: Redis[] = [];

const as = async (role: Role) => {
  const password = COMPOSE_SECRETS[`BATON_REDIS_${role.toUpperCase()}_PASSWORD`]!;
  const c = new Redis({ host: '127.0.0.1', port: redis.port, username: role, password });
  opened.push(c);
  return c;
};
const env = (role: Role) => ({
  REDIS_URL: composeRedisUrl(role, redis.url),
  BATON_PREFIX: 'baton',
  BATON_SHARDS: String(SHARDS),
});

beforeAll(async () => {
  redis = await startRedis({ args: composeRedisArgs() });
  projector = await spawnProjector(env('projector'));
  gateway = await spawnGateway({ ...env('gateway'), GATEWAY_ADMISSION_WAIT_MS: '10000' });
  await everyShardOwned(gateway, 60_000);
});
afterAll(async () => {
  for (const c of opened) c.disconnect();
  await gateway?.stop();
  await projector?.stop();
  await redis?.stop();
});

async function prompt(text: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${gateway.url}/v1/tasks/${TASK}/sessions/main/prompts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text, idempotencyKey: text }),
  });
  return { status: res.status, body: await res.json() };
}

async function taskStatus(): Promise<string> {
  const res = await fetch(`${gateway.url}/v1/tasks/${TASK}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const view = (await res.json()) as { status?: string };
  return String(view.status);
}

let forgedSeq = 0;
/** What a worker credential can write: a `task.deleted` "decision", with the fence it chooses. */
async function forgeTaskDeleted(fence?: { epoch: number; owner: string }): Promise<string> {
  const worker = await as('worker');
  const entry = {
    v: SCHEMA_VERSION,
    taskId: KEY,
    writer: { role: 'projector', instance: 'forger', seq: ++forgedSeq },
    type: 'task.deleted',
    data: {},
    ...(fence ? { fence } : {}),
  };
  const id = await worker.xadd(keys.taskStream(KEY), '*', 'e', JSON.stringify(entry));
  // The owner follows the shard's feed: a note wakes it as an append would.
  await worker.xadd(keys.feed(shard), '*', 't', KEY, 'l', id!);
  return id!;
}

async function deadLetterOf(id: string): Promise<string> {
  const projectorRedis = await as('projector');
  return waitFor(async () => {
    const dead = await projectorRedis.xrange(keys.deadLetters(shard), '-', '+');
    const hit = dead.find(([, f]) => f[f.indexOf('id') + 1] === id);
    return hit ? hit[1][hit[1].indexOf('reason') + 1] : undefined;
  }, `the forged decision ${id} dead-lettered`);
}

async function currentLease(): Promise<{ epoch: number; owner: string }> {
  const projectorRedis = await as('projector');
  const [owner, epoch] = await projectorRedis.hmget(keys.lease(shard), 'owner', 'epoch');
  return { epoch: Number(epoch), owner: owner! };
}

it("refuses decisions a worker's credential forges: no fence, a lease never held, an older lease", async () => {
  expect(await prompt('first')).toMatchObject({
    status: 200,
    body: { status: 'decided', decision: { outcome: 'queued' } },
  });
  const first = await currentLease();

  // No fence at all.
  expect(await deadLetterOf(await forgeTaskDeleted())).toMatch(/carries no owner's fence/);
  // The current epoch, named with the worker as its owner; an epoch never handed out.
  expect(
    await deadLetterOf(await forgeTaskDeleted({ epoch: first.epoch, owner: 'worker-1' })),
  ).toMatch(new RegExp(`but epoch ${first.epoch} was`));
  expect(
    await deadLetterOf(await forgeTaskDeleted({ epoch: first.epoch + 50, owner: first.owner })),
  ).toMatch(/which the shard never had/);
  expect(await taskStatus()).toBe('active');

  // A new projector takes the shard; the first one's fence, replayed now, is an older lease's.
  await projector.stop();
  projector = await spawnProjector(env('projector'));
  await waitFor(async () => {
    const l = await currentLease();
    return l.epoch > first.epoch ? l : undefined;
  }, 'the shard taken again');
  expect(await prompt('second')).toMatchObject({
    status: 200,
    body: { status: 'decided', decision: { outcome: 'queued' } },
  });
  expect(await deadLetterOf(await forgeTaskDeleted(first))).toMatch(
    new RegExp(`epoch ${first.epoch}, older than epoch`),
  );

  // None of them counted: the task takes prompts, and queues them behind the first two.
  expect(await taskStatus()).toBe('active');
  expect(await prompt('third')).toMatchObject({
    status: 200,
    body: { status: 'decided', decision: { outcome: 'queued' } },
  });
});
