// Transcripts over /ws against a real redis-server and gateway processes: events written as a
// worker writes them (store.transcripts.append), read back by raw sockets and by @baton/client.
import { BatonClient, type TranscriptEntry } from '@baton/client';
import { taskKey } from '@baton/protocol';
import type { TranscriptEvent } from '@baton/transcript';
import { Client, startStack, token, waitFor, type Stack } from '@baton/testing';
import { withTranscriptBound } from './support/transcript-bound';

jest.setTimeout(120_000);

let stack: Stack;
const GATEWAY_ENV = {
  GATEWAY_MAX_SUBSCRIPTIONS: '4',
  GATEWAY_MAX_SUBSCRIPTIONS_PER_TENANT: '12',
  GATEWAY_MAX_BUFFERED_BYTES: '262144',
};
const tok = token({ tenant: 'acme', scope: 'read prompt' });

beforeAll(async () => {
  stack = await startStack({
    gateways: 1,
    projectors: 0,
    gatewayEnv: GATEWAY_ENV,
  });
});
afterAll(async () => {
  await stack?.stop();
});

type Json = Record<string, unknown>;

/** The transcript messages a raw client got so far (of a session, when given). */
const transcriptMsgs = (c: Client, sessionId?: string): Json[] =>
  c.messages.filter(
    (m) => m.type === 'transcript' && (sessionId === undefined || m.sessionId === sessionId),
  );
const eventsOf = (ms: Json[]) =>
  ms.flatMap((m) => (m.events as TranscriptEntry[] | undefined) ?? []);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

const text = (n: number, turn = 'p1'): TranscriptEvent => ({
  type: 'text',
  turn,
  phase: 'turn',
  item: 'm1',
  role: 'agent',
  delta: `chunk ${n};`,
});

async function append(tenant: string, taskId: string, sessionId: string, from: number, n: number) {
  const writes = Array.from({ length: n }, (_, i) => ({
    sessionId,
    executionId: 'x1',
    event: text(from + i),
  }));
  await stack.store.transcripts.append(taskKey(tenant, taskId), writes);
}

const deltas = (es: readonly TranscriptEntry[]) =>
  es.map((e) => (e.event.type === 'text' ? e.event.delta : '?')).join('');
const expected = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => `chunk ${from + i};`).join('');

it('catches up, then goes live, each event once and in order, other sessions left out', async () => {
  await append('acme', 't1', 's', 0, 50);
  await append('acme', 't1', 'other', 0, 5);
  const c = await Client.connect(stack.gateways[0]!.wsUrl, tok);
  try {
    const reply = await c.request({ op: 'transcript.subscribe', taskId: 't1', sessionId: 's' });
    expect(reply).toMatchObject({ ok: true, result: { subscribed: true, cursor: '0-0' } });
    // Written while the subscription catches up and after: nothing lost at the switch to live.
    for (let i = 0; i < 10; i++) await append('acme', 't1', 's', 50 + i * 5, 5);
    await waitFor(() => eventsOf(transcriptMsgs(c)).length >= 100, 'every event');
    await pause(200);
    const got = transcriptMsgs(c);
    const events = eventsOf(got);
    expect(deltas(events)).toBe(expected(0, 100));
    expect(new Set(events.map((e) => e.id)).size).toBe(100);
    for (const m of got) {
      expect(m).toMatchObject({ v: 1, type: 'transcript', taskId: 't1', sessionId: 's' });
      const es = m.events as TranscriptEntry[];
      // Past the last event when entries of the other session came after it.
      const [cursor, last] = [m.cursor as string, es[es.length - 1]!.id].map((id) =>
        id.split('-').map(BigInt),
      );
      expect(cursor![0]! > last![0]! || (cursor![0] === last![0] && cursor![1]! >= last![1]!)).toBe(
        true,
      );
    }
  } finally {
    await c.close();
  }
});

