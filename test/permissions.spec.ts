// Permissions answered by people, with every part a real process: redis-server, a
// projector (whose clock denies a request nobody answers), a worker hosting a replay agent that
// asks permission mid-turn (libs/acp/fixtures/generic-turn.jsonl, under the default `ask` policy),
// a gateway; clients answer over the CLI, WebSocket (@baton/client) and REST.
import type { CommandResult } from '@baton/protocol';
import {
  cli,
  rawFramesOnceThere,
  startAgentStack,
  token,
  waitFor,
  type AgentStack,
} from '@baton/testing';

jest.setTimeout(180_000);

const PERMISSION_TIMEOUT_MS = 15_000;

let stack: AgentStack;
const readOnly = token({ tenant: 'acme', scope: 'read', sub: 'bob' });

beforeAll(async () => {
  stack = await startAgentStack({
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
    projectorEnv: { PROJECTOR_PERMISSION_TIMEOUT_MS: String(PERMISSION_TIMEOUT_MS) },
    claims: { sub: 'alice@example.com' },
  });
});
afterAll(() => stack?.stop());

/** A session of its own task with an execution of `profile` that is ready, and a client on it. */
async function session(taskId: string, profile: 'asker' | 'allower') {
  const { client, sub, views, s: shown } = await stack.watch(taskId);
  expect((await stack.execute(taskId, { profile })).status).toBe(202);
  await waitFor(() => shown()?.activity.state === 'idle', `${taskId} ready`);
  const prompt = await client.prompt({
    taskId,
    sessionId: 's',
    text: 'Fix the bug',
    idempotencyKey: `${taskId}-1`,
  });
  expect(prompt).toMatchObject({ decision: { outcome: 'admitted' } });
  const s = () => shown()!;
  return { client, sub, views, s };
}

it('a person answers over the CLI; a second answer (WS, REST) is refused and changes nothing; the agent proceeds', async () => {
  const { client, sub, views, s } = await session('t-answer', 'asker');
  // The session waits for a person: visibly, with what the agent asks and what it offers.
  await waitFor(() => s().activity.attention?.kind === 'needs_person', 'waiting for a person');
  expect(s().activity.attention).toMatchObject({
    kind: 'needs_person',
    reason: 'permission_requested',
    message: 'the agent asks permission: Edit src/a.ts',
  });
  expect(s().activity.state).toBe('running');
  // The headline says it waits for you, not that the agent generates.
  expect(s().activity).toMatchObject({ foregroundActivity: null, waitingForPerson: true });
  expect(sub.view!.activity.foregroundActivity).toBeNull();
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
  const rest = await stack.rest('GET', '/v1/tasks/t-answer/sessions/s');
  expect(rest.body).toMatchObject({
    activity: { state: 'running', foregroundActivity: null, waitingForPerson: true },
    permissions: [{ requestId, title: 'Edit src/a.ts' }],
  });

  // The CLI lists it, and a read-only token cannot answer it.
  const env = { BATON_GATEWAY_URL: stack.gateways[0]!.url, BATON_TOKEN: stack.token };
  const listed = await cli(['permissions', 't-answer', 's'], env);
  expect(listed.code).toBe(0);
  expect(JSON.parse(listed.stdout.trim().split('\n')[0]!)).toMatchObject({ requestId });
  const refused = await stack.rest(
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
  const third = await stack.rest('POST', `/v1/tasks/t-answer/sessions/s/permissions/${requestId}`, {
    optionId: 'reject',
  });
  expect(third.status).toBe(409);
  expect(third.body).toMatchObject({ status: 'failed', reason: 'permission_answered' });

  // The agent proceeds: the turn ends, nobody is needed any more.
  await waitFor(() => s().activity.state === 'waiting_for_input', 'turn ended');
  expect(s().permissions).toEqual([]);
  expect(s().activity.attention).toBeNull();
  expect(s().activity.waitingForPerson).toBe(false);
  expect(sub.view!.activity.sessionsNeedingPerson).toBe(0);
  // No view the client was given showed a spinner over an open request.
  const seen = views.map((v) => v.sessions.find((x) => x.sessionId === 's')?.activity);
  expect(seen.some((a) => a?.waitingForPerson)).toBe(true);
  for (const a of seen)
    if (a?.attention?.kind === 'needs_person') expect(a.foregroundActivity).not.toBe('generating');
  const entries = await stack.stream('t-answer');
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
  // The prompt's answer comes after the permission's on the wire: once it is logged, all is.
  const frames = await rawFramesOnceThere(
    stack.store,
    `${stack.tenant}/t-answer`,
    x.executionId,
    (fs) => fs.some((f) => f.direction === 'in' && f.line.includes('"stopReason"')),
    "the turn's answer",
  );
  const out = frames
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
  const perm = (await stack.stream('t-timeout')).filter((e) => e.type.startsWith('permission.'));
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
    async () => (await stack.stream('t-cancel')).some((e) => e.type === 'permission.resolved'),
    'request resolved',
  );
  const perm = (await stack.stream('t-cancel')).filter((e) => e.type.startsWith('permission.'));
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
  const perm = (await stack.stream('t-policy')).filter((e) => e.type.startsWith('permission.'));
  expect(perm.map((e) => [e.type, (e.data as { by?: string }).by])).toEqual([
    ['permission.requested', undefined],
    ['permission.resolved', 'policy'],
  ]);
  expect(perm[0]!.data).toMatchObject({ policy: 'allow-once' });
  expect(perm[1]!.data).toMatchObject({ outcome: 'selected', optionId: 'allow' });
  await client.close();
});
