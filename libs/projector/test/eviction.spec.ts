// Eviction with a real projector (in-process) and a real redis-server: a task at rest and quiet
// leaves memory, comes back from its snapshot on its next entry with the same state and a gapless
// update seq; a task with pending work (a queued prompt, a timer) stays until the work is done.
import { stateFromSnapshot } from '@baton/activity';
import { compareIds, type EventStore } from '@baton/store';
import { startProjector, type ProjectorHandle, type ProjectorOptions } from '../src/projector';
import { waitFor } from '@baton/testing';
import {
  GENERIC_CAPS,
  Task,
  Writer,
  foldAll,
  metricSum,
  freshPrefix,
  redisForFile,
} from './support';

jest.setTimeout(60_000);

const redis = redisForFile();

const SHARDS = 2;

/** A projector of the store's prefix with short periods (overridden by `o`). */
const ownerOptions = (store: EventStore, o: Partial<ProjectorOptions> = {}): ProjectorOptions => ({
  redisUrl: redis.url,
  prefix: store.keys.prefix,
  shards: SHARDS,
  logLevel: 'silent',
  ...o,
  periods: {
    shardLease: 1_000,
    leaseRenewal: 100,
    snapshotDelay: 100,
    evictIdle: 300,
    ...o.periods,
  },
});

async function setup(o: Partial<ProjectorOptions> = {}) {
  const store = redis.store(freshPrefix(), SHARDS);
  const p = await redis.projector(ownerOptions(store, o));
  await p.ready();
  return { store, p };
}

const metric = (h: ProjectorHandle, name: string) => metricSum(h.registry, name);

const held = (p: ProjectorHandle, taskId: string) => p.heldTasks().includes(taskId);

it('puts a quiet task at rest away after a snapshot, and loads it again on its next entry, exact and gapless', async () => {
  const { store, p } = await setup();
  const t = new Task(store, 'short');
  await t.runOneTurn('a');
  await waitFor(() => !held(p, 'short'), 'the task put away');
  expect(await metric(p, 'baton_projector_tasks_evicted_total')).toBe(1);
  expect(await metric(p, 'baton_projector_tasks_held')).toBe(0);
  // Put away only once its snapshot held everything it had folded.
  const entries = await t.stream();
  const snap = await store.snapshots.read('short');
  expect(snap?.id).toBe(entries[entries.length - 1]!.id);
  expect(stateFromSnapshot(snap!.state, 'short')).toEqual(foldAll('short', entries).state);
  expect(await t.exact()).toEqual([]);

  // Its next entry brings it back: a second execution runs a second prompt.
  const loaded = await metric(p, 'baton_projector_tasks_loaded_total');
  await secondPrompt(store, 'short', 'b');
  await waitFor(() => admitted(t, 'b'), 'the second admission');
  expect(await metric(p, 'baton_projector_tasks_loaded_total')).toBe(loaded + 1);
  // Admitted under the next generation: the reloaded state remembered the first.
  const admissions = (await t.stream()).filter((e) => e.entry.type === 'prompt.admitted');
  expect(
    admissions.map((e) => (e.entry.data as { admissionGeneration: number }).admissionGeneration),
  ).toEqual([1, 2]);
  await waitFor(async () => (await t.exact()).length === 0, 'published');
  expect(await t.exact()).toEqual([]);
});

it('puts a task away only once its snapshot covers the entries it refused, so a reload does not read them again', async () => {
  const { store, p } = await setup();
  const t = new Task(store, 'refused');
  await t.runOneTurn('a');
  await waitFor(() => !held(p, 'refused'), 'the task put away');
  // An entry of another schema version (dead-lettered on read), with the note that wakes its owner.
  const loaded = await metric(p, 'baton_projector_tasks_loaded_total');
  const bad = (await store.redis.xadd(
    store.keys.taskStream('refused'),
    '*',
    'e',
    JSON.stringify({ v: 999, taskId: 'refused', type: 'from.the.future', data: {} }),
  ))!;
  await store.redis.xadd(store.keys.feed(store.shardOf('refused')), '*', 't', 'refused', 'l', bad);
  await waitFor(async () => {
    return (await metric(p, 'baton_projector_tasks_loaded_total')) > loaded;
  }, 'the task loaded for it');
  await waitFor(() => !held(p, 'refused'), 'the task put away again');
  expect((await store.snapshots.read('refused'))?.id).toBe(bad);
  const dead = (await store.deadLetters.read(store.shardOf('refused'))).items;
  expect(dead.map((d) => d.sourceId)).toEqual([bad]);
  expect(await t.exact()).toEqual([]);
});

