// Two gateway processes, one projector, one Redis: what a client sees does not depend on the
// gateway it is connected to.
import type { Update } from '@baton/protocol';
import { Client, FakeWorker, subagentStarted, tenantStack, waitFor } from '@baton/testing';

jest.setTimeout(60_000);

const files = tenantStack('acme', { gateways: 2, projectors: 1 });
/** K: the task key below the gateway of acme's task id. */
const { tok, K } = files;

const prompt = (taskId: string, sessionId: string, key: string) => ({
  op: 'prompt',
  taskId,
  sessionId,
  text: `prompt ${key}`,
  idempotencyKey: key,
});

type Json = Record<string, unknown>;
const resultOf = (reply: Json) => {
  expect(reply.ok).toBe(true);
  return reply.result as Json;
};

/** A client on gateway A and one on B; with `liveTask`, a worker double's execution on its s1. */
async function clientsOnAAndB(liveTask?: string): Promise<[Client, Client]> {
  if (liveTask) await new FakeWorker(files.stack.store, K(liveTask), 's1').start();
  return Promise.all([Client.connect(files.A, tok), Client.connect(files.B, tok)]);
}

/** Work on a task that produces every kind of update: prompts, queue moves, background work. */
async function traffic(taskId: string, via: Client[], tag: string, started?: FakeWorker) {
  const w = started ?? new FakeWorker(files.stack.store, K(taskId), 's1');
  if (!started) await w.start();
  const first = resultOf(await via[0]!.request(prompt(taskId, 's1', `${tag}-1`)));
  const second = resultOf(await via[1 % via.length]!.request(prompt(taskId, 's1', `${tag}-2`)));
  expect(first).toMatchObject({ status: 'decided', decision: { outcome: 'admitted' } });
  expect(second).toMatchObject({ status: 'decided', decision: { outcome: 'queued', position: 1 } });
  await w.fact('prompt.dispatched', { promptId: first.promptId, admissionGeneration: 1 });
  await w.fact('foreground.output', { channel: 'message' });
  for (const id of ['sub-a', 'sub-b']) {
    await w.fact('background.started', subagentStarted(id, '2026-11-30T00:00:00Z'));
  }
  await w.fact('background.ended', { workId: 'sub-a', status: 'completed' });
  await w.fact('turn.ended', { admissionGeneration: 1, stopReason: 'end_turn' });
  // Settled: the queued prompt took the next turn, one subagent is still at work.
  await waitFor(async () => {
    const s = (await files.stack.store.views.read(K(taskId)))?.sessions.find(
      (x) => x.sessionId === 's1',
    );
    return (
      s?.activity.runningGeneration === 2 &&
      s.queue.entries.length === 0 &&
      s.backgroundWork.map((b) => b.id).join() === 'sub-b'
    );
  }, 'the projector to settle');
}

async function allUpdates(c: Client, taskId: string, until: number): Promise<Json[]> {
  await waitFor(
    () => c.updates(taskId).some((u) => (u.seq as number) >= until),
    `updates up to ${until}`,
  );
  return c.updates(taskId);
}

/**
 * `leaver` subscribes to the task, sees a worker double's execution start on s1, and leaves: the
 * worker, and the last seq the client saw.
 */
async function leftAfterStart(leaver: Client, taskId: string) {
  await leaver.request({ op: 'subscribe', taskId });
  const w = new FakeWorker(files.stack.store, K(taskId), 's1');
  await w.start();
  const seen = await files.stack.store.lastUpdateSeq(K(taskId));
  await allUpdates(leaver, taskId, seen);
  await leaver.close();
  return { w, seen };
}