it('@baton/client resumes after a reconnect from its cursor: nothing missed or doubled', async () => {
  await append('acme', 't2', 's', 0, 20);
  const client = new BatonClient({ backoff: { initialMs: 20, maxMs: 100 } });
  await client.connect(`${stack.gateways[0]!.wsUrl}/ws`, tok);
  const got: TranscriptEntry[] = [];
  let items = 0;
  try {
    const reader = client.transcript('t2', 's', {
      onEvents: (es) => got.push(...es),
      onItems: (xs) => (items = xs.length),
    });
    await reader.ready;
    await waitFor(() => got.length === 20, 'the first 20');
    // The gateway goes away and comes back; events are written meanwhile.
    const gw = stack.gateways[0]!;
    await gw.stop();
    await append('acme', 't2', 's', 20, 10);
    const { spawnGateway } = await import('@baton/testing');
    const again = await spawnGateway({
      ...stack.env,
      ...GATEWAY_ENV,
      GATEWAY_PORT: new URL(gw.url).port,
    });
    stack.gateways[0] = again;
    await append('acme', 't2', 's', 30, 10);
    await waitFor(() => got.length >= 40, 'all 40 after the reconnect', 30_000);
    await pause(300);
    expect(deltas(got)).toBe(expected(0, 40));
    expect(reader.cursor).toBe(got[got.length - 1]!.id);
    // Deltas of one item concatenate into one message.
    expect(items).toBe(1);
  } finally {
    await client.close();
  }
});

it('another tenant gets an empty transcript, and nothing is claimed', async () => {
  await append('acme', 't3', 's', 0, 3);
  const other = await Client.connect(
    stack.gateways[0]!.wsUrl,
    token({ tenant: 'globex', scope: 'read' }),
  );
  try {
    const reply = await other.request({ op: 'transcript.subscribe', taskId: 't3', sessionId: 's' });
    expect(reply).toMatchObject({ ok: true, result: { subscribed: true } });
    await append('acme', 't3', 's', 3, 3);
    await pause(500);
    expect(transcriptMsgs(other)).toEqual([]);
    expect(
      await stack.store.redis.exists(stack.store.keys.transcript(taskKey('globex', 't3'))),
    ).toBe(0);
  } finally {
    await other.close();
  }
});

it('a malformed cursor is refused; subscriptions count against the limit; unsubscribe stops', async () => {
  const c = await Client.connect(stack.gateways[0]!.wsUrl, tok);
  try {
    const bad = await c.request({
      op: 'transcript.subscribe',
      taskId: 't4',
      sessionId: 's',
      after: 'yesterday',
    });
    expect(bad).toMatchObject({ ok: false, error: { code: 'invalid_message', path: 'after' } });
    for (let i = 0; i < 3; i++) {
      const r = await c.request({ op: 'transcript.subscribe', taskId: 't4', sessionId: `s${i}` });
      expect(r).toMatchObject({ ok: true });
    }
    expect(await c.request({ op: 'subscribe', taskId: 't4' })).toMatchObject({ ok: true });
    const over = await c.request({ op: 'transcript.subscribe', taskId: 't4', sessionId: 'x' });
    expect(over).toMatchObject({ ok: false, error: { code: 'too_many_subscriptions' } });
    // Subscribing again to the same session replaces it, within the limit.
    expect(
      await c.request({ op: 'transcript.subscribe', taskId: 't4', sessionId: 's0' }),
    ).toMatchObject({ ok: true });
    const off = await c.request({ op: 'transcript.unsubscribe', taskId: 't4', sessionId: 's0' });
    expect(off).toMatchObject({ ok: true, result: { subscribed: false } });
    await append('acme', 't4', 's0', 0, 2);
    await append('acme', 't4', 's1', 0, 2);
    await waitFor(() => transcriptMsgs(c, 's1').length > 0, 's1 live');
    await pause(300);
    expect(transcriptMsgs(c, 's0')).toEqual([]);
  } finally {
    await c.close();
  }
});

