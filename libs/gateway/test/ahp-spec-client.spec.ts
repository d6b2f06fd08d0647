// What an AHP client written from the specification sends, and what the spec says it must get
// back, against real gateways, projector and Redis: errors as the spec types them, reconnecting
// on the same socket after a re-initialize, and a reconnect answer that carries what was missed.
import {
  Client,
  FakeWorker,
  liveWorker,
  reduce,
  shellStarted,
  waitFor,
  ahpStack,
} from '@baton/testing';

jest.setTimeout(90_000);

const TENANT = 'spec-client';
const ahp = ahpStack(TENANT);
const { tok, K } = ahp;
type Json = Record<string, unknown>;

/** Sends one raw JSON-RPC request and waits for the response carrying `id`. */
async function raw(c: Client, id: unknown, method: string, params: unknown): Promise<Json> {
  const from = c.messages.length;
  c.send({ jsonrpc: '2.0', id, method, params });
  return c.next((m) => 'error' in m || 'result' in m, `the answer to ${method}`, from);
}

describe('errors as the spec types them', () => {
  it('AuthRequired carries data.resources: the protected resource metadata to authenticate for', async () => {
    const c = await Client.connect(ahp.A, undefined, '/ahp');
    await ahp.initialize(c, 'anon-spec');
    const agents = (
      (((await c.rpc('subscribe', { channel: 'ahp-root://' })).result as Json).snapshot as Json)
        .state as Json
    ).agents as Json[];
    const advertised = agents[0]!.protectedResources as Json[];
    for (const [method, params] of [
      ['listSessions', { channel: 'ahp-root://' }],
      ['subscribe', { channel: 'ahp-session:/x' }],
      ['authenticate', { channel: 'ahp-root://', resource: 'urn:baton:gateway', token: 'bad' }],
    ] as const) {
      const e = (await c.rpc(method, params)).error as Json;
      expect(e).toMatchObject({ code: -32007 });
      const resources = (e.data as Json).resources as Json[];
      expect(resources).toEqual(advertised);
      expect(resources[0]).toMatchObject({ resource: 'urn:baton:gateway' });
    }
    await c.close();
  });

  it('a cursor the host never issued is InvalidParams, not an empty page', async () => {
    for (const t of ['page-a', 'page-b', 'page-c']) await ahp.stack.store.tenants.add(TENANT, t);
    const c = await Client.connect(ahp.A, tok, '/ahp');
    await ahp.initialize(c, 'pager');
    const first = (await c.rpc('listSessions', { channel: 'ahp-root://', limit: 1 }))
      .result as Json;
    expect(typeof first.nextCursor).toBe('string');
    // What an issued cursor looks like is the host's business: one it did not issue is refused.
    for (const cursor of ['not-a-cursor', Buffer.from('zzz').toString('base64url'), '']) {
      const e = (await c.rpc('listSessions', { channel: 'ahp-root://', cursor })).error as Json;
      expect(e).toMatchObject({ code: -32602, data: { path: 'params.cursor' } });
    }
    // The one it issued still pages on.
    const next = (
      await c.rpc('listSessions', { channel: 'ahp-root://', limit: 1, cursor: first.nextCursor })
    ).result as Json;
    expect((next.items as Json[]).length).toBe(1);
    expect(next.items).not.toEqual(first.items);
    await c.close();
  });

  it('a request id Baton refuses is still echoed, so the client can match the error', async () => {
    const c = await Client.connect(ahp.A, tok, '/ahp');
    const long = 'r'.repeat(300);
    const e = await raw(c, long, 'ping', {});
    expect(e).toMatchObject({ id: long, error: { code: -32600 } });
    const frac = await raw(c, 1.5, 'ping', {});
    expect(frac).toMatchObject({ id: 1.5, error: { code: -32600 } });
    // An id JSON-RPC does not allow at all (an object) cannot be echoed: null, as JSON-RPC says.
    expect(await raw(c, { no: 1 }, 'ping', {})).toMatchObject({
      id: null,
      error: { code: -32600 },
    });
    expect(await raw(c, 'ok', 'ping', {})).toEqual({ jsonrpc: '2.0', id: 'ok', result: {} });
    await c.close();
  });

  it("session summaries' createdAt and modifiedAt are numbers (ms since the epoch), as the spec types them", async () => {
    await liveWorker(ahp.stack.store, K('times'));
    const c = await Client.connect(ahp.A, tok, '/ahp');
    await ahp.initialize(c, 'timer');
    const items = (
      (await c.rpc('listSessions', { channel: 'ahp-root://', limit: 500 })).result as Json
    ).items as Json[];
    const s = items.find((i) => i.resource === 'ahp-session:/times')!;
    expect(typeof s.createdAt).toBe('number');
    expect(typeof s.modifiedAt).toBe('number');
    expect(Number.isSafeInteger(s.modifiedAt)).toBe(true);
    // root/sessionAdded carries the same type.
    const w2 = new FakeWorker(ahp.stack.store, K('times-2'), 's1');
    await w2.start();
    const added = await c.next(
      (m) =>
        m.method === 'root/sessionAdded' &&
        ((m.params as Json).summary as Json).resource === 'ahp-session:/times-2',
      'root/sessionAdded',
    );
    const summary = (added.params as Json).summary as Json;
    expect(typeof summary.createdAt).toBe('number');
    expect(typeof summary.modifiedAt).toBe('number');
    await c.close();
  });
});

