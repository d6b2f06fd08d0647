// The projector in-process (startProjector) against a real redis-server: delivery, re-delivery
// after a takeover, the write fence, timers (execution leases, watchdog), snapshots and recovery,
// inbox cancels and stops, readiness, options and metrics.
import { decide, fold, stateFromSnapshot, taskView } from '@baton/activity';
import { SCHEMA_VERSION, groupOf, type StreamEntry } from '@baton/protocol';
import { startProjector, type ProjectorHandle, type ProjectorOptions } from '../src/projector';
import { ProjectorOptionsError } from '../src/options';
import { waitFor } from '@baton/testing';
import {
  CLAUDE_CAPS,
  GENERIC_CAPS,
  Task,
  foldAll,
  metricSum,
  freshPrefix,
  readUpdatesByTask,
  redisForFile,
  sameJson,
  updateProblems,
} from './support';

jest.setTimeout(60_000);

const redis = redisForFile();
const newStore = (prefix: string, shards: number, feedMaxLen?: number) =>
  redis.store(prefix, shards, feedMaxLen);
/** A store over a prefix of its own. */
function freshStore(shards: number, feedMaxLen?: number) {
  const prefix = freshPrefix();
  return { prefix, store: newStore(prefix, shards, feedMaxLen) };
}

/** An in-process projector with short lease periods (overridden by `o`). */
function projector(o: Partial<ProjectorOptions> & { prefix: string; shards: number }) {
  return redis.projector({
    redisUrl: redis.url,
    logLevel: 'silent',
    ...o,
    periods: { shardLease: 1_000, leaseRenewal: 100, ...o.periods },
  });
}

/** A fresh prefix, its store, and an in-process projector over it, ready. */
async function projectorOnFreshStore(o: Partial<ProjectorOptions> & { shards: number }) {
  const { prefix, store } = freshStore(o.shards);
  const p = await projector({ prefix, ...o });
  await p.ready();
  return { prefix, store, p };
}

/**
 * A previous owner of the task's shard: it takes the lease, decides on the stream as it stands
 * and appends its decisions under the lease, then dies before its inbox write.
 */
async function decideAndDie(store: ReturnType<typeof newStore>, t: Task): Promise<StreamEntry[]> {
  const r = await store.leases.acquire(store.shardOf(t.taskId), 'dead-owner', 400);
  if (!r.acquired) throw new Error('lease');
  const entries = decide(foldAll(t.taskId, await t.stream()).state).map(
    (d, i) =>
      ({
        v: SCHEMA_VERSION,
        taskId: t.taskId,
        writer: { role: 'projector', instance: 'dead-owner', seq: i + 1 },
        ...d,
      }) as StreamEntry,
  );
  await store.appendFenced(r.lease, t.taskId, await store.lastId(t.taskId), entries);
  return entries;
}

const metric = (h: ProjectorHandle, name: string, labels?: Record<string, string>) =>
  metricSum(h.registry, name, labels);

it('admits, hands the prompt to the execution inbox, publishes gapless updates and writes the view', async () => {
  const { store, p } = await projectorOnFreshStore({ shards: 4 });
  expect(p.ownedShards()).toEqual([0, 1, 2, 3]);
  const t = new Task(store, 'basic');
  await t.start();
  await t.submit('a');
  await waitFor(async () => (await t.inbox()).length === 1, 'delivery');
  expect((await t.inbox())[0]).toEqual({
    v: SCHEMA_VERSION,
    type: 'prompt.deliver',
    taskId: 'basic',
    sessionId: 's1',
    executionId: 'basic-x1',
    data: {
      promptId: 'p-a',
      admissionGeneration: 1,
      mode: 'turn',
      origin: 'human',
      text: 'prompt a',
    },
  });
  await waitFor(() => t.viewMatchesFold(), 'view');
  const entries = await t.stream();
  const admitted = entries.find((e) => e.entry.type === 'prompt.admitted')!.entry;
  expect(admitted.writer).toEqual({
    role: 'projector',
    instance: p.instanceId,
    seq: expect.any(Number),
  });
  const updates = (await store.readUpdates(store.shardOf('basic'))).items.map((u) => u.update);
  expect(updateProblems('basic', updates, foldAll('basic', entries).updates)).toEqual([]);
  expect(await metric(p, 'baton_projector_decisions_total')).toBeGreaterThanOrEqual(1);
});