it('keeps a task with a queued prompt or a timer to raise, while a quiet one beside it goes', async () => {
  const { store, p } = await setup({ periods: { executionStart: 4_000 } });
  // A prompt with no execution to run it waits in the queue (for as long as it takes).
  const queued = new Task(store, 'queued');
  await queued.submit('q');
  await waitFor(() => queued.has('prompt.queued'), 'queued');
  // An execution requested and never started: its start bound is a timer of the owner.
  const requested = new Task(store, 'requested');
  await requested.command('execution.request', { commandId: 'c-x', executionId: 'requested-x1' });
  await waitFor(() => requested.has('execution.requested'), 'requested');
  const witness = new Task(store, 'witness');
  await witness.runOneTurn('w');
  await waitFor(() => !held(p, 'witness'), 'the witness put away');
  expect(held(p, 'queued')).toBe(true);
  expect(held(p, 'requested')).toBe(true);
  // The timer still fires (no worker started the execution), and then the task is at rest.
  await waitFor(() => requested.has('execution.request_expired'), 'the request expired');
  await waitFor(() => !held(p, 'requested'), 'the expired request put away');
  expect(held(p, 'queued')).toBe(true);
  for (const t of [queued, requested, witness]) expect(await t.exact()).toEqual([]);
});

it('a new owner puts away at once the tasks quiet since before it took the shard, not the fresh ones', async () => {
  const IDLE = 5_000;
  const first = await setup({ periods: { evictIdle: 0 } });
  const { store } = first;
  const old = new Task(store, 'old');
  await old.runOneTurn('o');
  const lastOf = async (t: Task) => (await t.stream()).at(-1)!.id;
  await waitFor(
    async () => (await store.snapshots.read('old'))?.id === (await lastOf(old)),
    'its snapshot',
  );
  const oldAt = Number((await lastOf(old)).split('-')[0]);
  await waitFor(() => Date.now() - oldAt > IDLE, 'the old task quiet for the idle period', 30_000);
  const fresh = new Task(store, 'fresh');
  await fresh.runOneTurn('f');
  await waitFor(
    async () => (await store.snapshots.read('fresh'))?.id === (await lastOf(fresh)),
    'its snapshot',
  );
  await first.p.stop();
  const second = await startProjector(ownerOptions(store, { periods: { evictIdle: IDLE } }));
  redis.stopsAfter(second);
  await second.ready();
  await waitFor(() => !held(second, 'old'), 'the old task put away');
  expect(held(second, 'fresh')).toBe(true);
  await waitFor(() => !held(second, 'fresh'), 'the fresh one too, once quiet for the period');
  for (const t of [old, fresh]) expect(await t.exact()).toEqual([]);
});

/** The task's second execution (the first ran one turn). */
function secondExecution(store: EventStore, taskId: string): Task {
  const t = new Task(store, taskId);
  t.x.executionId = `${taskId}-x2`;
  t.x.generation = 2;
  return t;
}

/** A second prompt for a task run once already: a new execution starts, the prompt is submitted. */
async function secondPrompt(store: EventStore, taskId: string, key: string): Promise<Task> {
  const t = secondExecution(store, taskId);
  await store.executions.renewLease(t.x, 600_000);
  await t.fact('execution.started', { startedAt: '2026-12-02T00:00:01Z' });
  await t.fact('capabilities.negotiated', GENERIC_CAPS);
  await t.submit(key);
  return t;
}

const admitted = async (t: Task, key: string) =>
  (await t.stream()).some(
    (e) => e.entry.type === 'prompt.admitted' && e.entry.data.promptId === `p-${key}`,
  );

/**
 * A prompt appended as a writer of a version before the live set appends it: the entry and its
 * feed note (`note: false`: the note lost too), and nothing in the live set.
 */
