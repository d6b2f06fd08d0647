// Per-tenant limits on one gateway: connections (both endpoints together) and subscriptions (every
// connection, both endpoints). Over a limit: a clear refusal, and nothing else affected.
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { chatUri } from '@baton/ahp';
import { Client, spawnGateway, loneGatewayForFile, tokenFor, waitFor } from '@baton/testing';

jest.setTimeout(60_000);

const lone = loneGatewayForFile(`tl${randomBytes(2).toString('hex')}`, 2, {
  GATEWAY_MAX_CONNECTIONS_PER_TENANT: '3',
  GATEWAY_MAX_SUBSCRIPTIONS_PER_TENANT: '4',
  GATEWAY_MAX_SUBSCRIPTIONS: '3',
  GATEWAY_MAX_REQUESTS_PER_SECOND: '5',
});

/** The answer to an upgrade with `tok`: open (then closed again), or the refusal's status and body. */
const upgrade = (tok: string, path: string) =>
  Client.upgradeAnswer(`${lone.gw.wsUrl}${path}`, { authorization: `Bearer ${tok}` });

const ping = async (c: Client) => (await c.request({ op: 'ping' })).result;

it('a tenant holding GATEWAY_MAX_CONNECTIONS_PER_TENANT connections is refused more (429), others are not', async () => {
  const a = tokenFor('conn-a');
  const held = [
    await Client.connect(lone.gw.wsUrl, a),
    await Client.connect(lone.gw.wsUrl, a),
    await Client.connect(lone.gw.wsUrl, a, '/ahp'),
  ];
  for (const path of ['/ws', '/ahp']) {
    const r = await upgrade(a, path);
    expect(r.status).toBe(429);
    expect(r.body).toMatch(/3 connections on this gateway \(GATEWAY_MAX_CONNECTIONS_PER_TENANT\)/);
  }
  // Another tenant connects; the tenant's open connections keep working.
  const b = await Client.connect(lone.gw.wsUrl, tokenFor('conn-b'));
  expect(await ping(b)).toEqual({ pong: true });
  expect(await ping(held[0]!)).toEqual({ pong: true });
  expect(held.every((c) => c.closed === undefined)).toBe(true);
  const metrics = await (await fetch(`${lone.gw.url}/metrics`)).text();
  expect(metrics).toMatch(/baton_gateway_errors_total\{code="too_many_connections"\} 2/);
  // A closed connection gives its place back.
  await held[0]!.close();
  const again = await waitFor(async () => {
    const r = await upgrade(a, '/ws');
    return r.status === 101 ? r : undefined;
  }, 'the place to be given back');
  expect(again.status).toBe(101);
  await Promise.all([...held, b].map((c) => c.close()));
});

it('an /ahp connection that authenticates in-protocol takes a place of its tenant, and gives it back at close', async () => {
  // Three places for tenant conn-c: two /ws connections and one /ahp authenticated in-protocol.
  const c = tokenFor('conn-c');
  const ws = [await Client.connect(lone.gw.wsUrl, c), await Client.connect(lone.gw.wsUrl, c)];
  const authenticate = async (x: Client) => {
    expect(
      (await x.rpc('initialize', { protocolVersions: ['1.0.0'], clientId: 'in-protocol' })).result,
    ).toBeDefined();
    return x.rpc('authenticate', {
      channel: 'ahp-root://',
      resource: 'urn:baton:gateway',
      token: c,
    });
  };
  const first = await Client.connect(lone.gw.wsUrl, undefined, '/ahp');
  expect((await authenticate(first)).result).toEqual({});
  // A fourth, by the same route, is refused with a reason, and stays unauthenticated.
  const second = await Client.connect(lone.gw.wsUrl, undefined, '/ahp');
  const refused = await authenticate(second);
  expect(refused.error).toMatchObject({
    message: expect.stringMatching(/3 connections on this gateway/),
    data: { code: 'too_many_connections' },
  });
  expect((await second.rpc('listSessions', {})).error).toMatchObject({ code: -32007 });
  // The authenticated /ahp connection closes: its place comes back, and the next try is let in.
  await first.close();
  const admitted = await waitFor(async () => {
    const r = await second.rpc('authenticate', {
      channel: 'ahp-root://',
      resource: 'urn:baton:gateway',
      token: c,
    });
    return r.result ? r : undefined;
  }, 'the /ahp place to be given back');
  expect(admitted.result).toEqual({});
  expect((await second.rpc('listSessions', {})).result).toMatchObject({ items: expect.any(Array) });
  await Promise.all([...ws, second].map((x) => x.close()));
});

