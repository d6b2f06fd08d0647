// Issue 18, capacity: an execution whose session is idle is parked (the worker closes the agent
// cleanly and frees its slot, the ACP session id is kept), and the next prompt — or an explicit
// resume — starts a new execution that loads that session. Every part a real process:
// redis-server, a projector with a short park period, a worker with ONE slot, a gateway.
import { BatonClient } from '@baton/client';
import type { StreamEntry, TaskView } from '@baton/protocol';
import {
  startStack,
  token,
  type Stack,
  spawnWorker,
  stopWorker,
  type WorkerProcess,
  waitFor,
} from '@baton/testing';

jest.setTimeout(180_000);

const TENANT = 'acme';
const PARK_MS = 1_500;
const PROFILES = JSON.stringify({
  profiles: {
    // An agent that cannot load a session (generic-turn: loadSession false): a resume starts a
    // fresh session, and says so. Its permission request is denied at once (not this test's
    // subject).
    fresh: { kind: 'replay', recording: 'generic-turn', speed: 0, permissionPolicy: 'deny' },
    // A Claude recording whose agent advertises loadSession.
    claude: { kind: 'replay', recording: 'claude-monitor-plain', speed: 0 },
  },
});

let stack: Stack;
let worker: WorkerProcess;
let gatewayUrl: string;
const tok = token({ tenant: TENANT, scope: 'read prompt execute' });

beforeAll(async () => {
  stack = await startStack({
    gateways: 1,
    projectors: 1,
    gatewayEnv: { BATON_PROFILES: PROFILES },
    projectorEnv: { PROJECTOR_PARK_IDLE_MS: String(PARK_MS) },
  });
  gatewayUrl = stack.gateways[0]!.url;
  // One slot: a parked execution must give it back, or nothing else runs.
  worker = await spawnWorker({ ...stack.env, BATON_PROFILES: PROFILES, WORKER_CONCURRENCY: '1' });
});
afterAll(async () => {
  await stopWorker(worker);
  await stack?.stop();
});

