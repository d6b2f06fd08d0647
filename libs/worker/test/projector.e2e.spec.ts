import type { ExecutionQueue } from '@baton/jobs';
import type { StreamEntry, Update } from '@baton/protocol';
import type { EventStore } from '@baton/store';
import type { GatewayDouble } from '@baton/testing';
import {
  readAll,
  startExecution,
  waitFor,
  startWorkerStack,
  type WorkerProcess,
  type WorkerStack,
  readUpdatesOf,
} from '@baton/testing';

/**
 * The worker with the real owner: a projector process decides admission and hands prompts to the
 * worker's executions; a gateway double submits prompts as commands. Replay agents of a Claude
 * and a Codex recording drive the sessions; their views and decisions must follow the policy.
 */

const PREFIX = 'pw';
const SHARDS = 2;

let stack: WorkerStack;
let store: EventStore;
let queue: ExecutionQueue;
let gateway: GatewayDouble;
let worker: WorkerProcess;

beforeAll(async () => {
  stack = await startWorkerStack({ prefix: PREFIX, shards: SHARDS });
  ({ store, queue, gateway, worker } = stack);
});
afterAll(() => stack?.stop());

/** The session's activity as clients saw it change: `fg/subagents/running generation`. */
const activityTrail = (updates: Update[]) => {
  const trail: string[] = [];
  for (const u of updates) {
    if (u.type !== 'session.activity') continue;
    const a = u.data;
    const step = `${a.foregroundActivity ?? 'idle'}/${a.activeSubagentCount}`;
    if (trail.at(-1) !== step) trail.push(step);
  }
  return trail;
};

const indexOf = (entries: StreamEntry[], pred: (e: StreamEntry) => boolean, what: string) => {
  const i = entries.findIndex(pred);
  if (i === -1) throw new Error(`no ${what} in the stream`);
  return i;
};

/**
 * Resolves once the owner has folded everything in the task stream so far: it answers a no-op
 * command only after folding what came before it.
 */
async function settled(ref: { taskId: string; sessionId: string }): Promise<void> {
  const commandId = await gateway.command(ref, 'queue.set_auto_run', { enabled: true });
  await waitFor(
    async () =>
      (await readAll(store, ref.taskId)).some(
        (e) => e.type === 'queue.auto_run_set' && e.data.commandId === commandId,
      ),
    'the owner caught up',
  );
}

const admitted = (promptId: string) => (e: StreamEntry) =>
  e.type === 'prompt.admitted' && e.data.promptId === promptId;