it('a reader that does not read is resynced from its last cursor once it drains', async () => {
  // Each event large, so that a paused socket fills the gateway's buffer bound quickly.
  const big = 'x'.repeat(60_000);
  const key = taskKey('acme', 't5');
  const write = (from: number, n: number) =>
    stack.store.transcripts.append(
      key,
      Array.from({ length: n }, (_, i) => ({
        sessionId: 's',
        executionId: 'x1',
        event: { ...text(from + i), delta: `chunk ${from + i};${big}` },
      })),
    );
  const c = await Client.connect(stack.gateways[0]!.wsUrl, tok);
  try {
    expect(
      await c.request({ op: 'transcript.subscribe', taskId: 't5', sessionId: 's' }),
    ).toMatchObject({ ok: true });
    const socket = (c.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    socket.pause();
    for (let i = 0; i < 40; i++) await write(i * 5, 5);
    await new Promise((r) => setTimeout(r, 500));
    socket.resume();
    await waitFor(() => eventsOf(transcriptMsgs(c)).length >= 200, 'all 200 events', 30_000);
    await pause(300);
    const ms = transcriptMsgs(c);
    const resyncs = ms.filter((m) => m.resync === true);
    expect(resyncs.length).toBeGreaterThan(0);
    // Each resync names the cursor of the last message delivered before it.
    ms.forEach((m, i) => {
      if (m.resync !== true) return;
      const before = ms.slice(0, i).filter((x) => x.events);
      expect(m.cursor).toBe(before[before.length - 1]?.cursor ?? '0-0');
    });
    const events = eventsOf(ms);
    expect(events.map((e) => (e.event.type === 'text' ? e.event.delta.split(';')[0] : ''))).toEqual(
      Array.from({ length: 200 }, (_, i) => `chunk ${i}`),
    );
  } finally {
    await c.close();
  }
});

it('readers of one task share one tail: one Redis connection, gone with the last reader', async () => {
  // Connections whose last command is XREAD: the gateway's update tail, and transcript tails.
  const tails = async () =>
    ((await stack.store.redis.client('LIST')) as string)
      .split('\n')
      .filter((l) => l.includes('cmd=xread')).length;
  // The tails of earlier tests' readers are gone.
  await waitFor(async () => (await tails()) === 1, 'the update tail alone');
  const before = 1;
  const readers = await Promise.all(
    Array.from({ length: 10 }, () => Client.connect(stack.gateways[0]!.wsUrl, tok)),
  );
  try {
    for (const r of readers) {
      expect(
        await r.request({ op: 'transcript.subscribe', taskId: 't6', sessionId: 's' }),
      ).toMatchObject({ ok: true });
    }
    await append('acme', 't6', 's', 0, 3);
    for (const r of readers) {
      await waitFor(() => eventsOf(transcriptMsgs(r)).length === 3, 'the events, on every reader');
      expect(deltas(eventsOf(transcriptMsgs(r)))).toBe(expected(0, 3));
    }
    expect(await tails()).toBe(before + 1);
  } finally {
    await Promise.all(readers.map((r) => r.close()));
  }
  await waitFor(async () => (await tails()) === before, 'the tail closed with its last reader');
});

it('readers that join while events are written each get every event once, in order', async () => {
  const N = 300;
  const readers: Client[] = [];
  try {
    const writing = (async () => {
      for (let i = 0; i < N; i += 2) await append('acme', 't7', 's', i, 2);
    })();
    // Joining at different points of the writing: each one's catch-up meets the live tail at
    // another place.
    for (let k = 0; k < 8; k++) {
      const r = await Client.connect(stack.gateways[0]!.wsUrl, tok);
      readers.push(r);
      r.send({ v: 1, id: `j${k}`, op: 'transcript.subscribe', taskId: 't7', sessionId: 's' });
      await pause(5 + k * 3);
    }
    await writing;
    for (const r of readers) {
      await waitFor(() => eventsOf(transcriptMsgs(r)).length >= N, 'every event', 30_000);
    }
    await pause(200);
    for (const r of readers) expect(deltas(eventsOf(transcriptMsgs(r)))).toBe(expected(0, N));
  } finally {
    await Promise.all(readers.map((r) => r.close()));
  }
});

it("transcript subscriptions count against the tenant's limit on the gateway", async () => {
  const t = token({ tenant: 'initech', scope: 'read' });
  const conns = await Promise.all(
    Array.from({ length: 4 }, () => Client.connect(stack.gateways[0]!.wsUrl, t)),
  );
  try {
    for (const [i, c] of conns.slice(0, 3).entries())
      for (let j = 0; j < 4; j++) {
        const r = await c.request({
          op: 'transcript.subscribe',
          taskId: `t${i}`,
          sessionId: `s${j}`,
        });
        expect(r).toMatchObject({ ok: true });
      }
    const over = await conns[3]!.request({
      op: 'transcript.subscribe',
      taskId: 'u',
      sessionId: 's',
    });
    expect(over).toMatchObject({
      ok: false,
      error: { code: 'too_many_subscriptions', message: expect.stringContaining('PER_TENANT') },
    });
    await conns[0]!.close();
    await waitFor(async () => {
      const r = await conns[3]!.request({
        op: 'transcript.subscribe',
        taskId: 'u',
        sessionId: 's',
      });
      return r.ok === true;
    }, 'room once a connection closed');
  } finally {
    await Promise.all(conns.slice(1).map((c) => c.close()));
  }
});

it('a cursor behind the retention is told what it lost (gap), then gets what is left', async () => {
  const key = taskKey('acme', 't-gap');
  // A worker whose transcript bound is 10 events: its append trims the stream in Redis.
  const small = withTranscriptBound(stack.store, 10);
  const writes = Array.from({ length: 130 }, (_, i) => ({
    sessionId: 's',
    executionId: 'x1',
    event: text(i),
  }));
  await stack.store.transcripts.append(key, writes.slice(0, 20));
  const cursor = (await stack.store.transcripts.read(key, { limit: 100 })).items[9]!.id;
  await small.transcripts.append(key, writes.slice(20));
  const left = (await stack.store.transcripts.read(key, { limit: 200 })).items;
  expect(deltas(left)).toBe(expected(120, 10));
  const info = (await stack.store.redis.xinfo(
    'STREAM',
    stack.store.keys.transcript(key),
  )) as unknown[];
  const through = String(info[info.indexOf('max-deleted-entry-id') + 1]);
  const lost = { reason: 'retention', after: cursor, through };

  const c = await Client.connect(stack.gateways[0]!.wsUrl, tok);
  try {
    await c.request({ op: 'transcript.subscribe', taskId: 't-gap', sessionId: 's', after: cursor });
    await waitFor(() => eventsOf(transcriptMsgs(c, 's')).length >= 10, 'what is left');
    const [first, ...rest] = transcriptMsgs(c, 's');
    expect(first).toMatchObject({ type: 'transcript', gap: lost, cursor: through });
    expect(first!.events).toBeUndefined();
    expect(deltas(eventsOf(rest))).toBe(expected(120, 10));
  } finally {
    await c.close();
  }

  // @baton/client hands the gap to onGap; without it, the loss is an error, never silent.
  const client = new BatonClient({ backoff: { initialMs: 20, maxMs: 100 } });
  await client.connect(`${stack.gateways[0]!.wsUrl}/ws`, tok);
  const errors: string[] = [];
  client.on('error', (e) => errors.push(e.code));
  try {
    const gaps: unknown[] = [];
    const got: TranscriptEntry[] = [];
    const reader = client.transcript('t-gap', 's', {
      after: cursor,
      onEvents: (es) => got.push(...es),
      onGap: (g) => gaps.push(g),
    });
    await reader.ready;
    await waitFor(() => got.length >= 10, 'the client gets what is left');
    expect(gaps).toEqual([lost]);
    expect(deltas(got)).toBe(expected(120, 10));
    await reader.close();
    const silent = client.transcript('t-gap', 's', { after: cursor, onEvents: () => undefined });
    await silent.ready;
    await waitFor(() => errors.includes('transcript_gap'), 'the gap reported as an error');
  } finally {
    await client.close();
  }
});
