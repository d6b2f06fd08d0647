// A prompt to a parked session resumes it whichever transport carries it: REST, /ws and /ahp all
// submit through the gateway's command path, which starts the resuming execution. Every part a
// real process: redis-server, a projector with a short park period, a gateway, a worker.
import { AhpClient, startAgentStack, waitFor, type AgentStack } from '@baton/testing';

jest.setTimeout(180_000);

type Json = Record<string, unknown>;

let stack: AgentStack;

beforeAll(async () => {
  stack = await startAgentStack({
    profiles: {
      fresh: { kind: 'replay', recording: 'generic-turn', speed: 0, permissionPolicy: 'deny' },
    },
    projectorEnv: { PROJECTOR_PARK_IDLE_MS: '1500' },
  });
});
afterAll(() => stack?.stop());

/** Starts an execution of session s and waits until it has gone idle and been parked. */
async function parked(taskId: string): Promise<void> {
  expect((await stack.execute(taskId, { profile: 'fresh' })).status).toBe(202);
  await waitFor(async () => (await stack.session(taskId))?.parked, `${taskId} parked`, 30_000);
}

/**
 * The prompt ran on a new execution that resumed the session: the parked execution was the only
 * one before it, the prompt was dispatched to a `resume-` execution, and its turn ended.
 */
async function ranOnResume(taskId: string, idempotencyKey: string): Promise<void> {
  const entries = await waitFor(
    async () => {
      const all = await stack.stream(taskId);
      return all.some((e) => e.type === 'turn.ended') ? all : null;
    },
    `the prompt's turn on ${taskId}`,
    30_000,
  );
  const submit = entries.find(
    (e) => e.type === 'prompt.submit' && (e.data as Json).idempotencyKey === idempotencyKey,
  )!;
  const dispatched = entries.find(
    (e) =>
      e.type === 'prompt.dispatched' &&
      (e.data as Json).promptId === (submit.data as Json).promptId,
  ) as { executionId?: string } | undefined;
  const starts = entries.filter((e) => e.type === 'execution.started') as {
    executionId: string;
  }[];
  expect(starts).toHaveLength(2);
  expect(starts[1]!.executionId).toMatch(/^resume-/);
  expect(dispatched?.executionId).toBe(starts[1]!.executionId);
  expect((await stack.session(taskId))?.parked ?? null).toBeNull();
}

it('REST: a prompt to a parked session resumes it and runs', async () => {
  await parked('t-rest');
  const r = await stack.rest('POST', '/v1/tasks/t-rest/sessions/s/prompts', {
    text: 'one',
    idempotencyKey: 'rest-1',
  });
  expect(r.status).toBe(200);
  expect(r.body).toMatchObject({ decision: { outcome: 'queued', reason: 'no_execution' } });
  await ranOnResume('t-rest', 'rest-1');
});

it('/ws: a prompt to a parked session resumes it and runs', async () => {
  await parked('t-ws');
  const client = await stack.connect();
  try {
    const r = await client.prompt({
      taskId: 't-ws',
      sessionId: 's',
      text: 'one',
      idempotencyKey: 'ws-1',
    });
    expect(r).toMatchObject({ decision: { outcome: 'queued', reason: 'no_execution' } });
    await ranOnResume('t-ws', 'ws-1');
  } finally {
    await client.close();
  }
});

it('/ahp: a turn started on a parked session resumes it and runs', async () => {
  await parked('t-ahp');
  const chat = 'ahp-chat:/t-ahp/s';
  const a = await AhpClient.open(stack.gateways[0]!.wsUrl, stack.token, 'ahp-parked', chat, [
    'ahp-session:/t-ahp',
  ]);
  try {
    a.startTurn(1, 'ahp-1', 'one');
    // The gateway answers the action (a parked session has no execution: the turn waits in the
    // queue), then the prompt runs once the session is resumed.
    await a.c.next(
      (m) =>
        m.method === 'action' && ((m.params as Json).origin as Json | undefined)?.clientSeq === 1,
      'the answer to the turn',
    );
    await ranOnResume('t-ahp', 'ahp-1');
  } finally {
    await a.c.close();
  }
});
