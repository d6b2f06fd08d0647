// Issue 18, permissions answered by people, with every part a real process: redis-server, a
// projector (whose clock denies a request nobody answers), a worker hosting a replay agent that
// asks permission mid-turn (libs/acp/fixtures/generic-turn.jsonl, under the default `ask` policy),
// a gateway; clients answer over the CLI, WebSocket (@baton/client) and REST.
import { BatonClient } from '@baton/client';
import type { CommandResult, StreamEntry, TaskView } from '@baton/protocol';
import {
  startStack,
  token,
  type Stack,
  spawnWorker,
  stopWorker,
  type WorkerProcess,
  cli,
  waitFor,
} from '@baton/testing';

jest.setTimeout(180_000);

const TENANT = 'acme';
const PERMISSION_TIMEOUT_MS = 15_000;
const PROFILES = JSON.stringify({
  profiles: {
    // The default policy: ask a person.
    asker: { kind: 'replay', recording: 'generic-turn', speed: 0 },
    // The operator's choice: answered at once, and still recorded.
    allower: {
      kind: 'replay',
      recording: 'generic-turn',
      speed: 0,
      permissionPolicy: 'allow-once',
    },
  },
});

let stack: Stack;
let worker: WorkerProcess;
let gatewayUrl: string;
const tok = token({ tenant: TENANT, scope: 'read prompt execute', sub: 'alice@example.com' });
const readOnly = token({ tenant: TENANT, scope: 'read', sub: 'bob' });

beforeAll(async () => {
  stack = await startStack({
    gateways: 1,
    projectors: 1,
    gatewayEnv: { BATON_PROFILES: PROFILES },
    projectorEnv: { PROJECTOR_PERMISSION_TIMEOUT_MS: String(PERMISSION_TIMEOUT_MS) },
  });
  gatewayUrl = stack.gateways[0]!.url;
  worker = await spawnWorker({ ...stack.env, BATON_PROFILES: PROFILES });
});
afterAll(async () => {
  await stopWorker(worker);
  await stack?.stop();
});

