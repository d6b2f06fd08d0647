import type { ExecutionQueue } from '@baton/jobs';
import type { SessionView, StreamEntry } from '@baton/protocol';
import type { RedisServer } from '@baton/redis-server';
import type { EventStore } from '@baton/store';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  GatewayDouble,
  childrenOf,
  factsOf,
  groupAlive,
  readAll,
  spawnLeasedProjector,
  spawnWorker,
  startExecution,
  waitFor,
  writeBackgroundRecording,
  type ProjectorProcess,
  type WorkerProcess,
  startQueueStore,
} from '@baton/testing';

/**
 * Horizontal scaling with real processes: three workers share thirty Claude sessions, each
 * running a background subagent (handoff policy, so they show `background`); a projector owns
 * the tasks. One worker is killed with SIGKILL:
 * its executions' leases lapse, the owner declares them lost (their registrations retired, the
 * sessions promptable again: a successor execution runs their next prompt), and the other twenty
 * executions go on untouched.
 */

const PREFIX = 'sc';
const SHARDS = 4;
// Thirty agents starting on a small shared machine starve processes for a while: leases sized
// so that only a dead worker's lapse, not a busy one's, is what the test sees.
// Thirty TypeScript agents start within seconds on a 2-core machine: a worker can wait several
// seconds for the CPU, and a lease that short would lapse for want of CPU, not of a worker.
const LEASE_MS = 10_000;
const EXECUTIONS = 30;

let rig: Awaited<ReturnType<typeof startQueueStore>>;
let server: RedisServer;
let store: EventStore;
let queue: ExecutionQueue;
let gateway: GatewayDouble;
let projector: ProjectorProcess | undefined;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  rig = await startQueueStore(PREFIX, SHARDS);
  ({ server, store, queue } = rig);
  gateway = new GatewayDouble(store);
});
afterAll(async () => {
  projector?.child.kill('SIGCONT');
  for (const p of [...workers.map((w) => w.child), projector?.child]) p?.kill('SIGTERM');
  await Promise.all([...workers.map((w) => w.exited), projector?.exited]);
  await rig.stop();
});

const common = () => ({
  REDIS_URL: server.url,
  BATON_PREFIX: PREFIX,
  BATON_SHARDS: String(SHARDS),
});
const startWorker = async (name: string) => {
  const w = await spawnWorker({
    ...common(),
    BATON_INSTANCE_ID: name,
    WORKER_CONCURRENCY: '10',
    WORKER_EXECUTION_LEASE_MS: String(LEASE_MS),
    WORKER_RECORDINGS_DIR: recordings,
  });
  workers.push(w);
  return w;
};

const refOf = (i: number, generation = 1) => ({
  taskId: `local/task-${i}`,
  sessionId: `session-${i}`,
  executionId: `exec-${i}-${generation}`,
});
type Ref = ReturnType<typeof refOf>;

const sessionView = async (ref: Ref): Promise<SessionView | undefined> =>
  (await store.views.read(ref.taskId))?.sessions.find((s) => s.sessionId === ref.sessionId);

const expiredLeases = async () => {
  const all = await Promise.all(
    Array.from({ length: SHARDS }, (_, s) => store.executions.expiredLeases(s)),
  );
  return all
    .flat()
    .map((l) => l.executionId)
    .sort();
};

const has = (entries: StreamEntry[], pred: (e: StreamEntry) => boolean) => entries.some(pred);

let recordings = '';

