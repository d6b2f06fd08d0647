// An AHP client reads the conversation: real redis-server, projector, gateway and worker processes;
// the worker replays a real Claude and a real Codex recording; a client written from the AHP spec
// (raw JSON-RPC over /ahp, folding with the spec's reducer) reads back the user message, the
// answer, a tool call's command and output, a permission's content and the usage, under the
// Baton prompt id, on two connections, after a reconnect and as a late subscriber.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  AhpClient,
  reduce,
  Client,
  FIXTURES,
  startAgentStack,
  waitFor,
  type AgentStack,
} from '@baton/testing';

jest.setTimeout(180_000);

type Json = Record<string, unknown>;
const CLAUDE = 'claude-shell-background-plain';
const CODEX = 'codex-real-exec';

let stack: AgentStack;

beforeAll(async () => {
  stack = await startAgentStack({
    profiles: {
      claude: { kind: 'replay', recording: CLAUDE, speed: 0, permissionPolicy: 'ask' },
      codex: { kind: 'replay', recording: CODEX, speed: 0, permissionPolicy: 'allow-once' },
    },
    recordings: [CLAUDE, CODEX],
  });
});
afterAll(() => stack?.stop());

/** What the recording's agent said, read off its ACP frames. */
function recorded(name: string) {
  const frames = readFileSync(join(FIXTURES, `${name}.jsonl`), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as { direction: string; message: Json });
  const updates = frames
    .map((f) => ((f.message.params as Json | undefined)?.update as Json | undefined) ?? {})
    .filter((u) => u.sessionUpdate !== undefined);
  // The answer inside the turn: the agent's text before the prompt's result.
  const end = frames.findIndex((f) => (f.message.result as Json | undefined)?.stopReason);
  const inTurn = frames
    .slice(0, end)
    .map((f) => ((f.message.params as Json | undefined)?.update as Json | undefined) ?? {});
  const answer = inTurn
    .filter((u) => u.sessionUpdate === 'agent_message_chunk')
    .map((u) => (u.content as Json).text as string)
    .join('');
  const permission = frames.find((f) => f.message.method === 'session/request_permission')?.message
    .params as Json | undefined;
  const usage = updates.filter((u) => u.sessionUpdate === 'usage_update').at(-1);
  return { answer, permission, usage };
}

/** The Baton prompt id of the prompt with idempotency key `key`, as the gateway wrote it. */
async function promptIdOf(taskId: string, key: string): Promise<string> {
  const e = (await stack.stream(taskId)).find(
    (x) => x.type === 'prompt.submit' && (x.data as Json).idempotencyKey === key,
  );
  return (e!.data as Json).promptId as string;
}

/** A spec-written AHP client on the stack's gateway, subscribed to `chat`. */
const open = (clientId: string, chat: string) =>
  AhpClient.open(stack.gateways[0]!.wsUrl, stack.token, clientId, chat);

async function started(taskId: string, profile: string): Promise<void> {
  expect((await stack.execute(taskId, { profile })).status).toBe(202);
  await waitFor(
    async () =>
      (await stack.stream(taskId)).some((e) => e.type === 'execution.started') ? true : null,
    `${taskId} running`,
    30_000,
  );
}

const parts = (t: Json) => t.responseParts as Json[];
const text = (t: Json, kind: string) =>
  parts(t)
    .filter((p) => p.kind === kind)
    .map((p) => p.content as string)
    .join('');
const tools = (t: Json) =>
  parts(t)
    .filter((p) => p.kind === 'toolCall')
    .map((p) => p.toolCall as Json);