describe('reconnect never lists a live, permitted chat as missing', () => {
  it('a client that re-initialized, then reconnects on the same socket, gets its chat back', async () => {
    const w = await liveWorker(ahp.stack.store, K('reinit'));
    const chat = 'ahp-chat:/reinit/s1';
    const first = await Client.connect(ahp.A, tok, '/ahp');
    const had = (
      ((await ahp.initialize(first, 'reinit', ['ahp-root://', chat])).result as Json)
        .snapshots as Json[]
    )[1]!;
    expect(had.resource).toBe(chat);
    await first.close();
    // It starts over (initialize with the root only), then, on that socket, reconnects with the
    // subscriptions it keeps — the chat among them, as the spec's reconnect lets it.
    const c = await Client.connect(ahp.A, tok, '/ahp');
    const seq = ((await ahp.initialize(c, 'reinit', ['ahp-root://'])).result as Json)
      .serverSeq as number;
    const res = (
      await c.rpc('reconnect', {
        channel: 'ahp-root://',
        clientId: 'reinit',
        lastSeenServerSeq: seq,
        subscriptions: ['ahp-root://', chat],
      })
    ).result as Json;
    // What the client held of the chat is not in the window: it gets it afresh, never `missing`.
    expect(res.missing ?? []).not.toContain(chat);
    expect(res.type).toBe('snapshot');
    const snap = (res.snapshots as Json[]).find((s) => s.resource === chat)!;
    expect(snap.state).toMatchObject({ resource: chat, turns: [] });
    // And it follows the chat from there.
    await w.fact('background.started', shellStarted('rw', 'rw', '2026-12-01T00:00:00.000Z'));
    await c.next(
      (m) =>
        m.method === 'action' &&
        (m.params as Json).channel === chat &&
        ((m.params as Json).action as Json).type === 'chat/backgroundWorkSet',
      'the chat to go on',
    );
    await c.close();
    // A chat that does not exist is what `missing` is for; the live one beside it replays.
    const d = await Client.connect(ahp.A, tok, '/ahp');
    const at = ((await ahp.initialize(d, 'reinit-2', [chat])).result as Json).serverSeq as number;
    const gone = 'ahp-chat:/reinit/no-such-session';
    expect(
      (
        await d.rpc('reconnect', {
          clientId: 'reinit-2',
          lastSeenServerSeq: at,
          subscriptions: [chat, gone],
        })
      ).result,
    ).toMatchObject({ type: 'replay', missing: [gone] });
    await d.close();
  });
});