it('spreads 30 executions over 3 workers; a killed worker loses only its own', async () => {
  recordings = mkdtempSync(join(tmpdir(), 'baton-recordings-'));
  // After its first prompt, the agent's background subagent works for two minutes, a child tool
  // call every 200 ms: sessions in `background` whose facts keep flowing.
  writeBackgroundRecording(join(recordings, 'background.jsonl'), 600, 200);
  projector = await spawnLeasedProjector({
    ...common(),
    PROJECTOR_LEASE_TTL_MS: '3000',
    PROJECTOR_RENEW_MS: '500',
  });
  const [victim] = await Promise.all([0, 1, 2].map((i) => startWorker(`scale-worker-${i}`)));

  const refs: Ref[] = Array.from({ length: EXECUTIONS }, (_, i) => refOf(i));
  for (const [i, ref] of refs.entries()) {
    // In waves of ten, so agent start-ups do not all compete for the CPU at once.
    if (i > 0 && i % 10 === 0) {
      for (const r of refs.slice(i - 10, i)) {
        await waitFor(
          async () => (await readAll(store, r.taskId)).some((e) => e.type === 'prompt.dispatched'),
          `${r.sessionId} running`,
        );
      }
    }
    // Handoff: a session whose foreground yielded to its subagent shows `background`.
    await gateway.command(ref, 'session.configure', { admission: 'handoff' });
    await startExecution(store, queue, ref, { recording: 'background' });
    await gateway.submit(ref, `p1-${ref.taskId}`);
  }

  // Every session reaches `background` with its subagent; each worker hosts a third.
  const hostOf = new Map<string, string>();
  for (const ref of refs) {
    await waitFor(
      async () => (await sessionView(ref))?.activity.foregroundActivity === 'background',
      `${ref.sessionId} in background`,
      120_000,
    );
    const started = factsOf(await readAll(store, ref.taskId), ref.executionId).find(
      (f) => f.type === 'execution.started',
    );
    hostOf.set(
      ref.executionId,
      started?.type === 'execution.started' ? started.data.workerId! : '',
    );
  }
  expect(workers.map((w) => [...hostOf.values()].filter((h) => h === w.instanceId).length)).toEqual(
    [10, 10, 10],
  );
  const lost = refs.filter((r) => hostOf.get(r.executionId) === victim!.instanceId);
  const kept = refs.filter((r) => hostOf.get(r.executionId) !== victim!.instanceId);
  const victimAgents = childrenOf(victim!.pid);
  expect(victimAgents).toHaveLength(10);
  expect(await expiredLeases()).toEqual([]);

  // With the owner paused, the lapse itself is visible: exactly the victim's leases expire.
  projector.child.kill('SIGSTOP');
  victim!.child.kill('SIGKILL');
  await victim!.exited;
  const factsAtKill = new Map<string, number>();
  for (const ref of kept) {
    factsAtKill.set(
      ref.executionId,
      factsOf(await readAll(store, ref.taskId), ref.executionId).length,
    );
  }
  const lostIds = lost.map((r) => r.executionId).sort();
  await waitFor(
    async () => JSON.stringify(await expiredLeases()) === JSON.stringify(lostIds),
    'the victim’s leases lapsed',
  );
  // Its agents lost their client (stdin closed) and are gone with it.
  await waitFor(() => victimAgents.every((pid) => !groupAlive(pid)), 'the victim’s agents gone');
  projector.child.kill('SIGCONT');

  // The owner declares them lost: registrations retired, the sessions idle and promptable.
  for (const ref of lost) {
    await waitFor(
      async () =>
        has(
          await readAll(store, ref.taskId),
          (e) => e.type === 'execution.lost' && e.data.executionId === ref.executionId,
        ),
      `${ref.executionId} declared lost`,
    );
    const view = await waitFor(async () => {
      const v = await sessionView(ref);
      return v && v.activity.foregroundActivity === null ? v : false;
    }, `${ref.sessionId} idle after the loss`);
    expect(view.activity).toMatchObject({ activeSubagentCount: 0, runningGeneration: null });
    expect(view.backgroundWork).toEqual([]);
  }
  expect(await expiredLeases()).toEqual([]);

  // The others went on untouched: new facts for each, no end, no loss, still one subagent.
  for (const ref of kept) {
    await waitFor(
      async () =>
        factsOf(await readAll(store, ref.taskId), ref.executionId).length >=
        factsAtKill.get(ref.executionId)! + 3,
      `${ref.executionId} still flowing`,
    );
    const entries = await readAll(store, ref.taskId);
    expect(has(entries, (e) => e.type === 'execution.ended' || e.type === 'execution.lost')).toBe(
      false,
    );
    expect((await sessionView(ref))?.activity).toMatchObject({
      foregroundActivity: 'background',
      activeSubagentCount: 1,
    });
  }

  // Promptable again: a new prompt waits for an execution, and a successor execution (a new id,
  // the next generation) on a fresh worker runs it.
  await startWorker('scale-worker-3');
  for (const ref of lost) {
    await gateway.submit(ref, `p2-${ref.taskId}`);
    const next = refOf(Number(/task-(\d+)$/.exec(ref.taskId)![1]), 2);
    await startExecution(store, queue, next, { recording: 'background' });
  }
  for (const ref of lost) {
    const next = refOf(Number(/task-(\d+)$/.exec(ref.taskId)![1]), 2);
    const dispatched = await waitFor(
      async () =>
        (await readAll(store, ref.taskId)).find(
          (e) => e.type === 'prompt.dispatched' && e.data.promptId === `p2-${ref.taskId}`,
        ),
      `p2 of ${ref.sessionId} dispatched`,
    );
    expect(dispatched).toMatchObject({ executionId: next.executionId, generation: 2 });
  }
  for (const ref of kept) {
    const entries = await readAll(store, ref.taskId);
    expect(has(entries, (e) => e.type === 'execution.ended' || e.type === 'execution.lost')).toBe(
      false,
    );
  }
}, 300_000);