it('a tenant holding GATEWAY_MAX_SUBSCRIPTIONS_PER_TENANT subscriptions is refused more, on either endpoint', async () => {
  const c = tokenFor('subs-c');
  const [one, two, ahp] = [
    await Client.connect(lone.gw.wsUrl, c),
    await Client.connect(lone.gw.wsUrl, c),
    await Client.connect(lone.gw.wsUrl, c, '/ahp'),
  ];
  for (const t of ['t1', 't2', 't3']) {
    expect((await one.request({ op: 'subscribe', taskId: t })).ok).toBe(true);
  }
  expect((await two.request({ op: 'subscribe', taskId: 't4' })).ok).toBe(true);
  // Five would be one too many: on /ws a reply error, on /ahp a JSON-RPC error.
  const refused = await two.request({ op: 'subscribe', taskId: 't5' });
  expect(refused).toMatchObject({
    ok: false,
    error: {
      code: 'too_many_subscriptions',
      message: expect.stringMatching(/4 subscriptions on this gateway .*PER_TENANT/) as string,
    },
  });
  expect(
    (await ahp.rpc('initialize', { protocolVersions: ['1.0.0'], clientId: 'c' })).result,
  ).toBeDefined();
  // The tenant writes to its task t6 (a chat of a task the tenant does not have is not found).
  const write = { op: 'prompt', taskId: 't6', sessionId: 's1', text: 'hi', idempotencyKey: 'k' };
  expect((await one.request(write)).ok).toBe(true);
  const rpc = await ahp.rpc('subscribe', { channel: chatUri('t6', 's1') });
  expect(rpc.error).toMatchObject({ code: -32092, data: { code: 'too_many_subscriptions' } });
  // Subscribing again to what it has is no new subscription; another tenant is not affected.
  expect((await two.request({ op: 'subscribe', taskId: 't4' })).ok).toBe(true);
  const d = await Client.connect(lone.gw.wsUrl, tokenFor('subs-d'));
  expect((await d.request({ op: 'subscribe', taskId: 'd1' })).ok).toBe(true);
  // Nothing was closed; giving a subscription back makes room, and so does closing a connection.
  expect([one, two, ahp].every((x) => x.closed === undefined)).toBe(true);
  expect((await one.request({ op: 'unsubscribe', taskId: 't1' })).ok).toBe(true);
  expect((await two.request({ op: 'subscribe', taskId: 't5' })).ok).toBe(true);
  await one.close();
  await waitFor(async () => {
    const r = await ahp.rpc('subscribe', { channel: chatUri('t6', 's1') });
    // Room: no longer refused for the limit (with no projector here the session has no view
    // yet, so the chat itself is not found).
    return (r.error as { code?: number } | undefined)?.code === -32008;
  }, 'room after a connection closed');
  await Promise.all([two, ahp, d].map((x) => x.close()));
});

it('a tenant over GATEWAY_MAX_REQUESTS_PER_SECOND on REST is answered 429 before anything is done; others are not', async () => {
  const post = (tok: string, key: string) =>
    fetch(`${lone.gw.url}/v1/tasks/flood/sessions/s/prompts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: key, idempotencyKey: key }),
    });
  const a = tokenFor('rate-a');
  // 40 prompts at once from one tenant: the burst (twice the rate: 10) goes through.
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => post(a, `k${i}`)));
  const limited = answers.filter((r) => r.status === 429);
  expect(answers.length - limited.length).toBeGreaterThanOrEqual(10);
  expect(answers.length - limited.length).toBeLessThan(15);
  expect(Number(limited[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(await limited[0]!.json()).toMatchObject({ error: { code: 'rate_limited' } });
  // Another tenant is not held back.
  expect((await post(tokenFor('rate-b'), 'b1')).status).not.toBe(429);
  // Reads count too, and the tenant gets through again once it waits.
  await waitFor(
    async () =>
      (
        await fetch(`${lone.gw.url}/v1/tasks/flood`, {
          headers: { authorization: `Bearer ${a}` },
        })
      ).status !== 429,
    'the bucket refilled',
  );
});

it('the settings are validated at start', async () => {
  const bad = spawnGateway({
    REDIS_URL: lone.redis.url,
    GATEWAY_MAX_CONNECTIONS_PER_TENANT: '0',
    GATEWAY_MAX_SUBSCRIPTIONS_PER_TENANT: 'lots',
  });
  await expect(bad).rejects.toThrow(/GATEWAY_MAX_CONNECTIONS_PER_TENANT="0"/);
  await expect(bad).rejects.toThrow(/GATEWAY_MAX_SUBSCRIPTIONS_PER_TENANT="lots"/);
});

it('upgrades that fail after their token was checked give their place back', async () => {
  const tok = tokenFor('conn-failed');
  const { port } = new URL(lone.gw.url);
  /** An upgrade with a good token that fails: a bad handshake key, or a client that goes away. */
  const failing = (how: 'bad key' | 'gone') =>
    new Promise<void>((resolve) => {
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write(
          `GET /ws HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${tok}\r\n` +
            'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n' +
            `Sec-WebSocket-Key: ${how === 'bad key' ? 'short' : 'dGhlIHNhbXBsZSBub25jZQ=='}\r\n\r\n`,
        );
        if (how === 'gone') socket.destroy();
      });
      socket.on('error', () => undefined);
      // Read the answer: a socket whose data is never read never sees its end, nor closes.
      socket.resume();
      socket.on('close', () => resolve());
    });
  for (let i = 0; i < 5; i++) await Promise.all([failing('bad key'), failing('gone')]);
  // Ten failed upgrades, three places: all three come back (a place is given back when the
  // gateway sees the socket close, a moment after the client does), and no fourth.
  const held: Client[] = [];
  for (let i = 0; i < 3; i++) {
    held.push(
      await waitFor(() => Client.connect(lone.gw.wsUrl, tok), `connection ${i + 1} of 3`, 15_000),
    );
  }
  expect((await upgrade(tok, '/ws')).status).toBe(429);
  expect(await ping(held[2]!)).toEqual({ pong: true });
  await Promise.all(held.map((c) => c.close()));
});
