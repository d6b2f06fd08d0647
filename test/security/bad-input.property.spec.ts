// Bad input, generated: thousands of malformed frames and messages to /ws and /ahp. Each one gets
// an error, the connection keeps working (a valid ping right after is answered), the service
// keeps working, and nothing reaches any stream.
import fc from 'fast-check';
import { AhpPingParams } from '@baton/ahp';
import { ClientMessage } from '@baton/protocol';
import { Client, loneGatewayForFile, streamLengths, tokenFor } from '@baton/testing';

jest.setTimeout(180_000);

const MAX = 2_048;
const HARD = MAX * 4;
const PREFIX = 'bad';
const lone = loneGatewayForFile(PREFIX, 4, {
  GATEWAY_MAX_MESSAGE_BYTES: String(MAX),
  GATEWAY_MAX_MESSAGES_PER_SECOND: '1000000',
  GATEWAY_ADMISSION_WAIT_MS: '50',
});
const tok = tokenFor('fuzz');

beforeAll(async () => {
  // Something in the streams, so "nothing changed" is not trivially about empty ones.
  const ok = await Client.connect(lone.gw.wsUrl, tok);
  await ok.request({
    op: 'prompt',
    taskId: 'seed',
    sessionId: 's',
    text: 'x',
    idempotencyKey: 'k',
  });
  await ok.close();
});

type Frame = string | Buffer;

const OPS = [
  'subscribe',
  'unsubscribe',
  'prompt',
  'queue.list',
  'queue.cancel',
  'queue.send_now',
  'queue.auto_run',
  'session.cancel',
  'ping',
  'transcript.subscribe',
  'transcript.unsubscribe',
];
const fieldValue = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 2 }),
  fc.string({ minLength: 201, maxLength: 260 }),
  fc.constant(''),
  fc.integer({ min: -5, max: -1 }),
);
const FIELDS = [
  'v',
  'id',
  'taskId',
  'sessionId',
  'afterSeq',
  'text',
  'idempotencyKey',
  'origin',
  'promptId',
  'enabled',
  'observedGeneration',
  'after',
];

const binary = fc.uint8Array({ minLength: 0, maxLength: 64 }).map((a) => Buffer.from(a));
const notJson = fc.string({ maxLength: 60 }).filter((s) => {
  try {
    JSON.parse(s);
    return false;
  } catch {
    return true;
  }
});
const oversize = fc
  .integer({ min: MAX + 1, max: HARD - 100 })
  .map((n) => JSON.stringify({ v: 1, op: 'ping', id: 'x', pad: 'p'.repeat(n) }));
const nonObject = fc
  .oneof(
    fc.integer(),
    fc.string(),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.jsonValue(), { maxLength: 3 }),
  )
  .map((v) => JSON.stringify(v));

/** Objects shaped like /ws requests, with random field values: only the invalid ones are kept. */
const wsObject = fc
  .record({
    op: fc.oneof(fc.constantFrom(...OPS), fc.string({ maxLength: 12 }), fieldValue),
    fields: fc.dictionary(fc.constantFrom(...FIELDS), fieldValue, { maxKeys: 6 }),
    keepV: fc.boolean(),
  })
  .map(({ op, fields, keepV }) => ({ ...(keepV ? { v: 1 } : {}), id: 'q', op, ...fields }))
  .filter((m) => !ClientMessage.safeParse(m).success)
  .map((m) => JSON.stringify(m));

/** Mostly an endpoint's malformed `messages`; now and then binary, not JSON, not an object, too large. */
const framesAround = (messages: fc.Arbitrary<Frame>): fc.Arbitrary<Frame> =>
  fc.oneof(
    { arbitrary: messages, weight: 6 },
    { arbitrary: binary, weight: 1 },
    { arbitrary: notJson, weight: 1 },
    { arbitrary: nonObject, weight: 1 },
    { arbitrary: oversize, weight: 1 },
  );

const wsFrame = framesAround(wsObject);