it('a new owner delivers again a claim its predecessor decided but never handed over', async () => {
  const { prefix, store } = freshStore(2);
  const t = new Task(store, 'redeliver');
  await t.start();
  await t.submit('a');
  const entries = await decideAndDie(store, t);
  expect(entries.map((e) => e.type)).toEqual(['prompt.admitted']);
  const state = foldAll(t.taskId, await t.stream()).state;
  expect(state.sessions.s1!.turn).toMatchObject({ phase: 'claimed' });
  expect(await t.inbox()).toEqual([]);

  const p = await projector({ prefix, shards: 2 });
  await p.ready();
  await waitFor(async () => (await t.inbox()).length > 0, 're-delivery');
  expect(await t.inbox()).toEqual([
    expect.objectContaining({
      type: 'prompt.deliver',
      data: expect.objectContaining({ promptId: 'p-a', admissionGeneration: 1 }),
    }),
  ]);
  // Nothing was decided twice.
  expect((await t.stream()).filter((e) => e.entry.type === 'prompt.admitted')).toHaveLength(1);
  await waitFor(() => t.viewMatchesFold(), 'view');
});

it('a write refused by the fence (the lease was taken meanwhile) drops the shard at once', async () => {
  const { prefix, store } = freshStore(1);
  // Renewals far apart: the write path, not the renewal, meets the new owner first.
  const p = await projector({
    prefix,
    shards: 1,
    periods: { shardLease: 20_000, leaseRenewal: 5_000 },
  });
  await p.ready();
  const t = new Task(store, 'fenced');
  await t.start();
  await waitFor(async () => (await store.views.read(t.taskId)) !== null, 'view');
  // Another owner takes the shard (as if ours had lapsed while we were paused).
  await store.redis.del(store.keys.lease(0));
  const thief = await store.leases.acquire(0, 'thief', 60_000);
  expect(thief.acquired).toBe(true);
  await t.submit('a');
  await waitFor(() => p.ownedShards().length === 0, 'the shard dropped');
  expect(await metric(p, 'baton_projector_fenced_writes_total')).toBeGreaterThanOrEqual(1);
  expect(await metric(p, 'baton_projector_lease_changes_total', { change: 'lost' })).toBe(1);
  const decisions = (await t.stream()).filter((e) => e.entry.writer.role === 'projector');
  expect(decisions.map((e) => e.entry.type)).not.toContain('prompt.admitted');
  expect(await t.inbox()).toEqual([]);
});

it('declares an execution lost when its lease lapses, or when it holds none at all, and drops the lease', async () => {
  const { store, p } = await projectorOnFreshStore({ shards: 2 });
  const lapsed = new Task(store, 'lapsed');
  await lapsed.start(GENERIC_CAPS, 300);
  await lapsed.submit('a');
  const orphan = new Task(store, 'orphan');
  await orphan.start(GENERIC_CAPS, null);
  const healthy = new Task(store, 'healthy');
  await healthy.start(GENERIC_CAPS, 600_000);
  await waitFor(() => lapsed.has('execution.lost'), 'lapsed lost', 30_000);
  await waitFor(() => orphan.has('execution.lost'), 'orphan lost', 30_000);
  await waitFor(
    async () =>
      (await store.executions.leases(store.shardOf('lapsed'))).every((l) => l.taskId !== 'lapsed'),
    'lease dropped',
  );
  await waitFor(
    async () => (await lapsed.viewMatchesFold()) && (await orphan.viewMatchesFold()),
    'views',
  );
  const v = await store.views.read('lapsed');
  expect(v!.sessions[0]!.activity.state).toBe('failed');
  // The admitted prompt that never reached the agent is back at the head of the queue.
  expect(v!.sessions[0]!.queue.entries.map((q) => q.promptId)).toEqual(['p-a']);
  expect(await healthy.has('execution.lost')).toBe(false);
  expect(await metric(p, 'baton_projector_timers_total', { type: 'execution_lease_expired' })).toBe(
    2,
  );
});

