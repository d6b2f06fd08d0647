// A tenant's quota of stored bytes holds across every gateway and surface: what its clients'
// commands append over the window (GATEWAY_STORED_WINDOW_MS) is counted in Redis, and past
// GATEWAY_MAX_STORED_BYTES_PER_TENANT a command is refused (429 over REST, `rate_limited` over
// /ws) with what was stored and the quota; another tenant is not affected.
import { Client, startStack, tokenFor, type GatewayProc, type Stack } from '@baton/testing';

jest.setTimeout(120_000);

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    gateways: 2,
    projectors: 1,
    shards: 2,
    gatewayEnv: { GATEWAY_MAX_STORED_BYTES_PER_TENANT: '40000', GATEWAY_ADMISSION_WAIT_MS: '200' },
  });
});
afterAll(() => stack?.stop());

let n = 0;
async function rest(gw: GatewayProc, tenant: string, text: string) {
  const res = await fetch(`${gw.url}/v1/tasks/q${++n}/sessions/main/prompts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tokenFor(tenant)}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text, idempotencyKey: `k${n}` }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const KB9 = 'x'.repeat(9_000);

it("refuses a tenant's commands past its quota of stored bytes, on every gateway and surface", async () => {
  const [a, b] = stack.gateways as [GatewayProc, GatewayProc];
  // Four prompts of 9 KB (and their envelopes) fit in 40,000 bytes, on either gateway.
  for (const gw of [a, b, a, b]) expect((await rest(gw, 'greedy', KB9)).status).toBeLessThan(300);
  const refused = await rest(b, 'greedy', KB9);
  expect(refused.status).toBe(429);
  expect(refused.body).toEqual({
    error: {
      code: 'rate_limited',
      message: expect.stringMatching(
        /^the tenant's commands hold \d+ bytes of the last 86400000 ms; \d+ more would pass its quota of 40000 \(GATEWAY_MAX_STORED_BYTES_PER_TENANT\)$/,
      ),
    },
  });
  // The same over /ws, on the other gateway.
  const ws = await Client.connect(a.wsUrl, tokenFor('greedy'));
  const r = await ws.request({
    op: 'prompt',
    taskId: 'q-ws',
    sessionId: 'main',
    text: KB9,
    idempotencyKey: 'k-ws',
  });
  expect(r.error).toMatchObject({ code: 'rate_limited' });
  await ws.close();
  // Another tenant has its own quota.
  expect((await rest(a, 'modest', KB9)).status).toBeLessThan(300);
});