it('Claude: the turn carries the prompt, the answer, the shell call with its permission, output and usage, under its prompt id everywhere', async () => {
  const taskId = 't-claude';
  const chat = `ahp-chat:/${taskId}/s`;
  await started(taskId, 'claude');
  const a = await open('ahp-a', chat);
  const b = await open('ahp-b', chat);
  // The turn is started by client A, as VS Code does.
  a.startTurn(1, 'turn-claude-1', 'Wait in the background');
  const promptId = await waitFor(
    async () =>
      (await stack.stream(taskId)).some((e) => e.type === 'prompt.submit')
        ? promptIdOf(taskId, 'turn-claude-1')
        : null,
    'the prompt',
  );
  expect(promptId).toBe('turn-claude-1');
  const want = recorded(CLAUDE);
  // The agent asks to run the shell: the call awaits confirmation, with what it wants to run.
  const asking = await waitFor(() => {
    const t = a.fold().activeTurn as Json | undefined;
    const call = t ? tools(t).find((x) => x.toolCallId === 'toolu_B') : undefined;
    return Promise.resolve(call?.status === 'pending-confirmation' ? call : null);
  }, 'the permission request');
  expect(asking).toMatchObject({
    toolInput: 'sleep 100',
    confirmationTitle: (want.permission!.toolCall as Json).title,
    options: [
      { id: 'allow', label: 'Allow', kind: 'approve', group: 0 },
      { id: 'reject', label: 'Reject', kind: 'deny', group: 1 },
    ],
  });
  expect((a.state.status as number) & 31).toBe(24); // InputNeeded
  // A client that subscribes mid-turn finds the running turn, under its id, with what it has so far.
  const mid = await open('ahp-mid', chat);
  const running = mid.state.activeTurn as Json;
  expect(running).toMatchObject({ id: promptId, message: { text: 'Wait in the background' } });
  expect(tools(running).map((x) => [x.toolCallId, x.status])).toEqual([
    ['toolu_B', 'pending-confirmation'],
  ]);
  await mid.c.close();
  // Client A answers it, the spec's way.
  a.dispatch(2, {
    type: 'chat/toolCallConfirmed',
    turnId: promptId,
    toolCallId: 'toolu_B',
    approved: true,
    confirmed: 'user-action',
    selectedOptionId: 'allow',
  });
  for (const client of [a, b]) {
    const turn = await client.turnEnded(promptId);
    expect(turn.message).toMatchObject({ text: 'Wait in the background' });
    expect(text(turn, 'markdown')).toBe(want.answer);
    // One call: the permission is the agent's own call awaiting confirmation, not another.
    expect(tools(turn).map((x) => x.toolCallId)).toEqual(['toolu_B']);
    const [shell] = tools(turn);
    expect(shell).toMatchObject({
      toolCallId: 'toolu_B',
      toolName: 'execute',
      toolInput: 'sleep 100',
      status: 'completed',
      success: true,
      // The permission the agent asked for, as client A answered it.
      confirmed: 'user-action',
      selectedOption: { id: 'allow', label: 'Allow', kind: 'approve' },
    });
    expect(JSON.stringify(shell!.content)).toContain(
      'Command running in background with ID: bash_1',
    );
    expect(turn.usage).toMatchObject({
      _meta: {
        'x-baton': { used: want.usage!.used, size: want.usage!.size, cost: want.usage!.cost },
      },
    });
  }
  // Streamed as it came: the answer's part opened, then appended to, before the turn ended.
  const seen = a.actions().map((x) => x.type);
  expect(seen.indexOf('chat/responsePart')).toBeGreaterThan(seen.indexOf('chat/turnStarted'));
  expect(seen.indexOf('chat/delta')).toBeGreaterThan(seen.indexOf('chat/responsePart'));
  expect(seen.indexOf('chat/turnComplete')).toBeGreaterThan(seen.lastIndexOf('chat/delta'));
  const folded = a.fold();

  // A reconnect continues from what the client has: the same turn, the same id.
  const lastSeen = a.lastSeq;
  await a.c.close();
  const again = await Client.connect(stack.gateways[0]!.wsUrl, stack.token, '/ahp');
  const res = (
    await again.rpc('reconnect', {
      clientId: 'ahp-a',
      lastSeenServerSeq: lastSeen,
      subscriptions: [chat],
    })
  ).result as Json;
  expect(['replay', 'snapshot']).toContain(res.type);
  let s = folded;
  if (res.type === 'replay') for (const e of res.actions as Json[]) s = reduce(s, e.action as Json);
  else s = (res.snapshots as Json[])[0]!.state as Json;
  expect((s.turns as Json[]).map((t) => t.id)).toEqual([promptId]);

  // A late subscriber finds the ended turn whole, under the same id.
  const late = await open('ahp-late', chat);
  const [old] = late.state.turns as Json[];
  expect(old).toMatchObject({ id: promptId, message: { text: 'Wait in the background' } });
  expect(text(old!, 'markdown')).toBe(want.answer);
  expect(tools(old!)[0]).toMatchObject({
    toolCallId: 'toolu_B',
    toolInput: 'sleep 100',
    status: 'completed',
  });
  await Promise.all([again.close(), b.c.close(), late.c.close()]);
});

it('Codex: a prompt sent over REST is the turn of its prompt id, with its command and output; a late subscriber sees it', async () => {
  const taskId = 't-codex';
  const chat = `ahp-chat:/${taskId}/s`;
  await started(taskId, 'codex');
  const a = await open('ahp-codex', chat);
  const r = await stack.rest('POST', `/v1/tasks/${taskId}/sessions/s/prompts`, {
    text: 'prompt RUN-EXEC',
    idempotencyKey: 'codex-1',
  });
  expect(r.status).toBe(200);
  const promptId = await promptIdOf(taskId, 'codex-1');
  expect(promptId).not.toBe('codex-1');
  const want = recorded(CODEX);
  const turn = await a.turnEnded(promptId);
  expect(turn.message).toMatchObject({ text: 'prompt RUN-EXEC' });
  expect(text(turn, 'markdown')).toBe(want.answer);
  const [exec] = tools(turn);
  expect(exec).toMatchObject({
    toolName: 'execute',
    toolInput: 'until [ -f release-exec ]; do sleep 0.1; done; echo hello',
    status: 'completed',
    success: true,
  });
  expect(JSON.stringify(exec!.content)).toContain('hello');
  expect(turn.usage).toMatchObject({
    _meta: { 'x-baton': { used: want.usage!.used, size: want.usage!.size } },
  });
  const late = await open('ahp-codex-late', chat);
  expect((late.state.turns as Json[]).map((t) => [t.id, (t.message as Json).text])).toEqual([
    [promptId, 'prompt RUN-EXEC'],
  ]);
  expect(text((late.state.turns as Json[])[0]!, 'markdown')).toBe(want.answer);
  await Promise.all([a.c.close(), late.c.close()]);
});