describe('two gateways', () => {
  it('clients on A and on B see the same updates in the same order', async () => {
    const taskId = 'order-1';
    const [ca, cb] = await clientsOnAAndB();
    const sa = resultOf(await ca.request({ op: 'subscribe', taskId }));
    const sb = resultOf(await cb.request({ op: 'subscribe', taskId }));
    expect(sa).toMatchObject({ mode: 'snapshot', seq: 0 });
    expect(sb).toMatchObject({ mode: 'snapshot', seq: 0 });
    await traffic(taskId, [ca, cb], 'o');
    const last = await files.stack.store.lastUpdateSeq(K(taskId));
    expect(last).toBeGreaterThan(10);
    const [ua, ub] = await Promise.all([
      allUpdates(ca, taskId, last),
      allUpdates(cb, taskId, last),
    ]);
    expect(ua.map((u) => u.seq)).toEqual(Array.from({ length: last }, (_, i) => i + 1));
    expect(ub).toEqual(ua);
    // And what they saw is what the shard stream holds.
    const stored = (await files.stack.store.readUpdates(files.stack.store.shardOf(K(taskId)))).items
      .map((s) => s.update)
      .filter((u: Update) => u.taskId === K(taskId))
      .map((u) => ({ ...u, taskId }));
    expect(ua).toEqual(stored);
    await Promise.all([ca.close(), cb.close()]);
  });

  it('prompts to one session through A and B at once: exactly one admitted, the other queued', async () => {
    const taskId = 'race-1';
    const [ca, cb] = await clientsOnAAndB(taskId);
    const [ra, rb] = await Promise.all([
      ca.request(prompt(taskId, 's1', 'ka')),
      cb.request(prompt(taskId, 's1', 'kb')),
    ]);
    const outcomes = [resultOf(ra), resultOf(rb)].map((r) => {
      expect(r.status).toBe('decided');
      return (r.decision as Json).outcome;
    });
    expect(outcomes.sort()).toEqual(['admitted', 'queued']);
    const entries = (await files.stack.store.readTask(K(taskId))).items.map((s) => s.entry);
    expect(entries.filter((e) => e.type === 'prompt.admitted')).toHaveLength(1);
    expect(entries.filter((e) => e.type === 'prompt.queued')).toHaveLength(1);
    await Promise.all([ca.close(), cb.close()]);
  });

  it('the same key through A and B at once is one prompt: same promptId, same decision', async () => {
    const taskId = 'dup-1';
    const [ca, cb] = await clientsOnAAndB(taskId);
    const [ra, rb] = (
      await Promise.all([
        ca.request(prompt(taskId, 's1', 'same')),
        cb.request(prompt(taskId, 's1', 'same')),
      ])
    ).map(resultOf);
    expect(ra!.status).toBe('decided');
    expect(rb).toEqual(ra);
    const entries = (await files.stack.store.readTask(K(taskId))).items.map((s) => s.entry);
    const submits = entries.filter((e) => e.type === 'prompt.submit');
    // Both gateways appended their command; the domain made a record of one of them only.
    expect(submits).toHaveLength(2);
    const decided = entries.filter(
      (e) =>
        e.type === 'prompt.admitted' || e.type === 'prompt.queued' || e.type === 'prompt.rejected',
    );
    expect(decided).toHaveLength(1);
    expect((decided[0]!.data as { promptId: string }).promptId).toBe(ra!.promptId);
    const view = resultOf(await ca.request({ op: 'queue.list', taskId, sessionId: 's1' }));
    expect(view.entries).toEqual([]);
    // A retry later, through either gateway, still gets that decision and makes nothing new.
    const again = resultOf(await cb.request(prompt(taskId, 's1', 'same')));
    expect(again).toEqual(ra);
    await Promise.all([ca.close(), cb.close()]);
  });

  it('resume after a disconnect, through the other gateway, misses nothing', async () => {
    const taskId = 'resume-1';
    const [watcher, leaver] = await Promise.all([
      Client.connect(files.A, tok),
      Client.connect(files.A, tok),
    ]);
    await watcher.request({ op: 'subscribe', taskId });
    const { w, seen: mid } = await leftAfterStart(leaver, taskId);
    await traffic(taskId, [watcher], 'r', w);
    const last = await files.stack.store.lastUpdateSeq(K(taskId));
    const back = await Client.connect(files.B, tok);
    const r = resultOf(await back.request({ op: 'subscribe', taskId, afterSeq: mid }));
    expect(r).toEqual({ taskId, mode: 'resumed', seq: last });
    expect(back.messages.filter((m) => m.type === 'snapshot')).toHaveLength(0);
    const missed = back.updates(taskId);
    const all = await allUpdates(watcher, taskId, last);
    expect(missed).toEqual(all.filter((u) => (u.seq as number) > mid));
    await Promise.all([watcher.close(), back.close()]);
  });

  it('resume past retention gets a snapshot flagged resync', async () => {
    const taskId = 'retention-1';
    const { w, seen } = await leftAfterStart(await Client.connect(files.A, tok), taskId);
    await traffic(taskId, [await Client.connect(files.B, tok)], 't', w);
    // Retention: the shard's update stream keeps only its newest entries (MAXLEN), so the
    // updates after `seen` are gone — here cut to 2 entries at once.
    await files.stack.store.redis.xtrim(
      files.stack.store.keys.updates(files.stack.store.shardOf(K(taskId))),
      'MAXLEN',
      2,
    );
    const last = await files.stack.store.lastUpdateSeq(K(taskId));
    const back = await Client.connect(files.B, tok);
    const r = resultOf(await back.request({ op: 'subscribe', taskId, afterSeq: seen }));
    expect(r.mode).toBe('resync');
    const snap = back.messages.find((m) => m.type === 'snapshot')!;
    expect(snap.resync).toBe(true);
    const task = snap.task as Json;
    await waitFor(
      async () => (await files.stack.store.views.read(K(taskId)))?.seq === last,
      'view written',
    );
    // The snapshot plus whatever followed it is the task as it is now.
    expect(r.seq).toBe(last);
    expect(task.seq as number).toBeLessThanOrEqual(last);
    expect(back.updates(taskId).map((u) => u.seq)).toEqual(
      Array.from({ length: last - (task.seq as number) }, (_, i) => (task.seq as number) + 1 + i),
    );
    await back.close();
  });
});