async function call(method: string, path: string, body?: unknown, auth = tok) {
  const r = await fetch(`${gatewayUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: r.status, body: (await r.json()) as unknown };
}

const stream = async (taskId: string): Promise<StreamEntry[]> =>
  (await stack.store.readTask(`${TENANT}/${taskId}`, '0-0', 1_000)).items.map((i) => i.entry);

/** A session of its own task with an execution of `profile` that is ready, and a client on it. */
async function session(taskId: string, profile: 'asker' | 'allower') {
  const client = new BatonClient();
  await client.connect(`${stack.gateways[0]!.wsUrl}/ws`, tok);
  const views: TaskView[] = [];
  const sub = client.subscribe(taskId, { onView: (v) => views.push(v) });
  await sub.ready;
  const started = await call('POST', `/v1/tasks/${taskId}/sessions/s/executions`, { profile });
  expect(started.status).toBe(202);
  await waitFor(
    () => sub.view?.sessions.find((s) => s.sessionId === 's')?.activity.state === 'idle',
    `${taskId} ready`,
  );
  const prompt = await client.prompt({
    taskId,
    sessionId: 's',
    text: 'Fix the bug',
    idempotencyKey: `${taskId}-1`,
  });
  expect(prompt).toMatchObject({ decision: { outcome: 'admitted' } });
  const s = () => sub.view!.sessions.find((x) => x.sessionId === 's')!;
  return { client, sub, views, s };
}

it('a person answers over the CLI; a second answer (WS, REST) is refused and changes nothing; the agent proceeds', async () => {
  const { client, sub, s } = await session('t-answer', 'asker');
  // The session waits for a person: visibly, with what the agent asks and what it offers.
  await waitFor(() => s().activity.attention?.kind === 'needs_person', 'waiting for a person');
  expect(s().activity.attention).toMatchObject({
    kind: 'needs_person',
    reason: 'permission_requested',
    message: 'the agent asks permission: Edit src/a.ts',
  });
  expect(s().activity.state).toBe('running');
  expect(s().permissions).toEqual([
    {
      requestId: expect.any(String),
      toolCallId: 'tc-1',
      title: 'Edit src/a.ts',
      options: [
        { optionId: 'allow', name: 'Allow', kind: 'allow_once' },
        { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
      ],
      executionId: expect.any(String),
    },
  ]);
  expect(sub.view!.activity.sessionsNeedingPerson).toBe(1);
  const requestId = s().permissions![0]!.requestId;
  // REST's view says the same.
  const rest = await call('GET', '/v1/tasks/t-answer/sessions/s');
  expect(rest.body).toMatchObject({ permissions: [{ requestId, title: 'Edit src/a.ts' }] });

  // The CLI lists it, and a read-only token cannot answer it.
  const env = { BATON_GATEWAY_URL: gatewayUrl, BATON_TOKEN: tok };
  const listed = await cli(['permissions', 't-answer', 's'], env);
  expect(listed.code).toBe(0);
  expect(JSON.parse(listed.stdout.trim().split('\n')[0]!)).toMatchObject({ requestId });
  const refused = await call(
    'POST',
    `/v1/tasks/t-answer/sessions/s/permissions/${requestId}`,
    { optionId: 'allow' },
    readOnly,
  );
  expect(refused.status).toBe(403);

  // The person answers (CLI); the owner takes it, the worker hands it to the agent.
  const answered = await cli(['permissions', 't-answer', 's', 'answer', requestId, 'allow'], env);
  expect(answered.stderr).toBe('');
  expect(JSON.parse(answered.stdout)).toMatchObject({ status: 'done' });

  // A second answer over WebSocket: failed, with a reply that says why; nothing changes.
  const again: CommandResult = await client.answerPermission({
    taskId: 't-answer',
    sessionId: 's',
    requestId,
    optionId: 'reject',
  });
  expect(again).toMatchObject({ status: 'failed', reason: 'permission_answered' });
  expect(again.status === 'failed' && again.message).toMatch(
    /already answered by a person, with option allow/,
  );
  // And over REST: 409, the same answer.
  const third = await call('POST', `/v1/tasks/t-answer/sessions/s/permissions/${requestId}`, {
    optionId: 'reject',
  });
  expect(third.status).toBe(409);
  expect(third.body).toMatchObject({ status: 'failed', reason: 'permission_answered' });

  // The agent proceeds: the turn ends, nobody is needed any more.
  await waitFor(() => s().activity.state === 'waiting_for_input', 'turn ended');
  expect(s().permissions).toEqual([]);
  expect(s().activity.attention).toBeNull();
  expect(sub.view!.activity.sessionsNeedingPerson).toBe(0);
  const entries = await stream('t-answer');
  const perm = entries.filter((e) => e.type.startsWith('permission.'));
  // Requested, then the first answer taken; the worker's resolution races the later answers.
  expect(perm.slice(0, 3).map((e) => e.type)).toEqual([
    'permission.requested',
    'permission.respond',
    'permission.answered',
  ]);
  expect(perm.map((e) => e.type).sort()).toEqual([
    'permission.answered',
    'permission.requested',
    'permission.resolved',
    'permission.respond',
    'permission.respond',
    'permission.respond',
  ]);
  expect(perm.find((e) => e.type === 'permission.answered')?.data).toMatchObject({
    requestId,
    outcome: 'selected',
    optionId: 'allow',
    by: 'person',
    subject: 'alice@example.com',
  });
  expect(perm.find((e) => e.type === 'permission.resolved')?.data).toMatchObject({
    requestId,
    outcome: 'selected',
    optionId: 'allow',
    by: 'person',
    subject: 'alice@example.com',
  });
  // What the agent got on the wire: the option the person chose, once.
  const x = entries.find((e) => e.type === 'execution.started') as { executionId: string };
  const out = (await stack.store.rawFrames.read(`${TENANT}/t-answer`, x.executionId)).items
    .filter((f) => f.direction === 'out' && f.line.includes('"outcome"'))
    .map((f) => JSON.parse(f.line) as { result: unknown });
  expect(out.map((m) => m.result)).toEqual([
    { outcome: { outcome: 'selected', optionId: 'allow' } },
  ]);
  expect(entries.filter((e) => e.type === 'turn.ended')).toHaveLength(1);
  await client.close();
});

it('nobody answers: the owner’s timeout denies (the reject option the agent offered), and the agent proceeds', async () => {
  const { client, s } = await session('t-timeout', 'asker');
  await waitFor(() => s().activity.attention?.kind === 'needs_person', 'waiting for a person');
  const since = Date.now();
  await waitFor(() => s().activity.state === 'waiting_for_input', 'turn ended', 60_000);
  expect(Date.now() - since).toBeGreaterThanOrEqual(PERMISSION_TIMEOUT_MS - 500);
  const perm = (await stream('t-timeout')).filter((e) => e.type.startsWith('permission.'));
  expect(perm.map((e) => [e.type, (e.data as { by?: string }).by])).toEqual([
    ['permission.requested', undefined],
    ['permission.answered', 'timeout'],
    ['permission.resolved', 'timeout'],
  ]);
  expect(perm[2]!.data).toMatchObject({ outcome: 'selected', optionId: 'reject' });
  // A late answer is told how it ended.
  const late = await client.answerPermission({
    taskId: 't-timeout',
    sessionId: 's',
    requestId: (perm[0]!.data as { requestId: string }).requestId,
    optionId: 'allow',
  });
  expect(late).toMatchObject({ status: 'failed', reason: 'permission_answered' });
  expect(late.status === 'failed' && late.message).toMatch(/by the timeout/);
  await client.close();
});

it('a cancel of the turn resolves the open request as cancelled', async () => {
  const { client, s } = await session('t-cancel', 'asker');
  await waitFor(() => s().activity.attention?.kind === 'needs_person', 'waiting for a person');
  expect(await client.cancel({ taskId: 't-cancel', sessionId: 's' })).toMatchObject({
    status: 'done',
  });
  await waitFor(
    async () => (await stream('t-cancel')).some((e) => e.type === 'permission.resolved'),
    'request resolved',
  );
  const perm = (await stream('t-cancel')).filter((e) => e.type.startsWith('permission.'));
  expect(perm.map((e) => e.type)).toEqual(['permission.requested', 'permission.resolved']);
  expect(perm[1]!.data).toMatchObject({ outcome: 'cancelled', by: 'turn_cancelled' });
  expect(s().permissions).toEqual([]);
  expect(s().activity.attention?.kind).not.toBe('needs_person');
  await waitFor(() => s().activity.state !== 'running', 'turn over');
  await client.close();
});

it('a policy that answers at once (allow-once) never waits for a person, and is recorded', async () => {
  const { client, sub, s, views } = await session('t-policy', 'allower');
  await waitFor(() => s().activity.state === 'waiting_for_input', 'turn ended');
  expect(views.some((v) => (v.activity.sessionsNeedingPerson ?? 0) > 0)).toBe(false);
  expect(sub.view!.sessions[0]!.activity.attention).toBeNull();
  const perm = (await stream('t-policy')).filter((e) => e.type.startsWith('permission.'));
  expect(perm.map((e) => [e.type, (e.data as { by?: string }).by])).toEqual([
    ['permission.requested', undefined],
    ['permission.resolved', 'policy'],
  ]);
  expect(perm[0]!.data).toMatchObject({ policy: 'allow-once' });
  expect(perm[1]!.data).toMatchObject({ outcome: 'selected', optionId: 'allow' });
  await client.close();
});
