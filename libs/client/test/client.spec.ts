import WebSocket from 'ws';
import { SCHEMA_VERSION, type TaskView, type Update } from '@baton/protocol';
import { GENERIC_CAPS } from '@baton/testing';
import { BatonClient, BatonError, type ViewCause } from '../src';
import { TOKEN, WireServer } from './wire-server';
import { waitFor } from '@baton/testing';

let server: WireServer;
let client: BatonClient;

beforeEach(async () => {
  server = await WireServer.start();
  client = new BatonClient({ backoff: { initialMs: 10, maxMs: 50 }, requestTimeoutMs: 5_000 });
});
afterEach(async () => {
  await client.close();
  await server.close();
});

/** A task whose session s1 has a ready execution: the first prompt is admitted. */
function readySession(taskId = 't1') {
  server.act(taskId, (o) => o.execution('s1', 'e1', 1).start(GENERIC_CAPS));
}

const prompts = (taskId: string) =>
  server.received.filter((m) => m.op === 'prompt' && m.taskId === taskId);

/**
 * A connected client sends prompt `text` to t1/s1; the server appends it and never replies. The
 * decision the client waits for, once the prompt reached the server.
 */
async function promptTheServerSwallows(text: string) {
  readySession();
  await client.connect(server.url, TOKEN);
  server.swallowPrompts = true;
  const decided = client.prompt({ taskId: 't1', sessionId: 's1', text });
  await waitFor(() => prompts('t1').length === 1, 'condition');
  // Wrapped: an async function's result would otherwise wait for the decision itself.
  return { decided };
}