it('watchdog: a silent dispatched turn fails if the agent never spoke, and is advised stalled once if it did', async () => {
  const { store } = await projectorOnFreshStore({
    shards: 2,
    periods: { turnStall: 300 },
  });
  const mute = new Task(store, 'mute');
  const slow = new Task(store, 'slow');
  for (const t of [mute, slow]) {
    await t.startRunning();
  }
  await slow.fact('foreground.output', { channel: 'message' });
  await waitFor(() => mute.has('turn.abandoned'), 'mute abandoned', 30_000);
  await waitFor(() => slow.has('turn.stalled'), 'slow advised', 30_000);
  // The failed turn's execution is stopped (the default policy), through its inbox.
  await waitFor(() => mute.stopSent('turn_abandoned'), 'mute stopped');
  // Three more stall periods: still one advisory while the agent stays silent.
  await new Promise((r) => setTimeout(r, 1_000));
  expect((await slow.stream()).filter((e) => e.entry.type === 'turn.stalled')).toHaveLength(1);
  expect(await slow.has('turn.abandoned')).toBe(false);
});

it('clocks bound every other wait: an unanswered cancel, output outside a turn, an execution no worker started', async () => {
  const { store } = await projectorOnFreshStore({
    shards: 2,
    periods: { cancelAnswer: 300, outputQuiet: 300, executionStart: 1_000 },
  });
  // A cancel the agent never answers: the turn ends cancel_timeout, the execution is stopped.
  const deaf = new Task(store, 'deaf');
  await deaf.startRunning();
  await deaf.fact('foreground.output', { channel: 'message' });
  await deaf.command('session.cancel', { commandId: 'cancel-1' });
  await waitFor(() => deaf.has('turn.cancel_timed_out'), 'cancel timed out', 30_000);
  await waitFor(() => deaf.stopSent('cancel_timeout'), 'deaf stopped');
  // Output after the turn ended decays after the quiet period.
  const chatty = new Task(store, 'chatty');
  await chatty.startRunning();
  await chatty.fact('turn.ended', { admissionGeneration: 1, stopReason: 'end_turn' });
  await chatty.fact('foreground.output', { channel: 'message' });
  await waitFor(() => chatty.has('foreground.quiesced'), 'quiesced', 30_000);
  await waitFor(() => chatty.viewMatchesFold(), 'chatty view');
  const v = await store.views.read('chatty');
  expect(v!.sessions[0]!.activity.foregroundActivity).toBeNull();
  // A requested execution nobody starts fails no_worker.
  const orphan = new Task(store, 'orphan');
  await orphan.command('execution.request', { commandId: 'req-1', executionId: 'orphan-x1' });
  await waitFor(() => orphan.has('execution.request_expired'), 'request expired', 30_000);
  await waitFor(() => orphan.viewMatchesFold(), 'orphan view');
  expect((await store.views.read('orphan'))!.sessions[0]!.activity.attention).toMatchObject({
    kind: 'failed',
    reason: 'no_worker',
    executionId: 'orphan-x1',
  });
});

