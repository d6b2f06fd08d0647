// A parked session whose resume found no worker in time is resumed again by the next prompt, on a
// new execution — not the failed job of the last resume, which BullMQ keeps for days. Every part
// a real process: redis-server, a projector with short park and start bounds, a gateway, and a
// worker with one slot that is stopped while the first resume waits, then started again.
import { BatonClient } from '@baton/client';
import type { StreamEntry } from '@baton/protocol';
import {
  startStack,
  token,
  type Stack,
  spawnWorker,
  type WorkerProcess,
  waitFor,
} from '@baton/testing';

jest.setTimeout(180_000);

const TENANT = 'acme';
const START_BOUND_MS = '3000';
const PROFILES = JSON.stringify({
  profiles: {
    fresh: { kind: 'replay', recording: 'generic-turn', speed: 0, permissionPolicy: 'deny' },
  },
});

let stack: Stack;
const workers: WorkerProcess[] = [];
const tok = token({ tenant: TENANT, scope: 'read prompt execute' });

beforeAll(async () => {
  stack = await startStack({
    gateways: 1,
    projectors: 1,
    gatewayEnv: { BATON_PROFILES: PROFILES },
    projectorEnv: { PROJECTOR_PARK_IDLE_MS: '1500', EXECUTION_START_TIMEOUT_MS: START_BOUND_MS },
  });
});
afterAll(async () => {
  for (const w of workers) await stopWorker(w);
  await stack?.stop();
});

async function startWorker() {
  const w = await spawnWorker({
    ...stack.env,
    BATON_PROFILES: PROFILES,
    WORKER_CONCURRENCY: '1',
    EXECUTION_START_TIMEOUT_MS: START_BOUND_MS,
  });
  workers.push(w);
  return w;
}

async function stopWorker(w: WorkerProcess) {
  if (w.child.exitCode !== null) return;
  w.child.kill('SIGTERM');
  await w.exited;
}

const stream = async (taskId: string): Promise<StreamEntry[]> =>
  (await stack.store.readTask(`${TENANT}/${taskId}`, '0-0', 1_000)).items.map((i) => i.entry);

it('resumes a parked session again on a new execution after a resume found no worker in time', async () => {
  const client = new BatonClient();
  await client.connect(`${stack.gateways[0]!.wsUrl}/ws`, tok);
  const sub = client.subscribe('t-again', {});
  await sub.ready;
  const s = () => sub.view?.sessions.find((x) => x.sessionId === 's');
  const prompt = (text: string) =>
    client.prompt({ taskId: 't-again', sessionId: 's', text, idempotencyKey: text });
  const turnsEnded = async () =>
    (await stream('t-again')).filter((e) => e.type === 'turn.ended').length;

  // A first execution runs one prompt and is parked.
  const first = await startWorker();
  const started = await fetch(`${stack.gateways[0]!.url}/v1/tasks/t-again/sessions/s/executions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
    body: JSON.stringify({ profile: 'fresh' }),
  });
  expect(started.status).toBe(202);
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
  const expired = (await stream('t-again')).find((e) => e.type === 'execution.request_expired')!
    .data as { executionId: string };
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
    (await stream('t-again')).filter((e) => e.type === 'prompt.dispatched').length;
  await waitFor(async () => (await dispatched()) === 3, 'both waiting prompts dispatched', 60_000);
  expect(await turnsEnded()).toBe(2);
  const starts = (await stream('t-again')).filter((e) => e.type === 'execution.started');
  expect(starts).toHaveLength(2);
  const resumed = starts[1] as { executionId: string };
  expect(resumed.executionId).toMatch(/^resume-/);
  expect(resumed.executionId).not.toBe(expired.executionId);
  await client.close();
});