async function olderWriterPrompt(store: EventStore, taskId: string, key: string, note = true) {
  const submit = new Writer('gateway', `g-older-${key}`).command(taskId, 's1', 'prompt.submit', {
    commandId: `c-${key}`,
    promptId: `p-${key}`,
    idempotencyKey: key,
    text: `prompt ${key}`,
    origin: 'human',
  });
  const id = (await store.redis.xadd(
    store.keys.taskStream(taskId),
    '*',
    'e',
    JSON.stringify(submit),
  ))!;
  const noteId = note
    ? await store.redis.xadd(store.keys.feed(store.shardOf(taskId)), '*', 't', taskId, 'l', id)
    : null;
  return { id, noteId };
}

const decided = async (t: Task, key: string) =>
  (await t.stream()).some(
    (e) =>
      (e.entry.type === 'prompt.queued' || e.entry.type === 'prompt.admitted') &&
      e.entry.data.promptId === `p-${key}`,
  );

const live = async (store: EventStore) =>
  (await Promise.all([0, 1].map((s) => store.shardTasks.listLive(s)))).flat().sort();
const feedLengths = (store: EventStore) =>
  Promise.all([0, 1].map((s) => store.redis.xlen(store.keys.feed(s))));

/** Three short tasks put away and one with a queued prompt, under an owner that has cut its feeds. */
async function restingShards() {
  const first = await setup();
  const { store } = first;
  const short = ['gone-1', 'gone-2', 'gone-3'].map((id) => new Task(store, id));
  for (const [i, t] of short.entries()) await t.runOneTurn(`k${i}`);
  const queued = new Task(store, 'waiting');
  await queued.submit('q');
  await waitFor(() => queued.has('prompt.queued'), 'queued');
  await waitFor(() => short.every((t) => !held(first.p, t.taskId)), 'the short tasks put away');
  await waitFor(
    async () => (await live(store)).length === 1,
    'the put-away tasks out of the live set',
  );
  // The owner cuts its feeds behind the notes it has handled.
  await waitFor(async () => (await feedLengths(store)).every((n) => n === 0), 'the feeds cut');
  return { ...first, short, queued };
}

it('a takeover loads the live tasks and replays the notes nobody handled, not every task seen; a stale owner can neither put a task away nor cut a feed', async () => {
  const { store, p: first, short, queued } = await restingShards();
  expect(await live(store)).toEqual(['waiting']);
  // An owner whose lease is gone (an older epoch) cannot put the held task away.
  const shard = store.shardOf('waiting');
  const stale = { shard, owner: 'stale', epoch: 0, expiresAt: Date.now() + 60_000 };
  await expect(
    store.shardTasks.putAway(stale, { taskId: 'waiting', foldedId: '0-0' }),
  ).rejects.toThrow(/FENCED/);
  expect(await live(store)).toEqual(['waiting']);
  await first.stop();
  // With the lease, a task is still not put away when its stream has entries after what was
  // folded (the put-away reaching Redis after the note of those entries was handled).
  const lease = await store.leases.acquire(shard, 'by-hand', 5_000);
  if (!lease.acquired) throw new Error('the shard should be free');
  expect(await store.shardTasks.putAway(lease.lease, { taskId: 'waiting', foldedId: '0-0' })).toBe(
    false,
  );
  expect(await live(store)).toEqual(['waiting']);
  await store.leases.release(lease.lease);
  // Nor when Redis holds an older snapshot than what was folded (a failover to a replica that had
  // not the latest writes): a new load must see what Redis holds.
  const g1 = store.shardOf('gone-1');
  const l1 = await store.leases.acquire(g1, 'by-hand', 5_000);
  if (!l1.acquired) throw new Error('the shard should be free');
  const folded = await store.lastId('gone-1');
  expect(await store.shardTasks.putAway(l1.lease, { taskId: 'gone-1', foldedId: folded })).toBe(
    true,
  );
  await store.redis.hset(store.keys.snapshot('gone-1'), 'id', '1-0');
  expect(await store.shardTasks.putAway(l1.lease, { taskId: 'gone-1', foldedId: folded })).toBe(
    false,
  );
  // Nor when the stream ends before what was folded (Redis lost writes the owner had folded).
  const lost = `${Number(folded.split('-')[0]) + 1}-0`;
  await store.redis.hset(store.keys.snapshot('gone-1'), 'id', lost);
  expect(await store.shardTasks.putAway(l1.lease, { taskId: 'gone-1', foldedId: lost })).toBe(
    false,
  );
  await store.redis.hset(store.keys.snapshot('gone-1'), 'id', folded);
  await store.leases.release(l1.lease);

  // While nobody owns the shards, a put-away task gets a new prompt (the live set names it), and
  // another one from a writer of an earlier version (only its feed note names it).
  const back = await secondPrompt(store, 'gone-2', 'again');
  await olderWriterPrompt(store, 'gone-1', 'older');
  const gone2 = store.shardOf('gone-2');
  expect(await store.redis.xlen(store.keys.feed(gone2))).toBeGreaterThan(0);
  await expect(
    store.trimFeed({ ...stale, shard: gone2 }, await store.feedLastId(gone2)),
  ).rejects.toThrow(/FENCED/);

  const second = await startProjector(ownerOptions(store));
  redis.stopsAfter(second);
  await second.ready();
  // The live tasks, and the one the replayed feed names: not the one at rest.
  expect(await admitted(back, 'again')).toBe(true);
  await waitFor(() => decided(short[0]!, 'older'), 'the older writer’s prompt decided');
  expect(await metric(second, 'baton_projector_tasks_loaded_total')).toBe(3);
  expect(held(second, 'gone-3')).toBe(false);
  await waitFor(async () => (await back.exact()).length === 0, 'published');
  for (const t of [...short, queued]) expect(await t.exact()).toEqual([]);
});

