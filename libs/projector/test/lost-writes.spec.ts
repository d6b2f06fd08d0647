// A Redis that loses acknowledged writes while an owner keeps its lease (a failover to a replica
// that had not received them, a restart from an older dump): a real redis-server saved, written
// to, killed with -9 and started again from its dump, under a real projector in this process.
// What must survive: the owner loads the task again from what Redis holds instead of deciding on
// entries that are gone (a conflict that would repeat for as long as nothing is appended), its
// snapshot never covers more than the stream holds, its updates stay gapless and its view the
// fold's, and the task goes on: a prompt submitted after the loss is admitted.
import { snapshotOf } from '@baton/activity';
import { startRedis, type RedisServer } from '@baton/redis-server';
import { EventStore, compareIds, connectRedis } from '@baton/store';
import { startProjector, type ProjectorHandle } from '../src/projector';
import { waitFor } from '@baton/testing';
import { Task, foldAll, freshPrefix, metricSum } from './support';

jest.setTimeout(60_000);

let redis: RedisServer;
let store: EventStore | undefined;
let projector: ProjectorHandle | undefined;

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await projector?.stop();
  if (store) {
    await store.close();
    store.redis.disconnect();
  }
  await redis?.stop();
});

const SHARDS = 2;

async function setup() {
  if (!store) {
    store = new EventStore(connectRedis({ url: redis.url }, { maxReconnectDelayMs: 50 }), {
      prefix: freshPrefix(),
      shards: SHARDS,
    });
    store.redis.on('error', () => undefined);
    projector = await startProjector({
      redisUrl: redis.url,
      prefix: store.keys.prefix,
      shards: SHARDS,
      periods: {
        // The lease outlives the outage: the same owner goes on after Redis comes back.
        shardLease: 30_000,
        leaseRenewal: 100,
        // The request's start bound is the owner's decision after the loss.
        executionStart: 2_000,
        // Snapshots often: one at entries that are gone would show.
        snapshotDelay: 200,
      },
      logLevel: 'silent',
    });
    await projector.ready();
  }
  const p = projector!;
  const metric = (name: string, labels: Record<string, string> = {}) =>
    metricSum(p.registry, name, labels);
  return { store, metric };
}

/** Kills Redis with -9 and starts it again from its last dump; resolves once it serves `kept`. */
async function loseWritesSince(store: EventStore, taskId: string, kept: string) {
  await redis.kill();
  await redis.restart();
  await waitFor(async () => {
    try {
      return (await store.lastId(taskId)) === kept;
    } catch {
      return false;
    }
  }, 'Redis back from its dump');
}

/**
 * A task whose prompt `key` waits for an execution, queued and published, and Redis's dump saved
 * right then: what a restart from that dump keeps. Resolves the task and its stream's last id.
 */
async function savedWithQueuedPrompt(store: EventStore, taskId: string, key: string) {
  const t = new Task(store, taskId);
  await t.submit(key);
  await waitFor(() => t.has('prompt.queued'), 'queued');
  await waitFor(async () => (await t.exact()).length === 0, 'published');
  await store.redis.save();
  return { t, kept: await store.lastId(taskId) };
}

const admitted = async (t: Task, key: string) =>
  (await t.stream()).some(
    (e) => e.entry.type === 'prompt.admitted' && e.entry.data.promptId === `p-${key}`,
  );

it('loads a task again from what Redis holds when Redis lost entries its owner had folded', async () => {
  const { store, metric } = await setup();

  // What Redis keeps: a prompt waiting for an execution.
  const { t, kept } = await savedWithQueuedPrompt(store, 'lost', 'a');

  // What it loses: an execution requested, and the owner's decision on it (folded by the owner).
  await t.command('execution.request', { commandId: 'c-x', executionId: 'lost-x1' });
  await waitFor(() => t.has('execution.requested'), 'requested');
  await loseWritesSince(store, 'lost', kept);
  expect(await t.has('execution.requested')).toBe(false);

  // The start bound comes due: the owner, deciding on what it folded, finds the stream behind it.
  await waitFor(async () => {
    return (await metric('baton_projector_errors_total', { op: 'redis_lost_writes' })) > 0;
  }, 'the owner found Redis behind it');
  // Once past the bound, the owner has nothing to decide on what Redis holds: no conflicts
  // repeat, nothing is appended, and no snapshot covers entries that are gone.
  await new Promise((r) => setTimeout(r, 2_500));
  const conflicts = await metric('baton_projector_decisions_total', { outcome: 'conflict' });
  expect(conflicts).toBeLessThanOrEqual(1);
  await new Promise((r) => setTimeout(r, 500));
  expect(await metric('baton_projector_decisions_total', { outcome: 'conflict' })).toBe(conflicts);
  expect(await store.lastId('lost')).toBe(kept);
  const snap = await store.snapshots.read('lost');
  if (snap) expect(compareIds(snap.id, kept)).toBeLessThanOrEqual(0);
  expect(await t.exact()).toEqual([]);

  // The task goes on: an execution starts and the waiting prompt is admitted to it, gapless.
  await t.start();
  await waitFor(() => admitted(t, 'a'), 'admitted');
  await waitFor(async () => (await t.exact()).length === 0, 'published');
});