it('snapshots every K entries and trims behind them (no retention); a new owner resumes from the snapshot and continues the sequence', async () => {
  const { prefix, store } = freshStore(1);
  const t = new Task(store, 'snap');
  const p1 = await projector({ prefix, shards: 1, snapshotEntries: 25, periods: { retention: 0 } });
  await p1.ready();
  await t.start(CLAUDE_CAPS);
  const play = async (from: number, to: number) => {
    for (let i = from; i < to; i++) {
      await t.submit(`k${i}`);
      const g = i + 1;
      await waitFor(
        async () =>
          (await t.inbox()).some(
            (m) => m.type === 'prompt.deliver' && m.data.admissionGeneration === g,
          ),
        'delivery',
      );
      await t.fact('prompt.dispatched', { promptId: `p-k${i}`, admissionGeneration: g });
      await t.fact('foreground.output', { channel: 'message' });
      await t.fact('tool.started', {
        toolCallId: `tc${i}`,
        ownership: 'foreground',
        status: 'in_progress',
      });
      await t.fact('tool.updated', { toolCallId: `tc${i}`, status: 'completed' });
      await t.fact('turn.ended', { admissionGeneration: g, stopReason: 'end_turn' });
    }
  };
  await play(0, 12);
  await waitFor(async () => {
    const snap = await store.snapshots.read('snap');
    return snap !== null && (await store.redis.xlen(store.keys.taskStream('snap'))) < 12 * 7;
  }, 'a snapshot and a trimmed stream');
  await waitFor(
    async () =>
      (await store.views.read('snap'))?.seq === (await store.lastUpdateSeq('snap')) &&
      (await store.lastUpdateSeq('snap')) > 0,
    'view',
  );
  await p1.stop();
  // Traffic while nobody owns the shard; then a new owner.
  await t.submit('while-down');
  const p2 = await projector({ prefix, shards: 1, snapshotEntries: 25, periods: { retention: 0 } });
  await p2.ready();
  await waitFor(
    async () =>
      (await t.inbox()).some(
        (m) => m.type === 'prompt.deliver' && m.data.promptId === 'p-while-down',
      ),
    'while-down delivered',
  );
  await t.fact('prompt.dispatched', { promptId: 'p-while-down', admissionGeneration: 13 });
  await t.fact('turn.ended', { admissionGeneration: 13, stopReason: 'end_turn' });
  await play(13, 16);

  const snap = (await store.snapshots.read('snap'))!;
  const tail = (await t.stream()).filter((e) => e.id > '0' && compare(e.id, snap.id) > 0);
  let state = stateFromSnapshot(snap.state, 'snap')!;
  expect(state).not.toBeNull();
  const expected = [];
  for (const { id, entry } of tail) {
    const f = fold(state, entry);
    state = f.state;
    expected.push(...groupOf(id, f.updates));
  }
  await waitFor(
    async () => sameJson(await store.views.read('snap'), taskView(state)),
    'view equals snapshot + tail',
  );
  const published = (await store.readUpdates(0, '0-0', 10_000)).items.map((u) => u.update);
  expect(published.map((u) => u.seq)).toEqual(published.map((_, i) => i + 1));
  expect(sameJson(published.slice(published.length - expected.length), expected)).toBe(true);
  expect(await store.lastUpdateSeq('snap')).toBe(state.seq);
  expect(await metric(p2, 'baton_projector_snapshots_total')).toBeGreaterThanOrEqual(1);
});

it('snapshots a quiet task after the snapshot period', async () => {
  const { store } = await projectorOnFreshStore({
    shards: 1,
    snapshotEntries: 1_000_000,
    periods: { snapshotDelay: 300 },
  });
  const t = new Task(store, 'quiet');
  await t.start();
  await waitFor(
    async () => (await store.snapshots.read('quiet'))?.id === (await store.lastId('quiet')),
    'snapshot',
  );
});

it('a snapshot of another state version is never read: the stream rebuilds the task, or, trimmed, the task waits', async () => {
  const { prefix, store } = freshStore(1);
  const t = new Task(store, 'old-shape');
  await t.start();
  await t.submit('a');
  const other = new Task(store, 'old-trimmed');
  await other.start();
  // What an older Baton left: snapshots in a shape this version does not know.
  const lease = await store.leases.acquire(0, 'old-owner', 10_000);
  if (!lease.acquired) throw new Error('lease');
  for (const task of ['old-shape', 'old-trimmed']) {
    await store.snapshots.write(lease.lease, task, await store.lastId(task), {
      taskId: task,
      seq: 99,
      sessions: {},
    });
  }
  await store.snapshots.trim(lease.lease, 'old-trimmed');
  expect(await store.wasTrimmed('old-trimmed')).toBe(true);
  await store.leases.release(lease.lease);

  // (Not ready(): a task that cannot be rebuilt never catches up, by design.)
  const p = await projector({ prefix, shards: 1 });
  // Rebuilt from its stream: the prompt is admitted and delivered, the view is the fold's.
  await waitFor(async () => (await t.inbox()).length === 1, 'delivery');
  await waitFor(() => t.viewMatchesFold(), 'view');
  // Trimmed behind a snapshot it cannot read: nothing is published for it rather than a guess.
  await waitFor(
    async () => (await metric(p, 'baton_projector_errors_total')) > 0,
    'the failure counted',
  );
  expect(await store.views.read('old-trimmed')).toBeNull();
});

it('cancels a running turn and stops the execution of a reset session through the inbox', async () => {
  const { store } = await projectorOnFreshStore({ shards: 1 });
  const t = new Task(store, 'cancel');
  await t.startRunning();
  await t.command('session.cancel', { commandId: 'cancel-1', observedGeneration: 1 });
  await waitFor(async () => (await t.inbox()).length === 2, 'cancel delivered');
  expect((await t.inbox())[1]).toMatchObject({
    type: 'turn.cancel',
    data: { admissionGeneration: 1, reason: 'user' },
  });
  await t.command('session.reset', { commandId: 'reset-1' });
  await waitFor(async () => (await t.inbox()).length === 3, 'stop delivered');
  expect((await t.inbox())[2]).toMatchObject({
    type: 'execution.stop',
    data: { reason: 'session_reset' },
  });
  await new Promise((r) => setTimeout(r, 300));
  expect(await t.inbox()).toHaveLength(3);
});

