// One task cannot grow without bound: its sessions with work and the bytes of prompt text queued
// on a session and on the task are bounded by the projector's settings, and a client over REST
// is told which bound its prompt hit. Real Redis, projector and gateway.
import { startStack, tokenFor, type Stack } from '@baton/testing';

jest.setTimeout(120_000);

let stack: Stack;
const token = tokenFor('bounds');

beforeAll(async () => {
  stack = await startStack({
    gateways: 1,
    projectors: 1,
    shards: 2,
    projectorEnv: {
      PROJECTOR_MAX_SESSIONS_PER_TASK: '2',
      PROJECTOR_MAX_QUEUED_BYTES_PER_SESSION: '150000',
      PROJECTOR_MAX_QUEUED_BYTES_PER_TASK: '200000',
    },
    gatewayEnv: { GATEWAY_ADMISSION_WAIT_MS: '10000' },
  });
});
afterAll(() => stack?.stop());

let n = 0;
async function prompt(session: string, text: string) {
  const res = await fetch(`${stack.gateways[0]!.url}/v1/tasks/big/sessions/${session}/prompts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text, idempotencyKey: `k${++n}` }),
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { status: string; decision?: Record<string, unknown> };
  expect(body.status).toBe('decided');
  return body.decision!;
}

const KB99 = 'x'.repeat(99_000);

it('rejects over REST what would pass the bounds on sessions and queued bytes, saying which', async () => {
  expect(await prompt('s1', KB99)).toMatchObject({ outcome: 'queued' });
  expect(await prompt('s1', KB99)).toEqual({
    outcome: 'rejected',
    reason: 'queue_bytes',
    message:
      'session s1 has 99000 bytes of prompts queued; 99000 more would pass its bound of 150000',
  });
  expect(await prompt('s2', KB99)).toMatchObject({ outcome: 'queued' });
  expect(await prompt('s3', 'hi')).toEqual({
    outcome: 'rejected',
    reason: 'too_many_sessions',
    message:
      'this task already has 2 sessions with work, its bound (2); send to one of them, or wait until one is done',
  });
  expect(await prompt('s2', 'x'.repeat(10_000))).toEqual({
    outcome: 'rejected',
    reason: 'queue_bytes',
    message:
      'this task has 198000 bytes of prompts queued; 10000 more would pass its bound of 200000',
  });
  // What fits still waits, and the view holds only what was queued.
  expect(await prompt('s2', 'small')).toMatchObject({ outcome: 'queued' });
  const view = (await (
    await fetch(`${stack.gateways[0]!.url}/v1/tasks/big`, {
      headers: { authorization: `Bearer ${token}` },
    })
  ).json()) as { sessions: { sessionId: string; queue: { entries: unknown[] } }[] };
  const queued = Object.fromEntries(
    view.sessions.map((s) => [s.sessionId, s.queue.entries.length]),
  );
  expect(queued).toMatchObject({ s1: 1, s2: 2 });
});