it('publishes gapless from what Redis holds when Redis lost entries and updates its owner had published', async () => {
  const { store, metric } = await setup();
  const lost = await metric('baton_projector_errors_total', { op: 'redis_lost_writes' });

  // What Redis keeps: a prompt waiting for an execution.
  const { t, kept } = await savedWithQueuedPrompt(store, 'unpublished', 'b');

  // What it loses: a second prompt, queued and published by the owner.
  await t.submit('c');
  await waitFor(async () => (await t.stream()).length === 4, 'the second queued');
  await waitFor(async () => (await t.exact()).length === 0, 'published');
  await loseWritesSince(store, 'unpublished', kept);

  // An execution starts: the owner folds it after what it holds and admits the first prompt, with
  // updates numbered after those Redis lost; Redis answers with a gap, and the owner loads the task
  // again and admits it from what Redis holds.
  await t.start();
  await waitFor(() => admitted(t, 'b'), 'admitted');
  expect(await metric('baton_projector_errors_total', { op: 'redis_lost_writes' })).toBe(lost + 1);
  expect((await t.stream()).some((e) => JSON.stringify(e.entry).includes('p-c'))).toBe(false);
  await waitFor(async () => (await t.exact()).length === 0, 'published');
});

/**
 * A snapshot an earlier version wrote after Redis lost writes: the state of a prompt submitted at
 * `id`, an entry the stream never held.
 */
async function snapshotOfLostWrites(store: EventStore, t: Task, id: string) {
  const gone = t.gateway.command(t.taskId, 's1', 'prompt.submit', {
    commandId: 'c-gone',
    promptId: 'p-gone',
    idempotencyKey: 'gone',
    text: 'prompt gone',
    origin: 'human',
  });
  const { state } = foldAll(t.taskId, [{ id, entry: gone }]);
  await store.redis.hset(store.keys.snapshot(t.taskId), {
    id,
    state: JSON.stringify(snapshotOf(state)),
    epoch: '1',
  });
}

it.each([
  ['past the stream’s end', 'ahead', () => `${Date.now() + 3_600_000}-0`],
  ['before entries appended since', 'behind', () => `${Date.now() - 1_000}-0`],
])(
  'rebuilds a task from its stream when its snapshot is at an entry the stream does not hold (%s)',
  async (_, taskId, at) => {
    const { store, metric } = await setup();
    const lost = await metric('baton_projector_errors_total', { op: 'redis_lost_writes' });
    const t = new Task(store, taskId);
    await snapshotOfLostWrites(store, t, at());
    // A prompt now: the owner loads that snapshot, finds the stream does not hold its entry,
    // loads again and, finding the same snapshot, replays the stream.
    await t.submit('e');
    await waitFor(() => t.has('prompt.queued'), 'the prompt queued');
    expect(await metric('baton_projector_errors_total', { op: 'redis_lost_writes' })).toBe(
      lost + 1,
    );
    const stream = await t.stream();
    expect(stream.map((e) => e.entry.type)).toEqual(['prompt.submit', 'prompt.queued']);
    expect(JSON.stringify(stream)).not.toContain('p-gone');
    await waitFor(async () => (await t.exact()).length === 0, 'published');
    // The next snapshot takes the place of that one, and the stream stays whole.
    const last = stream[stream.length - 1]!.id;
    await waitFor(async () => {
      return (await store.snapshots.read(taskId))?.id === last;
    }, 'a snapshot of the stream');
    expect(await store.lastId(taskId)).toBe(last);
    expect(await t.exact()).toEqual([]);
  },
);

it('hands a prompt to its execution again when Redis lost the admission and the inbox write with it', async () => {
  const { store, metric } = await setup();
  const lost = await metric('baton_projector_errors_total', { op: 'redis_lost_writes' });
  // What Redis keeps: a prompt waiting for an execution.
  const { t, kept } = await savedWithQueuedPrompt(store, 'handed', 'h');
  const inbox = async () => (await t.inbox()).filter((m) => m.type === 'prompt.deliver');

  // What it loses: the execution's start, the admission and the prompt in its inbox.
  await t.start();
  await waitFor(() => admitted(t, 'h'), 'admitted');
  await waitFor(async () => (await inbox()).length === 1, 'handed to the execution');
  await loseWritesSince(store, 'handed', kept);
  expect(await inbox()).toEqual([]);

  // The worker says again that its execution started (its writes were lost too): the owner finds
  // its last folded entry gone, loads the task again, admits the prompt again — under the same
  // generation, the same delivery it made before the loss — and hands it over again.
  await t.start();
  await waitFor(() => admitted(t, 'h'), 'admitted again');
  await waitFor(async () => (await inbox()).length === 1, 'handed to the execution again');
  expect(await metric('baton_projector_errors_total', { op: 'redis_lost_writes' })).toBe(lost + 1);
  await waitFor(async () => (await t.exact()).length === 0, 'published');
});