it('ready() waits for a backlog, including tasks whose feed notes were trimmed away', async () => {
  const { prefix, store } = freshStore(2, 10);
  const p1 = await projector({ prefix, shards: 2 });
  await p1.ready();
  const tasks = Array.from({ length: 40 }, (_, i) => new Task(store, `t-${i}`));
  for (const t of tasks) {
    await t.start();
    for (let i = 0; i < 10; i++) await t.fact('foreground.output', { channel: 'message' });
    await t.fact('foreground.idle', { origin: 'task-notification' });
  }
  await waitFor(async () => {
    for (const t of tasks) if (!(await t.viewMatchesFold())) return false;
    return true;
  }, 'views');
  await p1.stop();
  // A backlog while nobody owns the shards.
  for (const t of tasks.slice(0, 5)) await t.submit('a');
  // The feeds (bounded to ~10 notes here) no longer name most tasks.
  const notes = await Promise.all(
    [0, 1].map(
      (s) => store.redis.xrange(store.keys.feed(s), '-', '+') as Promise<[string, string[]][]>,
    ),
  );
  const named = new Set(notes.flat().map(([, f]) => f[f.indexOf('t') + 1]));
  expect(named.size).toBeLessThan(tasks.length / 2);

  const p2 = await projector({ prefix, shards: 2 });
  await p2.ready();
  // Caught up at ready(): the backlog is decided, every task is held again, views are current.
  for (const t of tasks.slice(0, 5)) expect(await t.has('prompt.admitted')).toBe(true);
  for (const t of tasks) expect(await t.viewMatchesFold()).toBe(true);
  expect(await metric(p2, 'baton_projector_shard_tasks')).toBe(tasks.length);
});

it('refuses bad options with one line per problem', async () => {
  await expect(startProjector({ redisUrl: 'http://localhost', shards: 0 })).rejects.toThrow(
    ProjectorOptionsError,
  );
  await expect(
    startProjector({ redisUrl: 'http://localhost', shards: 0, periods: { turnStall: 1 } }),
  ).rejects.toThrow(/redisUrl: must be a redis[\s\S]*shards:[\s\S]*periods\.turnStall:/);
  await expect(
    startProjector({ redisUrl: redis.url, periods: { shardLease: 1_000, leaseRenewal: 800 } }),
  ).rejects.toThrow(/periods\.leaseRenewal: leaseRenewal must be at most half of shardLease/);
});

it('serves Prometheus metrics and its health over HTTP', async () => {
  const { store, p } = await projectorOnFreshStore({ shards: 2, metricsPort: 0 });
  const t = new Task(store, 'metrics');
  await t.start();
  await waitFor(async () => (await store.views.read('metrics')) !== null, 'view');
  const res = await fetch(`http://127.0.0.1:${p.metricsPort}/metrics`);
  expect(res.status).toBe(200);
  const body = await res.text();
  for (const name of [
    'baton_projector_entries_folded_total',
    'baton_projector_decisions_total',
    'baton_projector_lease_changes_total',
    'baton_projector_updates_published_total',
    'baton_projector_shard_lag_seconds',
    'baton_projector_owned_shards 2',
  ]) {
    expect(body).toContain(name);
  } // And /healthz beside it: healthy once ready (its 503s: test/faults/health.spec.ts).
  expect(p.health()).toBeNull();
  const health = await fetch(`http://127.0.0.1:${p.metricsPort}/healthz`);
  expect([health.status, await health.text()]).toEqual([200, 'ok\n']);
});

function compare(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number) as [number, number];
  const [bm, bs] = b.split('-').map(Number) as [number, number];
  return am - bm || as - bs;
}

