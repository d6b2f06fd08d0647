// Authentication at the upgrade and on REST, scopes, and the bounds of a connection: message size,
// prompt length, subscriptions, rate, heartbeats, idle timeout, token expiry, clean shutdown.
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { Client, SECRET, spawnGateway, loneGatewayForFile, token, waitFor } from '@baton/testing';

jest.setTimeout(60_000);

const ISS = 'baton-test';
const MAX = 200_000;
const lone = loneGatewayForFile(`al${randomBytes(2).toString('hex')}`, 2, {
  BATON_JWT_ISSUER: ISS,
  GATEWAY_MAX_MESSAGE_BYTES: String(MAX),
  GATEWAY_MAX_SUBSCRIPTIONS: '3',
  GATEWAY_MAX_MESSAGES_PER_SECOND: '20',
  GATEWAY_HEARTBEAT_MS: '300',
  GATEWAY_IDLE_TIMEOUT_MS: '1500',
  GATEWAY_ADMISSION_WAIT_MS: '100',
});
const tok = (scope: string, extra: Record<string, unknown> = {}) =>
  token({ tenant: 'acme', scope, iss: ISS, ...extra });

/** The status and body with which an upgrade is refused (or 101 when it is not). */
const upgrade = (path: string, headers: Record<string, string> = {}, query = '') =>
  Client.upgradeAnswer(`${lone.gw.wsUrl}${path}${query}`, headers);

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
type Json = Record<string, unknown>;

/** A prompt over /ws to session s of task t. */
const promptTo = (c: Client, text: string) =>
  c.request({ op: 'prompt', taskId: 't', sessionId: 's', text, idempotencyKey: 'k' });