async function call(method: string, path: string, body?: unknown) {
  const r = await fetch(`${gatewayUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

/** The session's REST view (an empty object until the task exists). */
const view = async (taskId: string) =>
  (await call('GET', `/v1/tasks/${taskId}/sessions/s`)).body as {
    activity?: { state: string };
    parked?: unknown;
  };

const stream = async (taskId: string): Promise<StreamEntry[]> =>
  (await stack.store.readTask(`${TENANT}/${taskId}`, '0-0', 1_000)).items.map((i) => i.entry);

async function watch(taskId: string) {
  const client = new BatonClient();
  await client.connect(`${stack.gateways[0]!.wsUrl}/ws`, tok);
  const views: TaskView[] = [];
  const sub = client.subscribe(taskId, { onView: (v) => views.push(v) });
  await sub.ready;
  const s = () => sub.view?.sessions.find((x) => x.sessionId === 's');
  return { client, sub, views, s };
}

it('an idle session is parked (slot freed, ACP session kept); the next prompt resumes it on a new execution', async () => {
  const { client, s } = await watch('t-park');
  expect(
    (await call('POST', '/v1/tasks/t-park/sessions/s/executions', { profile: 'fresh' })).status,
  ).toBe(202);
  await waitFor(() => s()?.activity.state === 'idle', 'ready');
  const first = await client.prompt({
    taskId: 't-park',
    sessionId: 's',
    text: 'one',
    idempotencyKey: 'k1',
  });
  expect(first).toMatchObject({ decision: { outcome: 'admitted' } });
  await waitFor(() => s()?.activity.state === 'waiting_for_input', 'first turn ended');

  // Idle for the park period: parked. The agent was closed cleanly (completed, not cancelled).
  await waitFor(() => s()?.parked, 'parked', 30_000);
  const x1 = (await stream('t-park')).find((e) => e.type === 'execution.started') as {
    executionId: string;
  };
  expect(s()!.parked).toMatchObject({
    executionId: x1.executionId,
    loadable: false,
    profile: 'fresh',
  });
  const entries = await stream('t-park');
  expect(entries.find((e) => e.type === 'execution.parked')?.data).toEqual({
    executionId: x1.executionId,
  });
  expect(entries.find((e) => e.type === 'execution.ended')?.data).toMatchObject({
    reason: 'completed',
  });
  const acp = entries.find((e) => e.type === 'agent.session')!.data as { acpSessionId: string };
  expect(s()!.parked!.acpSessionId).toBe(acp.acpSessionId);

  // The slot is free: another session's execution runs on the one-slot worker.
  expect(
    (await call('POST', '/v1/tasks/t-other/sessions/s/executions', { profile: 'fresh' })).status,
  ).toBe(202);
  await waitFor(
    async () => (await view('t-other')).activity?.state === 'idle',
    'another session runs in the freed slot',
  );
  // It goes idle and is parked in turn, giving the slot back.
  await waitFor(async () => (await view('t-other')).parked, 'the other parked', 30_000);

  // The next prompt resumes the session: a new execution of the same profile (a fresh ACP
  // session, since this agent cannot load one — said so), and the prompt runs on it.
  const second = await client.prompt({
    taskId: 't-park',
    sessionId: 's',
    text: 'two',
    idempotencyKey: 'k2',
  });
  // The owner finds no execution; the gateway that took the prompt starts the resuming one.
  expect(second).toMatchObject({ decision: { outcome: 'queued', reason: 'no_execution' } });
  await waitFor(
    async () => (await stream('t-park')).filter((e) => e.type === 'turn.ended').length === 2,
    'second turn ended on the resumed execution',
    60_000,
  );
  const after = await stream('t-park');
  const starts = after.filter((e) => e.type === 'execution.started');
  expect(starts).toHaveLength(2);
  const x2 = starts[1] as { executionId: string; data: { profile?: string } };
  expect(x2.executionId).toMatch(/^resume-/);
  expect(x2.data.profile).toBe('fresh');
  expect(
    after
      .filter((e) => e.type === 'agent.session')
      .map((e) => (e.data as { loaded: boolean }).loaded),
  ).toEqual([false, false]);
  expect(s()!.parked ?? null).toBeNull();
  await client.close();
});

it('an explicit resume loads the parked ACP session (session/load) when the agent can', async () => {
  const { client, s } = await watch('t-load');
  expect(
    (await call('POST', '/v1/tasks/t-load/sessions/s/executions', { profile: 'claude' })).status,
  ).toBe(202);
  await waitFor(() => s()?.activity.state === 'idle', 'ready');
  await waitFor(() => s()?.parked, 'parked', 30_000);
  const parked = s()!.parked!;
  expect(parked).toMatchObject({ loadable: true, profile: 'claude' });

  // Not parked: nothing to resume.
  expect((await call('POST', '/v1/tasks/t-nothing/sessions/s/resume')).status).toBe(404);

  // The recording of a load (a replay must be told what to play).
  const resumed = await call('POST', '/v1/tasks/t-load/sessions/s/resume', {
    recording: 'claude-session-load-history',
  });
  expect(resumed.status).toBe(202);
  // Resuming again is the same execution.
  const again = await call('POST', '/v1/tasks/t-load/sessions/s/resume', {
    recording: 'claude-session-load-history',
  });
  if (again.status === 202) expect(again.body.executionId).toBe(resumed.body.executionId);
  else expect(again.status).toBe(409); // already unparked by the time it came

  await waitFor(() => s()?.activity.state === 'idle' && !s()?.parked, 'resumed and ready');
  const sessions = (await stream('t-load')).filter((e) => e.type === 'agent.session');
  expect(sessions.map((e) => e.data)).toEqual([
    { acpSessionId: parked.acpSessionId, loadable: true, loaded: false },
    { acpSessionId: parked.acpSessionId, loadable: true, loaded: true },
  ]);
  // What the agent got: session/load of the parked session.
  const x2 = (await stream('t-load')).filter((e) => e.type === 'execution.started')[1] as {
    executionId: string;
  };
  const out = (await stack.store.rawFrames.read(`${TENANT}/t-load`, x2.executionId)).items
    .filter((f) => f.direction === 'out')
    .map((f) => JSON.parse(f.line) as { method?: string; params?: { sessionId?: string } });
  expect(out.find((m) => m.method === 'session/load')?.params?.sessionId).toBe(parked.acpSessionId);
  expect(out.some((m) => m.method === 'session/new')).toBe(false);

  // And it takes the next prompt.
  await client.prompt({ taskId: 't-load', sessionId: 's', text: 'Continue', idempotencyKey: 'c1' });
  await waitFor(
    async () => (await stream('t-load')).some((e) => e.type === 'turn.ended'),
    'turn on the loaded session',
    60_000,
  );
  await client.close();
});