it('a new owner loads a task whose notes the feed lost: its append put it in the live set', async () => {
  const { store, p: first, short } = await restingShards();
  await first.stop();
  const back = await secondPrompt(store, 'gone-3', 'lost');
  // The notes go before any owner read them, as a writer's MAXLEN takes them from a feed nobody
  // keeps up with.
  for (const s of [0, 1]) await store.redis.xtrim(store.keys.feed(s), 'MAXLEN', 0);
  const second = await startProjector(ownerOptions(store));
  redis.stopsAfter(second);
  await second.ready();
  expect(await admitted(back, 'lost')).toBe(true);
  expect(await metric(second, 'baton_projector_tasks_loaded_total')).toBe(2);
  for (const t of short) await waitFor(async () => (await t.exact()).length === 0, 'exact');
});

it('a running owner loads a live task whose note it never read, within the reconcile period', async () => {
  const { store, p } = await setup({ periods: { reconcile: 500 } });
  const t = new Task(store, 'unread');
  await t.runOneTurn('a');
  await waitFor(() => !held(p, 'unread'), 'put away');
  await waitFor(async () => !(await live(store)).includes('unread'), 'out of the live set');
  // A prompt appended as append-4.lua does it, but its feed note lost (MAXLEN while the owner
  // lagged): only the live set names the task.
  await olderWriterPrompt(store, 'unread', 'b', false);
  await store.redis.sadd(store.keys.shardLive(store.shardOf('unread')), 'unread');
  await waitFor(() => decided(t, 'b'), 'the prompt decided');
  expect(await t.exact()).toEqual([]);
});

it('a running owner that counts fewer notes read than the feed added has every held task look again', async () => {
  const { store } = await setup({ periods: { reconcile: 500 } });
  const busy = new Task(store, 'busy');
  await busy.submit('q');
  await waitFor(() => busy.has('prompt.queued'), 'queued');
  await waitFor(
    async () => (await store.snapshots.read('busy'))?.id === (await store.lastId('busy')),
    'its snapshot at its end (no step left to take)',
  );
  // A second prompt whose note goes before the owner reads it (added and deleted at once, as a
  // writer's MAXLEN takes it from a feed nobody keeps up with): the task is held, so the live set
  // is no help; only the count tells.
  const { id } = await olderWriterPrompt(store, 'busy', 'lost', false);
  const feed = store.keys.feed(store.shardOf('busy'));
  await store.redis.eval(
    "local n = redis.call('XADD', KEYS[1], '*', 't', ARGV[1], 'l', ARGV[2]) redis.call('XDEL', KEYS[1], n)",
    1,
    feed,
    'busy',
    id,
  );
  // Another note, read: the owner is at the feed's end again.
  await new Task(store, 'witness').submit('w');
  await waitFor(() => decided(busy, 'lost'), 'the lost prompt decided', 15_000);
  expect(await busy.exact()).toEqual([]);
});