it('a new owner stops an execution that a newer one replaced before its stop was handed over', async () => {
  const { prefix, store } = freshStore(2);
  const t = new Task(store, 'replaced');
  await t.start();
  await t.command('session.reset', { commandId: 'c-reset' });
  // The previous owner decides the reset (a stop owed to x1), then dies before its inbox write.
  const entries = await decideAndDie(store, t);
  expect(entries.map((e) => e.type)).toEqual(['session.was_reset']);
  // Meanwhile a newer execution of the session starts: the old agent still runs.
  const x2 = { ...t.x, executionId: 'replaced-x2', generation: 2 };
  await store.executions.renewLease(x2, 600_000);
  await store.append(t.taskId, [
    t.worker.fact(x2, 'execution.started', { startedAt: '2026-11-30T00:00:00Z' }),
    t.worker.fact(x2, 'capabilities.negotiated', GENERIC_CAPS),
  ]);
  expect(await t.inbox()).toEqual([]);

  const p = await projector({ prefix, shards: 2 });
  await p.ready();
  await waitFor(async () => (await t.inbox()).length > 0, 'the stop to the replaced execution');
  expect(await t.inbox()).toEqual([
    expect.objectContaining({ type: 'execution.stop', data: { reason: 'session_reset' } }),
  ]);
  // Its end settles it; the newer execution was never told to stop.
  await t.fact('execution.ended', { reason: 'cancelled' });
  await waitFor(() => t.viewMatchesFold(), 'view');
  const owed = foldAll(t.taskId, await t.stream()).state.sessions.s1!;
  expect(owed.replacedStops).toBeUndefined();
  expect(owed.execution).toMatchObject({ id: 'replaced-x2', stopping: null });
  expect((await store.inbox.read(t.taskId, 'replaced-x2')).items).toEqual([]);
});

it('decides what it reads in one step in stream order: a prompt sent while archived stays refused', async () => {
  const { store } = await projectorOnFreshStore({ shards: 2 });
  const t = new Task(store, 'in-order');
  await t.start();
  let seq = 0;
  const taskCommand = (type: 'task.archive' | 'task.unarchive') =>
    ({
      v: SCHEMA_VERSION,
      taskId: t.taskId,
      writer: { role: 'gateway', instance: 'task-commands', seq: ++seq },
      type,
      data: { commandId: `c-${type}` },
    }) as StreamEntry;
  await store.append(t.taskId, [taskCommand('task.archive')]);
  await waitFor(() => t.has('task.archived'), 'archived');
  // One append: the owner reads the prompt and the unarchive after it in one step.
  await store.append(t.taskId, [
    t.gateway.command(t.taskId, 's1', 'prompt.submit', {
      commandId: 'c-b',
      promptId: 'p-b',
      idempotencyKey: 'b',
      text: 'prompt b',
      origin: 'human',
    }),
    taskCommand('task.unarchive'),
  ]);
  await waitFor(() => t.has('task.unarchived'), 'unarchived');
  const decisions = (await t.stream())
    .map((e) => e.entry)
    .filter((e) => e.writer.role === 'projector' && e.type !== 'task.archived');
  expect(decisions.map((e) => [e.type, 'promptId' in e.data ? e.data.promptId : null])).toEqual([
    ['prompt.rejected', 'p-b'],
    ['task.unarchived', null],
  ]);
  expect(decisions[0]!.data).toMatchObject({ reason: 'task_archived' });
  await waitFor(() => t.viewMatchesFold(), 'view');
});

it('tells the prompt an agent was running when its task is deleted', async () => {
  const { store } = await projectorOnFreshStore({ shards: 2 });
  const t = new Task(store, 'deleted-running');
  await t.start();
  await t.submit('a');
  await waitFor(() => t.has('prompt.admitted'), 'admission');
  await t.fact('prompt.dispatched', { promptId: 'p-a', admissionGeneration: 1 });
  await store.append(t.taskId, [
    {
      v: SCHEMA_VERSION,
      taskId: t.taskId,
      writer: { role: 'gateway', instance: 'task-commands', seq: 1 },
      type: 'task.delete',
      data: { commandId: 'c-delete' },
    } as StreamEntry,
  ]);
  await waitFor(() => t.has('task.deleted'), 'deleted');
  await waitFor(() => t.viewMatchesFold(), 'view');
  const told = ((await readUpdatesByTask(store, 2)).get(t.taskId) ?? []).filter(
    (u) => u.type === 'prompt.decided' && u.data.promptId === 'p-a',
  );
  expect(told.map((u) => u.type === 'prompt.decided' && u.data.decision).at(-1)).toMatchObject({
    outcome: 'cancelled',
    reason: 'task_deleted',
  });
  expect(await t.exact()).toEqual([]);
});
