// A parked session whose resume found no worker in time is resumed again by the next prompt, on a
// new execution — not the failed job of the last resume, which BullMQ keeps for days. Every part
// a real process: redis-server, a projector with short park and start bounds, a gateway, and a
// worker with one slot that is stopped while the first resume waits, then started again.
import {
  spawnWorker,
  startAgentStack,
  stopWorker,
  waitFor,
  type AgentStack,
  type WorkerProcess,
} from '@baton/testing';

jest.setTimeout(180_000);

const START_BOUND_MS = '3000';

let stack: AgentStack;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  stack = await startAgentStack({
    profiles: {
      fresh: { kind: 'replay', recording: 'generic-turn', speed: 0, permissionPolicy: 'deny' },
    },
    projectorEnv: { PROJECTOR_PARK_IDLE_MS: '1500', EXECUTION_START_TIMEOUT_MS: START_BOUND_MS },
    // The test starts and stops its workers itself.
    worker: false,
  });
});
afterAll(async () => {
  for (const w of workers) await stopWorker(w);
  await stack?.stop();
});

async function startWorker() {
  const w = await spawnWorker({
    ...stack.workerEnv,
    WORKER_CONCURRENCY: '1',
    EXECUTION_START_TIMEOUT_MS: START_BOUND_MS,
  });
  workers.push(w);
  return w;
}

it('resumes a parked session again on a new execution after a resume found no worker in time', async () => {
  const { client, s } = await stack.watch('t-again');
  const prompt = (text: string) =>
    client.prompt({ taskId: 't-again', sessionId: 's', text, idempotencyKey: text });
  const turnsEnded = async () =>
    (await stack.stream('t-again')).filter((e) => e.type === 'turn.ended').length;

  // A first execution runs one prompt and is parked.
  const first = await startWorker();
  expect((await stack.execute('t-again', { profile: 'fresh' })).status).toBe(202);
  await waitFor(() => s()?.activity.state === 'idle', 'ready');
  expect(await prompt('one')).toMatchObject({ decision: { outcome: 'admitted' } });
  await waitFor(() => s()?.parked, 'parked', 30_000);
  await waitFor(async () => (await turnsEnded()) === 1, 'the first turn in the stream');

  // No worker: the prompt's resume waits past its start bound and fails.
  await stopWorker(first);
  expect(await prompt('two')).toMatchObject({
    decision: { outcome: 'queued', reason: 'no_execution' },
  });
  await waitFor(
    () => s()?.activity.attention?.reason === 'no_worker',
    'the resume found no worker in time',
    30_000,
  );
  const expired = (await stack.stream('t-again')).find(
    (e) => e.type === 'execution.request_expired',
  )!.data as { executionId: string };
  expect(expired.executionId).toMatch(/^resume-/);

  // A worker again, and a prompt behind the waiting one: it resumes the session on a new
  // execution, and both prompts go to it.
  await startWorker();
  expect(await prompt('three')).toMatchObject({
    decision: { outcome: 'queued', reason: 'queue_not_empty' },
  });
  // The replay agent plays one turn per execution: the second prompt runs to its end, the third
  // reaches the agent after it.
  const dispatched = async () =>
    (await stack.stream('t-again')).filter((e) => e.type === 'prompt.dispatched').length;
  await waitFor(async () => (await dispatched()) === 3, 'both waiting prompts dispatched', 60_000);
  expect(await turnsEnded()).toBe(2);
  const starts = (await stack.stream('t-again')).filter((e) => e.type === 'execution.started');
  expect(starts).toHaveLength(2);
  const resumed = starts[1] as { executionId: string };
  expect(resumed.executionId).toMatch(/^resume-/);
  expect(resumed.executionId).not.toBe(expired.executionId);
  await client.close();
});