/** A REST call with a token of `scope` and a body (JSON, or a string sent as it is). */
async function restAs(scope: string, method: string, path: string, body: unknown) {
  const res = await fetch(`${lone.gw.url}${path}`, {
    method,
    headers: { ...bearer(tok(scope)), 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

describe('authentication', () => {
  const none = { alg: 'none', typ: 'JWT' };
  const unsigned = `${Buffer.from(JSON.stringify(none)).toString('base64url')}.${Buffer.from(
    JSON.stringify({ tenant: 'acme', scope: 'read', iss: ISS, exp: 4e9 }),
  ).toString('base64url')}.`;
  it.each([
    ['no token', {}, '', 'missing bearer token'],
    [
      'a token signed with another secret',
      bearer(token({ tenant: 'acme', scope: 'read', iss: ISS }, 'x'.repeat(40))),
      '',
      'bad token signature',
    ],
    [
      'an expired token',
      bearer(tok('read', { exp: Math.floor(Date.now() / 1000) - 10 })),
      '',
      'token expired',
    ],
    [
      'another issuer',
      bearer(token({ tenant: 'acme', scope: 'read', iss: 'someone-else' })),
      '',
      'bad token: unexpected "iss" claim value',
    ],
    [
      'an unknown scope',
      bearer(tok('read root')),
      '',
      'bad token claim scope: must be a space-separated subset of "read prompt execute delete admin"',
    ],
    ['no tenant', bearer(token({ scope: 'read', iss: ISS })), '', /^bad token claim tenant: /],
    ['alg none', bearer(unsigned), '', /^bad token/],
    ['a bad ?token=', {}, '?token=nope', 'malformed token'],
  ])(
    'refuses %s at the upgrade with 401 and a one-line reason',
    async (what, headers, query, reason) => {
      // /ahp takes an upgrade with no token at all: the client authenticates in-protocol (AHP's
      // `authenticate`); any token it does send is checked here, as on /ws.
      for (const path of what === 'no token' ? ['/ws'] : ['/ws', '/ahp']) {
        const r = await upgrade(path, headers as Record<string, string>, query as string);
        expect(r.status).toBe(401);
        expect(r.body).not.toContain('\n');
        if (typeof reason === 'string') expect(r.body).toBe(reason);
        else expect(r.body).toMatch(reason);
      }
    },
  );

  it('/ahp without any token: upgraded, but nothing but the handshake and authenticate until it authenticates', async () => {
    expect((await upgrade('/ahp', {})).status).toBe(101);
    const c = await Client.connect(lone.gw.wsUrl, undefined, '/ahp');
    expect(
      (await c.rpc('initialize', { protocolVersions: ['1.0.0'], clientId: 'anon' })).result,
    ).toBeDefined();
    for (const [method, params] of [
      ['listSessions', {}],
      ['subscribe', { channel: 'ahp-chat:/t/s' }],
      ['subscribe', { channel: 'ahp-session:/t' }],
    ] as const) {
      expect((await c.rpc(method, params)).error).toMatchObject({ code: -32007 });
    }
    const bad = await c.rpc('authenticate', {
      resource: 'urn:baton:gateway',
      token: tok('read', { exp: 1 }),
    });
    expect(bad.error).toMatchObject({ code: -32007, message: 'token expired' });
    await c.close();
  });

  it('accepts a token in the header or, for browsers, in ?token=', async () => {
    expect((await upgrade('/ws', bearer(tok('read')))).status).toBe(101);
    expect((await upgrade('/ahp', {}, `?token=${tok('read')}`)).status).toBe(101);
  });

  it('REST: 401 without a valid token, 403 without the route’s scope', async () => {
    const get = (t?: string) => fetch(`${lone.gw.url}/v1/tasks`, { headers: t ? bearer(t) : {} });
    const r401 = await get();
    expect(r401.status).toBe(401);
    expect(await r401.json()).toEqual({
      error: { code: 'unauthorized', message: 'missing bearer token' },
    });
    expect((await get(tok('read', { exp: 1 }))).status).toBe(401);
    expect((await get(tok('prompt'))).status).toBe(403);
    expect((await get(tok('read'))).status).toBe(200);
    expect((await get(tok('admin'))).status).toBe(200);
    const forbidden = (scope: string) => ({
      status: 403,
      body: {
        error: { code: 'forbidden', message: `the token's scope does not include ${scope}` },
      },
    });
    const prompt = { text: 'x', idempotencyKey: 'k' };
    expect(await restAs('read', 'POST', '/v1/tasks/t/sessions/s/prompts', prompt)).toEqual(
      forbidden('prompt'),
    );
    const exec = { profile: 'replay', recording: 'x' };
    expect(await restAs('read prompt', 'POST', '/v1/tasks/t/sessions/s/executions', exec)).toEqual(
      forbidden('execute'),
    );
  });

  it('/ws and /ahp: a message needs its scope', async () => {
    const reader = await Client.connect(lone.gw.wsUrl, tok('read'));
    const p = await promptTo(reader, 'x');
    expect(p.error).toEqual({
      code: 'forbidden',
      message: "the token's scope does not include prompt",
    });
    const c = await reader.request({
      op: 'queue.cancel',
      taskId: 't',
      sessionId: 's',
      promptId: 'p',
    });
    expect((c.error as Json).code).toBe('forbidden');
    expect((await reader.request({ op: 'subscribe', taskId: 't' })).ok).toBe(true);
    const prompter = await Client.connect(lone.gw.wsUrl, tok('prompt'));
    expect((await prompter.request({ op: 'subscribe', taskId: 't' })).error).toMatchObject({
      code: 'forbidden',
    });
    expect(
      (await prompter.request({ op: 'queue.list', taskId: 't', sessionId: 's' })).error,
    ).toMatchObject({
      code: 'forbidden',
    });
    const ahp = await Client.connect(lone.gw.wsUrl, tok('prompt'), '/ahp');
    await ahp.rpc('initialize', { protocolVersions: ['1.0.0'], clientId: 'c' });
    expect((await ahp.rpc('subscribe', { channel: 'ahp-chat:/t/s' })).error).toMatchObject({
      code: -32009,
    });
    await Promise.all([reader.close(), prompter.close(), ahp.close()]);
  });
});

describe('bounds', () => {
  it('a message over the limit (below the hard cap) gets message_too_large; the connection stays', async () => {
    const c = await Client.connect(lone.gw.wsUrl, tok('read prompt'));
    const from = c.messages.length;
    const frame = JSON.stringify({ v: 1, id: 'big', op: 'ping', pad: 'x'.repeat(MAX) });
    c.send(frame);
    const e = await c.next((m) => m.type === 'error', 'an error', from);
    expect(e.error).toEqual({
      code: 'message_too_large',
      message: `message is ${frame.length} bytes, the limit is ${MAX}`,
    });
    expect((await c.request({ op: 'ping' })).ok).toBe(true);
    await c.close();
  });

  it('a prompt over MAX_PROMPT_CHARS gets prompt_too_long, naming the field', async () => {
    const c = await Client.connect(lone.gw.wsUrl, tok('read prompt'));
    const r = await promptTo(c, 'y'.repeat(100_001));
    expect(r.error).toEqual({
      code: 'prompt_too_long',
      path: 'text',
      message: 'text: the prompt has 100001 characters, the limit is 100000',
    });
    const rest = await restAs('prompt', 'POST', '/v1/tasks/t/sessions/s/prompts', {
      text: 'y'.repeat(100_001),
      idempotencyKey: 'k',
    });
    expect(rest.status).toBe(400);
    expect(rest.body.error).toMatchObject({
      code: 'prompt_too_long',
      path: 'text',
    });
    await c.close();
  });

  it('invalid messages name the field and the rule', async () => {
    const c = await Client.connect(lone.gw.wsUrl, tok('read prompt'));
    const r = await c.request({ op: 'subscribe', taskId: 7 });
    expect(r.error).toEqual({
      code: 'invalid_message',
      path: 'taskId',
      message: 'taskId: Invalid input: expected string, received number',
    });
    const q = await c.request({
      op: 'queue.send_now',
      taskId: 't',
      sessionId: 's',
      promptId: 'p',
      observedGeneration: -1,
    });
    expect(q.error).toMatchObject({ code: 'invalid_message', path: 'observedGeneration' });
    const rest = await restAs('prompt', 'PUT', '/v1/tasks/t/sessions/s/queue/auto-run', {
      enabled: 'yes',
    });
    expect(rest.status).toBe(400);
    expect(rest.body).toEqual({
      error: {
        code: 'invalid_message',
        path: 'enabled',
        message: 'enabled: Invalid input: expected boolean, received string',
      },
    });
    const prompts = '/v1/tasks/t/sessions/s/prompts';
    const bad = await restAs('prompt', 'POST', prompts, '{not json');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_message' });
    const huge = await restAs('prompt', 'POST', prompts, {
      text: 'z'.repeat(MAX),
      idempotencyKey: 'k',
    });
    expect(huge.status).toBe(413);
    expect(huge.body.error).toMatchObject({ code: 'message_too_large' });
    await c.close();
  });

  it('subscriptions per connection are bounded', async () => {
    const c = await Client.connect(lone.gw.wsUrl, tok('read'));
    for (const t of ['a', 'b', 'c'])
      expect((await c.request({ op: 'subscribe', taskId: t })).ok).toBe(true);
    const r = await c.request({ op: 'subscribe', taskId: 'd' });
    expect(r.error).toMatchObject({ code: 'too_many_subscriptions' });
    expect((await c.request({ op: 'subscribe', taskId: 'a' })).ok).toBe(true);
    await c.request({ op: 'unsubscribe', taskId: 'b' });
    expect((await c.request({ op: 'subscribe', taskId: 'd' })).ok).toBe(true);
    await c.close();
  });

  it('messages per second are bounded: the excess is answered rate_limited, each one', async () => {
    const c = await Client.connect(lone.gw.wsUrl, tok('read'));
    const from = c.messages.length;
    const t0 = Date.now();
    for (let i = 0; i < 200; i++) c.send({ v: 1, id: `p${i}`, op: 'ping' });
    await waitFor(() => c.messages.length - from >= 200, 'an answer to each');
    // However slowly this machine went, no more than a burst of 20 plus 20 a second got through.
    const seconds = (Date.now() - t0) / 1000;
    const answers = c.messages.slice(from);
    expect(answers.map((a) => a.id)).toEqual(Array.from({ length: 200 }, (_, i) => `p${i}`));
    const ok = answers.filter((a) => a.ok === true).length;
    const limited = answers.filter((a) => (a.error as Json | undefined)?.code === 'rate_limited');
    expect(ok + limited.length).toBe(200);
    expect(ok).toBeGreaterThanOrEqual(20);
    expect(ok).toBeLessThanOrEqual(21 + Math.ceil(seconds * 20));
    expect(limited[0]!.error).toEqual({
      code: 'rate_limited',
      message: 'more than 20 messages per second; slow down',
    });
    await waitFor(
      async () => (await c.request({ op: 'ping' })).ok === true,
      'the bucket to refill',
    );
    await c.close();
  });
});

describe('liveness', () => {
  it('a connection that does not answer pings is closed', async () => {
    const ws = new WebSocket(`${lone.gw.wsUrl}/ws`, {
      headers: bearer(tok('read')),
      autoPong: false,
    });
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ v: 1, id: 's', op: 'subscribe', taskId: 'hb' }));
    const code = await new Promise<number>((r) => ws.once('close', (c) => r(c)));
    expect(code).toBe(1006);
  });

  it('an idle connection (no subscription, nothing sent) is closed; a subscribed one stays', async () => {
    const idle = await Client.connect(lone.gw.wsUrl, tok('read'));
    const busy = await Client.connect(lone.gw.wsUrl, tok('read'));
    await busy.request({ op: 'subscribe', taskId: 'idle-test' });
    await waitFor(() => idle.closed, 'the idle connection to close');
    expect(idle.closed).toEqual({ code: 1000, reason: 'idle timeout' });
    expect(busy.closed).toBeUndefined();
    expect((await busy.request({ op: 'ping' })).ok).toBe(true);
    await busy.close();
  });

  it('a connection ends when its token expires', async () => {
    const c = await Client.connect(
      lone.gw.wsUrl,
      tok('read', { exp: Math.floor(Date.now() / 1000) + 2 }),
    );
    await c.request({ op: 'subscribe', taskId: 'exp' });
    await waitFor(() => c.closed, 'the close', 10_000);
    expect(c.closed).toEqual({ code: 1008, reason: 'token expired' });
  });

  it('SIGTERM closes every connection with 1001 and the process exits 0', async () => {
    const g = await spawnGateway({ ...lone.env, BATON_JWT_ISSUER: ISS });
    const c = await Client.connect(g.wsUrl, tok('read'));
    const a = await Client.connect(g.wsUrl, tok('read'), '/ahp');
    await c.request({ op: 'subscribe', taskId: 'bye' });
    expect(await g.stop('SIGTERM')).toBe(0);
    await waitFor(() => c.closed && a.closed, 'both closed');
    expect(c.closed).toEqual({ code: 1001, reason: 'server shutting down' });
    expect(a.closed).toEqual({ code: 1001, reason: 'server shutting down' });
  });
});

// Keep the secret referenced: the tokens above are signed with it by `token`.
void SECRET;