it('Claude, handoff policy: the second prompt is admitted at the human-origin yield, not before', async () => {
  const ref = {
    taskId: 'local/claude-task',
    sessionId: 'claude-session',
    executionId: 'claude-x1',
  };
  await gateway.command(ref, 'session.configure', { admission: 'handoff' });
  await startExecution(store, queue, ref, { recording: 'claude-handoff-held-prompt', speed: 0 });
  await gateway.submit(ref, 'p1');
  await gateway.submit(ref, 'p2');

  // The recording holds the first prompt open until the background review ends, which it does
  // only after the second prompt's turn: everything finishing proves the handoff happened.
  const entries = await waitFor(async () => {
    const all = await readAll(store, ref.taskId);
    const turns = all.filter((e) => e.type === 'turn.ended').length;
    return turns === 2 ? all : false;
  }, 'both turns ended');

  const p1 = entries.find(admitted('p1'));
  const p2 = entries.find(admitted('p2'));
  expect(p1).toMatchObject({ data: { mode: 'turn' } });
  expect(p2).toMatchObject({ data: { mode: 'handoff' } });
  const g1 = p1!.type === 'prompt.admitted' ? p1!.data.admissionGeneration : -1;
  // Queued while the first prompt held the foreground, admitted right at its human-origin idle.
  const queued = indexOf(
    entries,
    (e) => e.type === 'prompt.queued' && e.data.promptId === 'p2',
    'p2 queued',
  );
  const yielded = indexOf(
    entries,
    (e) =>
      e.type === 'foreground.idle' &&
      e.data.origin === 'human' &&
      e.data.admissionGeneration === g1,
    'the human-origin idle of p1',
  );
  const admittedAt = indexOf(entries, admitted('p2'), 'p2 admitted');
  const p1Ended = indexOf(
    entries,
    (e) => e.type === 'turn.ended' && e.data.admissionGeneration === g1,
    'p1 turn end',
  );
  expect(queued).toBeLessThan(yielded);
  expect(yielded).toBeLessThan(admittedAt);
  expect(admittedAt).toBeLessThan(p1Ended);
  // The background subagent retired by its identified completion.
  expect(entries.some((e) => e.type === 'background.ended' && e.data.status === 'completed')).toBe(
    true,
  );

  // The session view went generating -> background (one subagent) -> generating (the handoff
  // turn) -> ... -> idle with nothing left.
  await settled(ref);
  const view = (await store.views.read(ref.taskId))!.sessions.find(
    (x) => x.sessionId === ref.sessionId,
  )!;
  expect(view.activity).toMatchObject({ foregroundActivity: null, runningGeneration: null });
  expect(view.activity.activeSubagentCount).toBe(0);
  expect(view.backgroundWork).toEqual([]);
  expect(view.queue.entries).toEqual([]);
  const trail = activityTrail(await readUpdatesOf(store, ref.taskId));
  expect(trail).toEqual([
    'idle/0', // the session exists (its queue) before the execution is ready
    'generating/0', // p1 claimed and dispatched
    'generating/1', // the background review launched
    'background/1', // p1's human-origin idle: the foreground yielded to attested work
    'generating/1', // p2 handed off
    'background/1', // p2's turn over, the review still running
    'idle/0', // the review's identified completion
    'generating/0', // the agent's own cycle reporting it
    'idle/0', // its end, and p1's held turn answered
  ]);
});

it('Codex, coarse policy: the second prompt waits for the first turn to end; delete stops the execution', async () => {
  const ref = { taskId: 'local/codex-task', sessionId: 'codex-session', executionId: 'codex-x1' };
  await startExecution(store, queue, ref, { recording: 'codex-exec-command', speed: 0 });
  await gateway.submit(ref, 'p1');
  await gateway.submit(ref, 'p2');
  const entries = await waitFor(async () => {
    const all = await readAll(store, ref.taskId);
    return all.some((e) => e.type === 'prompt.dispatched' && e.data.promptId === 'p2')
      ? all
      : false;
  }, 'p2 dispatched');
  const p1 = entries.find(admitted('p1'));
  const g1 = p1!.type === 'prompt.admitted' ? p1!.data.admissionGeneration : -1;
  const p1Ended = indexOf(
    entries,
    (e) => e.type === 'turn.ended' && e.data.admissionGeneration === g1,
    'p1 turn end',
  );
  expect(entries.find(admitted('p2'))).toMatchObject({ data: { mode: 'turn' } });
  expect(indexOf(entries, admitted('p2'), 'p2 admitted')).toBeGreaterThan(p1Ended);
  expect(
    entries.findIndex((e) => e.type === 'prompt.queued' && e.data.promptId === 'p2'),
  ).toBeLessThan(p1Ended);
  await settled(ref);
  const trail = activityTrail(await readUpdatesOf(store, ref.taskId));
  expect(trail).toEqual(['idle/0', 'generating/0', 'idle/0', 'generating/0']);

  // Deleting the session makes its owner stop the execution through the inbox.
  await gateway.command(ref, 'session.delete', {});
  const end = await waitFor(async () => {
    const all = await readAll(store, ref.taskId);
    return all.find((e) => e.type === 'execution.ended');
  }, 'execution ended');
  expect(end).toMatchObject({ executionId: ref.executionId, data: { reason: 'cancelled' } });
  await waitFor(
    async () =>
      !(await store.executions.leases(store.shardOf(ref.taskId))).some(
        (l) => l.executionId === ref.executionId,
      ),
    'lease dropped',
  );
  expect(worker.child.exitCode).toBeNull();
});