describe('BatonClient against a wire-protocol server', () => {
  it('subscribes (snapshot, then updates in order) and prompts: admitted, then queued', async () => {
    readySession();
    await client.connect(server.url, TOKEN);
    const causes: ViewCause[] = [];
    const seen: Update[] = [];
    const sub = client.subscribe('t1', {
      onView: (_v, cause) => causes.push(cause),
      onUpdate: (u) => seen.push(u),
    });
    const first = await sub.ready;
    expect(first).toEqual(server.view('t1'));

    const a = await client.prompt({ taskId: 't1', sessionId: 's1', text: 'first' });
    expect(a.decision).toMatchObject({ outcome: 'admitted', mode: 'turn' });
    expect(a.wasPending).toBe(false);
    const b = await client.prompt({ taskId: 't1', sessionId: 's1', text: 'second' });
    expect(b.decision).toEqual({ outcome: 'queued', position: 1, reason: 'busy' });

    await waitFor(() => sub.seq === server.view('t1').seq, 'condition');
    expect(sub.view).toEqual(server.view('t1'));
    expect(sub.view!.sessions[0]!.queue.entries.map((e) => e.text)).toEqual(['second']);
    expect(seen.map((u) => u.seq)).toEqual(seen.map((_, i) => first.seq + i + 1));
    expect(causes[0]).toBe('snapshot');
    expect(causes.slice(1).every((c) => c === 'update')).toBe(true);

    const list = await client.queue.list({ taskId: 't1', sessionId: 's1' });
    expect(list.entries.map((e) => e.promptId)).toEqual([b.promptId]);
  });

  it('resumes every subscription from its last applied seq after the server drops it', async () => {
    readySession('t1');
    readySession('t2');
    await client.connect(server.url, TOKEN);
    let resyncs = 0;
    const s1 = client.subscribe('t1', { onResync: () => resyncs++ });
    const s2 = client.subscribe('t2', { onResync: () => resyncs++ });
    await Promise.all([s1.ready, s2.ready]);
    await client.prompt({ taskId: 't1', sessionId: 's1', text: 'x' });
    await waitFor(() => s1.seq === server.view('t1').seq, 'condition');
    const before = { t1: s1.seq, t2: s2.seq };

    const reconnected = client.next('open', (e) => e.reconnected);
    server.terminateAll();
    // While the client is away, both tasks move on.
    server.act('t1', (o) => o.submit('s1', 'while-away'));
    server.act('t2', (o) => o.execution('s1', 'e1', 1).subagent('sub-1'));
    await reconnected;
    await waitFor(
      () => s1.seq === server.view('t1').seq && s2.seq === server.view('t2').seq,
      'condition',
    );

    const resubs = server.received.filter((m) => m.op === 'subscribe' && 'afterSeq' in m);
    expect(resubs.map((m) => [m.taskId, m.afterSeq])).toEqual([
      ['t1', before.t1],
      ['t2', before.t2],
    ]);
    expect(s1.view).toEqual(server.view('t1'));
    expect(s2.view).toEqual(server.view('t2'));
    expect(s2.view!.sessions[0]!.backgroundWork.map((w) => w.id)).toEqual(['sub-1']);
    expect(resyncs).toBe(0);
    expect(s1.state).toBe('live');
  });

  it('takes a resync snapshot when the missed updates are no longer retained', async () => {
    readySession();
    await client.connect(server.url, TOKEN);
    const resynced: TaskView[] = [];
    const sub = client.subscribe('t1', { onResync: (v) => resynced.push(v) });
    await sub.ready;
    const reconnected = client.next('open', (e) => e.reconnected);
    server.terminateAll();
    server.act('t1', (o) => o.submit('s1', 'k1'));
    server.act('t1', (o) => o.submit('s1', 'k2'));
    server.retainedFrom.set('t1', server.view('t1').seq); // everything before the last is gone
    await reconnected;
    await waitFor(() => resynced.length === 1, 'condition');
    expect(resynced[0]).toEqual(server.view('t1'));
    expect(sub.view).toEqual(server.view('t1'));
    await waitFor(() => sub.state === 'live', 'condition');
  });

  it('asks again from its last seq when an update skips one', async () => {
    readySession();
    await client.connect(server.url, TOKEN);
    const sub = client.subscribe('t1');
    await sub.ready;
    const at = sub.seq;
    // Two updates happen; only the second is sent (the first is lost on the way).
    server.owner('t1').submit('s1', 'k1');
    const missed = server.owner('t1').updates.filter((u) => u.seq > at);
    expect(missed.length).toBeGreaterThan(1);
    server.sendUpdate(missed.at(-1)!);
    await waitFor(() => sub.seq === server.view('t1').seq, 'condition');
    expect(sub.view).toEqual(server.view('t1'));
    const asks = server.received.filter((m) => m.op === 'subscribe');
    expect(asks.at(-1)).toMatchObject({ taskId: 't1', afterSeq: at });
  });

  it('starts over from a snapshot when an update names a session its view lacks', async () => {
    readySession();
    await client.connect(server.url, TOKEN);
    const resynced: TaskView[] = [];
    const sub = client.subscribe('t1', { onResync: (v) => resynced.push(v) });
    const view = await sub.ready;
    server.sendUpdate({
      v: SCHEMA_VERSION,
      taskId: 't1',
      seq: view.seq + 1,
      type: 'chat/backgroundWorkRemoved',
      data: { sessionId: 'ghost', id: 'w' },
    });
    await waitFor(() => resynced.length === 1, 'condition');
    expect(server.received.filter((m) => m.op === 'subscribe').at(-1)).toEqual({
      v: 1,
      id: expect.any(String),
      op: 'subscribe',
      taskId: 't1',
    });
    expect(sub.view).toEqual(server.view('t1'));
  });

  it('a pending prompt resolves with the decision that follows as an update', async () => {
    readySession();
    await client.connect(server.url, TOKEN);
    server.holdDecisions = true;
    const pendingSeen: string[] = [];
    const decided = client.prompt(
      { taskId: 't1', sessionId: 's1', text: 'hello', idempotencyKey: 'key-1' },
      { onPending: (p) => pendingSeen.push(`${p.idempotencyKey}:${p.status}`) },
    );
    await waitFor(() => pendingSeen.length === 1, 'condition');
    expect(pendingSeen).toEqual(['key-1:pending']);
    expect(client.pendingPrompts).toEqual([
      { taskId: 't1', sessionId: 's1', idempotencyKey: 'key-1', status: 'pending' },
    ]);
    server.releaseDecisions();
    const d = await decided;
    expect(d).toMatchObject({ idempotencyKey: 'key-1', wasPending: true });
    expect(d.decision.outcome).toBe('admitted');
    expect(client.pendingPrompts).toEqual([]);
  });

  it('asks about a pending prompt again when its decision update never comes', async () => {
    client = new BatonClient({ pendingRecheckMs: 50 });
    readySession();
    await client.connect(server.url, TOKEN);
    server.holdDecisions = true;
    let pendings = 0;
    const decided = client.prompt(
      { taskId: 't1', sessionId: 's1', text: 'hello', idempotencyKey: 'k' },
      { onPending: () => pendings++ },
    );
    await waitFor(() => pendings === 1, 'condition');
    server.holdDecisions = false; // decided now, but the update for it is lost
    const d = await decided;
    expect(d).toMatchObject({ idempotencyKey: 'k', wasPending: true });
    expect(prompts('t1').length).toBeGreaterThanOrEqual(2);
    expect(pendings).toBe(1);
    expect(Object.keys(server.owner('t1').session('s1').prompts)).toHaveLength(1);
  });

  it('a prompt whose reply was lost is sent again under the same key and made once', async () => {
    const { decided } = await promptTheServerSwallows('once');
    // The first attempt did reach the task: the gateway died after appending, before replying.
    const key = prompts('t1')[0]!.idempotencyKey as string;
    server.act('t1', (o) => o.submit('s1', key, 'human', 'p-first'));
    server.swallowPrompts = false;
    server.terminateAll();
    const d = await decided;
    expect(prompts('t1').map((m) => m.idempotencyKey)).toEqual([key, key]);
    expect(d.promptId).toBe('p-first');
    const s = server.owner('t1').session('s1');
    expect(Object.keys(s.prompts)).toEqual(['p-first']);
  });

  it('rejects a request the server refuses, with the code and field, and stays connected', async () => {
    await client.connect(server.url, TOKEN);
    const err = await client
      .prompt({ taskId: 't1', sessionId: 's1', text: '' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BatonError);
    expect(err).toMatchObject({ code: 'invalid_message', path: 'text' });
    const forbidden = await client
      .prompt({ taskId: 'forbidden', sessionId: 's1', text: 'x' })
      .catch((e: unknown) => e);
    expect(forbidden).toMatchObject({ code: 'forbidden' });
    await client.ping();
    expect(client.connected).toBe(true);
    const r = await client.queue.cancel({ taskId: 't1', sessionId: 's1', promptId: 'nope' });
    expect(r).toMatchObject({ status: 'failed', reason: 'unknown_prompt' });
    const errors: BatonError[] = [];
    client.on('error', (e) => errors.push(e));
    // An unsolicited error (a frame the server could not read) arrives as an event.
    server.received.length = 0;
    (client as unknown as { connection: { send(s: string): void } }).connection.send('{not json');
    await waitFor(() => errors.length === 1, 'condition');
    expect(errors[0]!.code).toBe('invalid_message');
  });

  it('queue operations and session cancel carry out commands', async () => {
    readySession();
    await client.connect(server.url, TOKEN);
    const sub = client.subscribe('t1');
    await sub.ready;
    const running = await client.prompt({ taskId: 't1', sessionId: 's1', text: 'a' });
    const queued = await client.prompt({ taskId: 't1', sessionId: 's1', text: 'b' });
    expect(
      await client.queue.setAutoRun({ taskId: 't1', sessionId: 's1', enabled: false }),
    ).toMatchObject({
      status: 'done',
    });
    expect(
      await client.queue.cancel({ taskId: 't1', sessionId: 's1', promptId: queued.promptId }),
    ).toMatchObject({ status: 'done' });
    expect(await client.cancel({ taskId: 't1', sessionId: 's1' })).toMatchObject({
      status: 'done',
    });
    await waitFor(() => sub.seq === server.view('t1').seq, 'condition');
    // The cancelled turn had not reached an agent: its claim is released to the queue's head,
    // where it waits, auto-run being off.
    const queue = sub.view!.sessions[0]!.queue;
    expect(queue).toMatchObject({ autoRun: false, capacity: 10 });
    expect(queue.entries.map((e) => e.promptId)).toEqual([running.promptId]);
    expect(running.decision.outcome).toBe('admitted');
    const ops = server.received.map((m) => m.op);
    expect(ops).toEqual(
      expect.arrayContaining(['queue.auto_run', 'queue.cancel', 'session.cancel']),
    );
  });

  it('a refused token fails connect with unauthorized and is not retried', async () => {
    const err = await client.connect(server.url, 'wrong').catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'unauthorized' });
    // Give a retry every chance to happen: a round trip on a good connection.
    const other = new BatonClient();
    await other.connect(server.url, TOKEN);
    await other.ping();
    await other.close();
    expect(server.upgrades.length).toBe(2);
  });

  it('an unreachable server fails the first connect (unless asked to retry)', async () => {
    const url = server.url;
    await server.close();
    const err = await client.connect(url, TOKEN).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'unavailable' });
  });

  it('drops a silent connection after the heartbeat timeout and reconnects', async () => {
    client = new BatonClient({ heartbeatMs: 100, backoff: { initialMs: 10, maxMs: 20 } });
    readySession();
    server.muteNewConnections = true;
    await client.connect(server.url, TOKEN);
    const sub = client.subscribe('t1');
    const reconnected = client.next('open', (e) => e.reconnected);
    await waitFor(() => server.received.some((m) => m.op === 'ping'), 'condition');
    server.muteNewConnections = false;
    await reconnected;
    expect((await sub.ready).seq).toBe(server.view('t1').seq);
  });

  it('a session subscription applies its session’s updates across the task’s seqs', async () => {
    readySession();
    server.act('t1', (o) => o.execution('s2', 'e2', 1).start(GENERIC_CAPS));
    await client.connect(server.url, TOKEN);
    const sub = client.subscribe('t1', { sessionId: 's1' });
    await sub.ready;
    expect(sub.view!.sessions.map((s) => s.sessionId)).toEqual(['s1']);
    await client.prompt({ taskId: 't1', sessionId: 's2', text: 'other session' });
    await client.prompt({ taskId: 't1', sessionId: 's1', text: 'mine' });
    await waitFor(() => sub.view!.sessions[0]!.activity.state === 'running', 'condition');
    const full = server.view('t1');
    expect(sub.view!.sessions).toEqual(full.sessions.filter((s) => s.sessionId === 's1'));
    // Reconnect: it resumes from the seq it reached, and gets nothing of s2's.
    const reconnected = client.next('open', (e) => e.reconnected);
    server.terminateAll();
    await reconnected;
    await waitFor(() => sub.state === 'live', 'condition');
    expect(sub.seq).toBe(full.seq);
  });

  it('tries a rate-limited subscription and prompt again; refuses oversized ones itself', async () => {
    readySession();
    await client.connect(server.url, TOKEN);
    server.rateLimitNext = 2;
    const sub = client.subscribe('t1');
    const d = client.prompt({ taskId: 't1', sessionId: 's1', text: 'x' });
    expect((await sub.ready).taskId).toBe('t1');
    expect((await d).decision.outcome).toBe('admitted');
    expect(server.rateLimitNext).toBe(0);
    const long = await client
      .prompt({ taskId: 't1', sessionId: 's1', text: 'x'.repeat(100_001) })
      .catch((e: unknown) => e);
    expect(long).toMatchObject({ code: 'prompt_too_long', path: 'text' });
    const big = await client
      .prompt({ taskId: 't1', sessionId: 's1', text: '€'.repeat(90_000) })
      .catch((e: unknown) => e);
    expect(big).toMatchObject({ code: 'message_too_large' });
    expect(prompts('t1')).toHaveLength(1 + 1); // the rate-limited try and the one that got through
  });

  it('stops on a token that expired while connected instead of redialling it', async () => {
    await client.connect(server.url, TOKEN);
    const errors: BatonError[] = [];
    client.on('error', (e) => errors.push(e));
    server.closeAll(1008, 'token expired');
    await waitFor(() => errors.length === 1, 'condition');
    expect(errors[0]!.code).toBe('unauthorized');
    expect(client.connected).toBe(false);
    expect(server.upgrades).toHaveLength(1);
  });

  it('skips an update type it does not know (a newer server), keeping the sequence', async () => {
    readySession();
    await client.connect(server.url, TOKEN);
    const sub = client.subscribe('t1');
    const view = await sub.ready;
    const future = {
      v: SCHEMA_VERSION,
      taskId: 't1',
      seq: view.seq + 1,
      type: 'session.mood',
      data: {},
    };
    server.sendUpdate(future as unknown as Update);
    await waitFor(() => sub.seq === view.seq + 1, 'condition');
    expect(sub.view).toEqual({ ...view, seq: view.seq + 1 });
  });

  it('works with an injected WebSocket constructor and the token in the query (the browser path)', async () => {
    client = new BatonClient({ WebSocket: WebSocket as never });
    await client.connect(server.url, TOKEN);
    await client.ping();
    expect(client.connected).toBe(true);
    expect(server.upgrades.at(-1)).toEqual({ url: `/ws?token=${TOKEN}`, authorization: undefined });
  });

  it('in Node with ws, sends the token as a bearer header, not in the URL', async () => {
    await client.connect(server.url, TOKEN);
    expect(server.upgrades.at(-1)).toEqual({ url: '/ws', authorization: `Bearer ${TOKEN}` });
  });

  it('close() rejects what is still waiting and stops reconnecting', async () => {
    const { decided: p } = await promptTheServerSwallows('never answered');
    const outcome = p.catch((e: unknown) => e);
    await client.close();
    expect(await outcome).toMatchObject({ code: 'closed' });
    expect(client.connected).toBe(false);
    await waitFor(() => server.connections === 0, 'condition');
  });
});
