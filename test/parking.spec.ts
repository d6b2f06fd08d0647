// Capacity: an execution whose session is idle is parked (the worker closes the agent
// cleanly and frees its slot, the ACP session id is kept), and the next prompt — or an explicit
// resume — starts a new execution that loads that session. Every part a real process:
// redis-server, a projector with a short park period, a worker with ONE slot, a gateway.
import { rawFramesOnceThere, startAgentStack, waitFor, type AgentStack } from '@baton/testing';

jest.setTimeout(180_000);

const PARK_MS = 1_500;

let stack: AgentStack;

beforeAll(async () => {
  stack = await startAgentStack({
    profiles: {
      // An agent that cannot load a session (generic-turn: loadSession false): a resume starts a
      // fresh session, and says so. Its permission request is denied at once (not this test's
      // subject).
      fresh: { kind: 'replay', recording: 'generic-turn', speed: 0, permissionPolicy: 'deny' },
      // A Claude recording whose agent advertises loadSession.
      claude: { kind: 'replay', recording: 'claude-monitor-plain', speed: 0 },
    },
    // Output outside a turn (a plain client's task-notification cycle) decays quickly too.
    projectorEnv: { PROJECTOR_PARK_IDLE_MS: String(PARK_MS), PROJECTOR_QUIET_MS: '1000' },
    // One slot: a parked execution must give it back, or nothing else runs.
    workerEnv: { WORKER_CONCURRENCY: '1' },
  });
});
afterAll(() => stack?.stop());

/** The session's REST view (an empty object until the task exists). */
const view = async (taskId: string) =>
  (await stack.rest('GET', `/v1/tasks/${taskId}/sessions/s`)).body as {
    activity?: { state: string };
    parked?: unknown;
  };

it('an idle session is parked (slot freed, ACP session kept); the next prompt resumes it on a new execution', async () => {
  const { client, s } = await stack.watch('t-park');
  expect((await stack.execute('t-park', { profile: 'fresh' })).status).toBe(202);
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
  const x1 = (await stack.stream('t-park')).find((e) => e.type === 'execution.started') as {
    executionId: string;
  };
  expect(s()!.parked).toMatchObject({
    executionId: x1.executionId,
    loadable: false,
    profile: 'fresh',
  });
  const entries = await stack.stream('t-park');
  expect(entries.find((e) => e.type === 'execution.parked')?.data).toEqual({
    executionId: x1.executionId,
  });
  expect(entries.find((e) => e.type === 'execution.ended')?.data).toMatchObject({
    reason: 'completed',
  });
  const acp = entries.find((e) => e.type === 'agent.session')!.data as { acpSessionId: string };
  expect(s()!.parked!.acpSessionId).toBe(acp.acpSessionId);

  // The slot is free: another session's execution runs on the one-slot worker.
  expect((await stack.execute('t-other', { profile: 'fresh' })).status).toBe(202);
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
    async () => (await stack.stream('t-park')).filter((e) => e.type === 'turn.ended').length === 2,
    'second turn ended on the resumed execution',
    60_000,
  );
  const after = await stack.stream('t-park');
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
  const { client, s } = await stack.watch('t-load');
  expect((await stack.execute('t-load', { profile: 'claude' })).status).toBe(202);
  await waitFor(() => s()?.activity.state === 'idle', 'ready');
  await waitFor(() => s()?.parked, 'parked', 30_000);
  const parked = s()!.parked!;
  expect(parked).toMatchObject({ loadable: true, profile: 'claude' });

  // Not parked: nothing to resume.
  expect((await stack.rest('POST', '/v1/tasks/t-nothing/sessions/s/resume')).status).toBe(404);

  // The recording of a load (a replay must be told what to play).
  const resumed = await stack.rest('POST', '/v1/tasks/t-load/sessions/s/resume', {
    recording: 'claude-session-load-history',
  });
  expect(resumed.status).toBe(202);
  // Resuming again is the same execution.
  const again = await stack.rest('POST', '/v1/tasks/t-load/sessions/s/resume', {
    recording: 'claude-session-load-history',
  });
  if (again.status === 202) expect(again.body.executionId).toBe(resumed.body.executionId);
  else expect(again.status).toBe(409); // already unparked by the time it came

  await waitFor(() => s()?.activity.state === 'idle' && !s()?.parked, 'resumed and ready');
  const sessions = (await stack.stream('t-load')).filter((e) => e.type === 'agent.session');
  expect(sessions.map((e) => e.data)).toEqual([
    { acpSessionId: parked.acpSessionId, loadable: true, loaded: false },
    { acpSessionId: parked.acpSessionId, loadable: true, loaded: true },
  ]);
  // What the agent got: session/load of the parked session.
  const x2 = (await stack.stream('t-load')).filter((e) => e.type === 'execution.started')[1] as {
    executionId: string;
  };
  // The session's set-up is logged once either request is (session/new would come in its place).
  const frames = await rawFramesOnceThere(
    stack.store,
    `${stack.tenant}/t-load`,
    x2.executionId,
    (fs) => fs.some((f) => /"session\/(load|new)"/.test(f.line)),
    'the session set-up',
  );
  const out = frames
    .filter((f) => f.direction === 'out')
    .map((f) => JSON.parse(f.line) as { method?: string; params?: { sessionId?: string } });
  expect(out.find((m) => m.method === 'session/load')?.params?.sessionId).toBe(parked.acpSessionId);
  expect(out.some((m) => m.method === 'session/new')).toBe(false);

  // And it takes the next prompt.
  await client.prompt({ taskId: 't-load', sessionId: 's', text: 'Continue', idempotencyKey: 'c1' });
  await waitFor(
    async () => (await stack.stream('t-load')).some((e) => e.type === 'turn.ended'),
    'turn on the loaded session',
    60_000,
  );
  await client.close();
});

it('work that is only possibly finished neither headlines background nor holds parking; the park retires it', async () => {
  // claude-monitor-plain, a real plain-client recording: a Monitor whose every
  // task-notification cycle may be an event, so it stays listed, possibly finished, for the
  // rest of the execution.
  const { client, s, views } = await stack.watch('t-maybe');
  expect((await stack.execute('t-maybe', { profile: 'claude' })).status).toBe(202);
  await waitFor(() => s()?.activity.state === 'idle', 'ready', 60_000);
  await client.prompt({ taskId: 't-maybe', sessionId: 's', text: 'Watch', idempotencyKey: 'm1' });
  await waitFor(
    () =>
      views.some((v) =>
        v.sessions.some(
          (x) =>
            x.sessionId === 's' &&
            x.backgroundWork.length > 0 &&
            x.backgroundWork.every((w) => w.possiblyFinished === true),
        ),
      ),
    'the Monitor listed, possibly finished',
    60_000,
  );
  // Parked after the idle bound, as an idle session is; its end retired the Monitor.
  await waitFor(() => s()?.parked, 'parked', 30_000);
  expect(s()!.backgroundWork).toEqual([]);
  // No view claimed background work once every listed item was possibly finished.
  for (const v of views) {
    const x = v.sessions.find((y) => y.sessionId === 's');
    if (x && x.backgroundWork.length > 0 && x.backgroundWork.every((w) => w.possiblyFinished))
      expect(x.activity.foregroundActivity).not.toBe('background');
  }
  const rest = await view('t-maybe');
  expect(rest.parked).toMatchObject({ profile: 'claude' });
  await client.close();
});