const METHODS = [
  'initialize',
  'subscribe',
  'unsubscribe',
  'reconnect',
  'ping',
  'dispatchAction',
  'fetchTurns',
  'x-nope',
];
const rpcId = fc.oneof(
  fc.integer({ min: 1, max: 1e6 }),
  fc.string({ minLength: 1, maxLength: 10 }),
);
/** JSON-RPC requests (with an id) that are wrong in some way: every one must be answered. */
const rpcObject = fc
  .record({
    jsonrpc: fc.oneof(fc.constant('2.0'), fc.constant('2.0'), fieldValue),
    id: fc.oneof(
      rpcId,
      rpcId,
      fc.double(),
      fc.boolean(),
      fc.dictionary(fc.string(), fc.integer(), { maxKeys: 1 }),
    ),
    method: fc.oneof(fc.constantFrom(...METHODS), fc.constantFrom(...METHODS), fieldValue),
    params: fc.oneof(
      fc.constant(undefined),
      fieldValue,
      fc.record(
        {
          channel: fc.oneof(
            fc.constant('ahp-chat:/a'),
            fc.constant('ahp-chat:/t/s/x'),
            fc.constant('ahp-session:/x'),
            fieldValue,
          ),
          protocolVersions: fc.oneof(
            fc.constant([]),
            fc.array(fieldValue, { maxLength: 2 }),
            fc.constant(['1.0']),
            fieldValue,
          ),
          clientId: fc.oneof(fc.constant(''), fieldValue),
          subscriptions: fc.oneof(fieldValue, fc.constant([1, 2])),
          lastSeenServerSeq: fieldValue,
        },
        { requiredKeys: [] },
      ),
    ),
  })
  .map(({ params, ...m }) => (params === undefined ? m : { ...m, params }))
  .map((m) => JSON.stringify(m))
  // Valid requests are not "bad input"; a well-formed notification (no id) is never answered.
  // Judged as sent: NaN and Infinity ids go out as null.
  .filter((frame) => !isValidRpc(JSON.parse(frame) as Record<string, unknown>));

function isValidRpc(m: Record<string, unknown>): boolean {
  if (m.jsonrpc !== '2.0' || typeof m.method !== 'string') return false;
  if (!(typeof m.id === 'string' || Number.isInteger(m.id) || m.id === null)) return false;
  // The connection is never initialized (no generated offer is a valid version list), so every
  // other method is refused; a ping with valid params is the one valid request.
  // (JSON-RPC lets a request leave out params; a ping needs none.)
  return (
    m.method === 'ping' && (m.params === undefined || AhpPingParams.safeParse(m.params).success)
  );
}

const ahpFrame = framesAround(rpcObject);

type Json = Record<string, unknown>;

/**
 * The property both sockets hold: for 120 batches of 10 to 60 frames sent on `c`, a ping after
 * the batch is answered (`ping` checks the pong) after exactly one answer per frame, each of which
 * `isError` checks. Returns how many frames were sent.
 */
async function answersToBatches<F>(
  c: Client,
  frame: fc.Arbitrary<F>,
  ping: () => Promise<Json>,
  isError: (answer: Json) => void,
): Promise<number> {
  let sent = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(frame, { minLength: 10, maxLength: 60 }), async (frames) => {
      const from = c.messages.length;
      for (const f of frames) c.send(f);
      sent += frames.length;
      const pong = await ping();
      const answers = c.messages.slice(from, c.messages.indexOf(pong));
      expect(answers).toHaveLength(frames.length);
      for (const a of answers) isError(a);
    }),
    { numRuns: 120 },
  );
  return sent;
}

