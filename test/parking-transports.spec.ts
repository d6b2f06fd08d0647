// A prompt to a parked session resumes it whichever transport carries it: REST, /ws and /ahp all
// submit through the gateway's command path, which starts the resuming execution. Every part a
// real process: redis-server, a projector with a short park period, a gateway, a worker.
import { BatonClient } from '@baton/client';
import { taskKey, type StreamEntry, type TaskView } from '@baton/protocol';
import {
  Client,
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
const PROFILES = JSON.stringify({
  profiles: {
    fresh: { kind: 'replay', recording: 'generic-turn', speed: 0, permissionPolicy: 'deny' },
  },
});
type Json = Record<string, unknown>;

let stack: Stack;
let worker: WorkerProcess;
const tok = token({ tenant: TENANT, scope: 'read prompt execute' });

beforeAll(async () => {
  stack = await startStack({
    gateways: 1,
    projectors: 1,
    gatewayEnv: { BATON_PROFILES: PROFILES },
    projectorEnv: { PROJECTOR_PARK_IDLE_MS: '1500' },
  });
  worker = await spawnWorker({ ...stack.env, BATON_PROFILES: PROFILES });
});
afterAll(async () => {
  await stopWorker(worker);
  await stack?.stop();
});

const stream = async (taskId: string): Promise<StreamEntry[]> =>
  (await stack.store.readTask(taskKey(TENANT, taskId), '0-0', 1_000)).items.map((i) => i.entry);

const session = async (taskId: string) =>
  ((await stack.store.views.read(taskKey(TENANT, taskId))) as TaskView | null)?.sessions.find(
    (s) => s.sessionId === 's',
  );

function rest(method: string, path: string, body?: unknown) {
  return fetch(`${stack.gateways[0]!.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
}

/** Starts an execution of session s and waits until it has gone idle and been parked. */
async function parked(taskId: string): Promise<void> {
  const started = await rest('POST', `/v1/tasks/${taskId}/sessions/s/executions`, {
    profile: 'fresh',
  });
  expect(started.status).toBe(202);
  await waitFor(async () => (await session(taskId))?.parked, `${taskId} parked`, 30_000);
}

/**
 * The prompt ran on a new execution that resumed the session: the parked execution was the only
 * one before it, the prompt was dispatched to a `resume-` execution, and its turn ended.
 */
async function ranOnResume(taskId: string, idempotencyKey: string): Promise<void> {
  const entries = await waitFor(
    async () => {
      const all = await stream(taskId);
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
  expect((await session(taskId))?.parked ?? null).toBeNull();
}

it('REST: a prompt to a parked session resumes it and runs', async () => {
  await parked('t-rest');
  const r = await rest('POST', '/v1/tasks/t-rest/sessions/s/prompts', {
    text: 'one',
    idempotencyKey: 'rest-1',
  });
  expect(r.status).toBe(200);
  expect(await r.json()).toMatchObject({ decision: { outcome: 'queued', reason: 'no_execution' } });
  await ranOnResume('t-rest', 'rest-1');
});

it('/ws: a prompt to a parked session resumes it and runs', async () => {
  await parked('t-ws');
  const client = new BatonClient();
  await client.connect(`${stack.gateways[0]!.wsUrl}/ws`, tok);
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
  const c = await Client.connect(stack.gateways[0]!.wsUrl, tok, '/ahp');
  try {
    const init = await c.rpc('initialize', {
      channel: 'ahp-root://',
      protocolVersions: ['1.0.0'],
      clientId: 'ahp-parked',
      clientInfo: { name: 'Visual Studio Code', version: '1.107.0' },
      initialSubscriptions: ['ahp-session:/t-ahp', chat],
    });
    expect(init.error).toBeUndefined();
    c.send({
      jsonrpc: '2.0',
      method: 'dispatchAction',
      params: {
        channel: chat,
        clientSeq: 1,
        action: {
          type: 'chat/turnStarted',
          turnId: 'ahp-1',
          startedAt: new Date().toISOString(),
          message: { text: 'one', origin: { kind: 'user' } },
        },
      },
    });
    // The gateway answers the action (a parked session has no execution: the turn waits in the
    // queue), then the prompt runs once the session is resumed.
    await c.next(
      (m) =>
        m.method === 'action' && ((m.params as Json).origin as Json | undefined)?.clientSeq === 1,
      'the answer to the turn',
    );
    await ranOnResume('t-ahp', 'ahp-1');
  } finally {
    await c.close();
  }
});