describe('reconnect returns what was missed, in its response', () => {
  it('a turn that ended and work that started while the client was away are in the replay', async () => {
    const taskId = 'away';
    const chat = 'ahp-chat:/away/s1';
    const session = 'ahp-session:/away';
    const w = await liveWorker(ahp.stack.store, K(taskId));
    const a = await Client.connect(ahp.A, tok, '/ahp');
    const snaps = ((await ahp.initialize(a, 'away-client', [session, chat])).result as Json)
      .snapshots as Json[];
    const ws = await Client.connect(ahp.A, tok, '/ws');
    await ws.request({ op: 'prompt', taskId, sessionId: 's1', text: 'go', idempotencyKey: 'go' });
    await waitFor(
      () => ahp.envelopes(a, chat).some((e) => (e.action as Json).type === 'chat/turnStarted'),
      'the turn to start',
    );
    // What the client has when its connection drops.
    let s = snaps.find((x) => x.resource === chat)!.state as Json;
    for (const e of ahp.envelopes(a, chat)) s = reduce(s, e.action as Json);
    const lastSeen = Math.max(
      ...a.messages
        .filter((m) => m.method === 'action')
        .map((m) => (m.params as Json).serverSeq as number),
    );
    const turnId = (s.activeTurn as Json).id;
    await a.close();

    // While it is away: the turn runs, starts a shell, and ends.
    const promptId = (await ahp.stack.store.readTask(K(taskId), '0-0')).items
      .map((i) => i.entry as unknown as Json)
      .find((e) => e.type === 'prompt.submit')!.data as Json;
    await w.fact('prompt.dispatched', { promptId: promptId.promptId, admissionGeneration: 1 });
    await w.fact('background.started', shellStarted('w1', 'w1', '2026-12-01T00:00:00.000Z'));
    await w.fact('turn.ended', { admissionGeneration: 1, stopReason: 'end_turn' });
    await waitFor(async () => {
      const v = (await ahp.stack.store.views.read(K(taskId)))?.sessions[0];
      return v?.activity.runningGeneration === null && v.backgroundWork.length === 1;
    }, 'the projector');

    const b = await Client.connect(ahp.B, tok, '/ahp');
    const res = (
      await b.rpc('reconnect', {
        channel: 'ahp-root://',
        clientId: 'away-client',
        lastSeenServerSeq: lastSeen,
        subscriptions: [session, chat],
      })
    ).result as Json;
    expect(res).toMatchObject({ type: 'replay', missing: [] });
    const actions = res.actions as Json[];
    const seqs = actions.map((e) => e.serverSeq as number);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    for (const q of seqs) expect(q).toBeGreaterThan(lastSeen);
    // The reply alone brings the client to what happened: the turn ended, the shell runs.
    for (const e of actions.filter((x) => x.channel === chat)) s = reduce(s, e.action as Json);
    expect(s.activeTurn).toBeUndefined();
    expect((s.turns as Json[]).map((t) => t.id)).toContain(turnId);
    expect(((s.backgroundWork as Json[]) ?? []).map((x) => x.id)).toEqual(['w1']);
    // The session's chat catalog is told the chat is idle again, in the reply too.
    expect(
      actions.some(
        (e) =>
          e.channel === session &&
          (e.action as Json).type === 'session/chatUpdated' &&
          ((e.action as Json).changes as Json).status === 1,
      ),
    ).toBe(true);
    // Whatever follows is numbered after the reply.
    await w.fact('background.ended', { workId: 'w1', status: 'completed' });
    const after = await b.next(
      (m) =>
        m.method === 'action' &&
        (m.params as Json).channel === chat &&
        ((m.params as Json).action as Json).type === 'chat/backgroundWorkRemoved',
      'the work to end',
    );
    expect((after.params as Json).serverSeq as number).toBeGreaterThan(Math.max(...seqs));
    // Nothing the reply carried is sent again.
    expect(ahp.envelopes(b, chat).map((e) => (e.action as Json).type)).not.toContain(
      'chat/turnComplete',
    );
    await Promise.all([b.close(), ws.close()]);
  });
});