describe('bad input (property)', () => {
  it('/ws: every malformed frame gets an error, the connection stays usable, nothing is written', async () => {
    const before = await streamLengths(lone.store, PREFIX);
    const c = await Client.connect(lone.gw.wsUrl, tok);
    const sent = await answersToBatches(
      c,
      wsFrame,
      async () => {
        const pong = await c.request({ op: 'ping' });
        expect(pong).toMatchObject({ ok: true, result: { pong: true } });
        return pong;
      },
      (a) => {
        const error = (
          a.type === 'error' ? a.error : a.type === 'reply' && a.ok === false ? a.error : undefined
        ) as { code: string; message: string } | undefined;
        expect(error).toBeDefined();
        expect(error!.message.length).toBeGreaterThan(0);
      },
    );
    expect(sent).toBeGreaterThan(2_000);
    expect(c.closed).toBeUndefined();
    await c.close();
    expect(await streamLengths(lone.store, PREFIX)).toEqual(before);
    expect((await fetch(`${lone.gw.url}/healthz`)).status).toBe(200);
  });

  it('/ahp: every malformed frame gets a JSON-RPC error, the connection stays usable, nothing is written', async () => {
    const before = await streamLengths(lone.store, PREFIX);
    const c = await Client.connect(lone.gw.wsUrl, tok, '/ahp');
    const sent = await answersToBatches(
      c,
      ahpFrame,
      async () => {
        const pong = await c.rpc('ping');
        expect(pong.result).toEqual({});
        return pong;
      },
      (a) => {
        expect(a.jsonrpc).toBe('2.0');
        expect(a.error).toMatchObject({ code: expect.any(Number), message: expect.any(String) });
      },
    );
    expect(sent).toBeGreaterThan(2_000);
    expect(c.closed).toBeUndefined();
    await c.close();
    expect(await streamLengths(lone.store, PREFIX)).toEqual(before);
  });

  it("Object.prototype's names are unknown names on every surface, never a crash", async () => {
    const NAMES = [
      '__proto__',
      'constructor',
      'prototype',
      'toString',
      'valueOf',
      'hasOwnProperty',
      'isPrototypeOf',
      '__defineGetter__',
      '__lookupSetter__',
    ];
    const from = lone.gw.output().length;
    const ws = await Client.connect(lone.gw.wsUrl, tok);
    for (const name of NAMES) {
      const id = `p-${name}`;
      ws.send(JSON.stringify({ v: 1, id, op: name, taskId: name, sessionId: name }));
      const reply = await ws.next((m) => m.id === id, `the answer to op ${name}`);
      expect([name, reply]).toEqual([
        name,
        expect.objectContaining({
          ok: false,
          error: expect.objectContaining({ code: 'invalid_message', path: 'op' }),
        }),
      ]);
      // As ids of a valid request, the same names are just ids: an empty task, nothing found.
      const list = await ws.request({ op: 'queue.list', taskId: name, sessionId: name });
      expect([name, list]).toEqual([
        name,
        expect.objectContaining({
          ok: false,
          error: expect.objectContaining({ code: 'not_found' }),
        }),
      ]);
    }
    // A __proto__ key in the frame itself changes nothing.
    ws.send('{"v":1,"id":"pp","op":"ping","__proto__":{"op":"prompt","text":"x"}}');
    expect(await ws.next((m) => m.id === 'pp', 'the ping with a __proto__ key')).toMatchObject({
      ok: true,
      result: { pong: true },
    });
    await ws.close();

    const ahp = await Client.connect(lone.gw.wsUrl, tok, '/ahp');
    for (const name of NAMES) {
      const { error } = (await ahp.rpc(name, {})) as { error?: { code: number } };
      expect([name, error?.code]).toEqual([name, expect.any(Number)]);
      expect([name, error?.code]).not.toEqual([name, -32603]);
    }
    await ahp.close();

    for (const name of NAMES) {
      for (const path of [
        `/v1/tasks/${name}`,
        `/v1/tasks/${name}/sessions/${name}`,
        `/v1/tasks/${name}/history?since=1h`,
        `/v1/${name}`,
      ]) {
        const res = await fetch(`${lone.gw.url}${path}`, {
          headers: { authorization: `Bearer ${tok}` },
        });
        expect([path, res.status]).toEqual([path, res.status < 500 ? res.status : 'a 4xx']);
      }
    }
    // Nothing logged an error or a stack trace, and the service goes on.
    const logged = lone.gw.output().slice(from);
    expect(logged).not.toMatch(/"level":(50|60)|"stack"|\n\s+at /);
    expect((await fetch(`${lone.gw.url}/healthz`)).status).toBe(200);
  });

  it('above the hard cap the connection is closed with 1009; the service goes on', async () => {
    const c = await Client.connect(lone.gw.wsUrl, tok);
    c.send('x'.repeat(HARD + 1));
    await expect(c.next(() => false, 'close', 0, 5_000)).rejects.toThrow(/closed \(1009/);
    const d = await Client.connect(lone.gw.wsUrl, tok);
    expect((await d.request({ op: 'ping' })).ok).toBe(true);
    await d.close();
  });
});