it('starts the live set, once, from the task set of earlier versions: their first owner loads them all', async () => {
  const { store, p: first, short, queued } = await restingShards();
  await first.stop();
  // The shards as a version before the live set left them: every task in `tasks`, no `live`.
  for (const s of [0, 1]) {
    await store.redis.del(store.keys.shardLive(s), store.keys.shardLiveStarted(s));
  }
  for (const t of [...short, queued]) {
    await store.redis.sadd(store.keys.shardTasks(store.shardOf(t.taskId)), t.taskId);
  }
  const second = await startProjector(ownerOptions(store));
  redis.stopsAfter(second);
  await second.ready();
  expect(await metric(second, 'baton_projector_tasks_loaded_total')).toBe(4);
  // Those at rest go again, out of the live set: the next owner loads the one with work.
  await waitFor(async () => (await live(store)).length === 1, 'put away again');
  expect(await live(store)).toEqual(['waiting']);
});

it('keeps the note of an older writer in the feed until its task is recorded live', async () => {
  const { store, p } = await setup();
  const shard = store.shardOf('older');
  // A live set Redis refuses to add to (the wrong type): the owner's registration fails and is
  // retried. The writer is of a version before the live set: its note alone names the task.
  await store.redis.set(store.keys.shardLive(shard), 'not a set');
  const { noteId: note } = await olderWriterPrompt(store, 'older', 'o');
  const t = new Task(store, 'older');
  await waitFor(() => t.has('prompt.queued'), 'queued');
  await new Promise((r) => setTimeout(r, 1_000)); // ten renew ticks
  expect(await store.redis.xrange(store.keys.feed(shard), note!, note!)).toHaveLength(1);
  await store.redis.del(store.keys.shardLive(shard));
  await waitFor(async () => (await live(store)).includes('older'), 'recorded live');
  await waitFor(async () => (await store.redis.xlen(store.keys.feed(shard))) === 0, 'the feed cut');
  expect(held(p, 'older')).toBe(true);
});

it('trims the retained history of a task put away once the retention has passed, without loading it', async () => {
  const RETENTION = 2_000;
  const { store, p } = await setup({ periods: { retention: RETENTION } });
  const t = new Task(store, 'kept');
  await t.runOneTurn('a');
  await waitFor(() => !held(p, 'kept'), 'put away');
  // A second turn, later: a checkpoint at its end, the one the trim can cut at.
  await secondExecution(store, 'kept').runOneTurn('b');
  const entries = await t.stream();
  const lastId = entries.at(-1)!.id;
  await waitFor(async () => {
    return !held(p, 'kept') && (await store.snapshots.read('kept'))?.id === lastId;
  }, 'put away again, snapshot at its end');
  const shard = store.shardOf('kept');
  const due = Number(await store.redis.zscore(store.keys.shardTrims(shard), 'kept'));
  expect(due).toBeGreaterThanOrEqual(Number(lastId.split('-')[0]) + RETENTION);
  // Younger than the retention: the whole stream is still there.
  expect((await t.stream()).length).toBe(entries.length);
  const loaded = await metric(p, 'baton_projector_tasks_loaded_total');
  await waitFor(
    async () => (await metric(p, 'baton_projector_tasks_trimmed_total')) === 1,
    'the trim, once due',
    15_000,
  );
  // Cut at the newest checkpoint: everything before it went, and nothing was loaded for it.
  const checkpoints = (await store.redis.hkeys(store.keys.checkpoints('kept'))).sort(compareIds);
  const rest = await t.stream();
  expect(rest.length).toBeLessThan(entries.length);
  expect(rest[0]!.id).toBe(checkpoints.at(-1));
  expect(rest.at(-1)!.id).toBe(lastId);
  expect(checkpoints.every((c) => compareIds(c, rest[0]!.id) >= 0)).toBe(true);
  expect(await store.redis.zcard(store.keys.shardTrims(shard))).toBe(0);
  expect(await metric(p, 'baton_projector_tasks_loaded_total')).toBe(loaded);
  expect(held(p, 'kept')).toBe(false);
});
