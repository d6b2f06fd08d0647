// AHP 1.0.0 conformance, written from the specification (not from Baton's docs): a client that
// knows AHP and nothing of Baton, doing what VS Code's agent-host client does.
import { SCHEMA_VERSION, type StreamEntry } from '@baton/protocol';
import {
  reduce,
  GENERIC_CAPS,
  Client,
  FakeWorker,
  liveWorker,
  shellStarted,
  tokenFor,
  waitFor,
  ahpStack,
} from '@baton/testing';

jest.setTimeout(90_000);

const TENANT = 'conf-tenant';
const ahp = ahpStack(TENANT);
const { tok, K } = ahp;
type Json = Record<string, unknown>;

/** Drops undefined values and `_meta` (Baton's x- extension, moved by x- actions only). */
const ahpPart = (s: Json): Json => {
  const { _meta: _, ...rest } = JSON.parse(JSON.stringify(s)) as Json;
  return rest;
};

/** The handshake as VS Code sends it. */
const init = (c: Client, clientId: string, subs?: string[]) =>
  ahp.initialize(c, clientId, subs, { name: 'Visual Studio Code', version: '1.107.0' });

async function readTypes(key: string): Promise<string[]> {
  return (await ahp.stack.store.readTask(key, '0-0')).items.map((i) => i.entry.type);
}

/** A worker double hosting session s1 of taskId, once the view has it, and its chat's resource. */
async function liveSession(taskId: string, caps = GENERIC_CAPS) {
  const w = await liveWorker(ahp.stack.store, K(taskId), 's1', caps);
  return { w, chat: `ahp-chat:/${taskId}/s1` };
}

/** The worker double takes prompt run-1 (the turn {@link turnStarted} started), seen in the stream. */
async function dispatchRun1(w: FakeWorker, taskId: string) {
  const entries = (await ahp.stack.store.readTask(K(taskId), '0-0')).items;
  const p = entries.find(
    (i) => i.entry.type === 'prompt.submit' && (i.entry.data as Json).idempotencyKey === 'run-1',
  )!.entry.data as Json;
  await w.fact('prompt.dispatched', { promptId: p.promptId, admissionGeneration: 1 });
  await waitFor(async () => (await readTypes(K(taskId))).includes('prompt.dispatched'), 'dispatch');
}

/** A user's message, as an AHP client sends one. */
const msg = (text: string) => ({ text, origin: { kind: 'user' } });

/** Whether the client was sent an action on chat that `is` (the action, and its envelope). */
const wasSent = (c: Client, chat: string, is: (action: Json, envelope: Json) => boolean) =>
  ahp.envelopes(c, chat).some((e) => is(e.action as Json, e));

/** A client's optimistic start of a turn with a user's message. */
const turnStart = (turnId: string, text: string) => ({
  type: 'chat/turnStarted',
  turnId,
  startedAt: new Date().toISOString(),
  message: msg(text),
});

/**
 * A client subscribed to the chat of session s1 (a {@link liveSession}), that has started turn
 * run-1 there (accepted): the start of the tests of what a busy chat does.
 */
async function turnStarted(taskId: string, clientId: string) {
  const chat = `ahp-chat:/${taskId}/s1`;
  const c = await Client.connect(ahp.A, tok, '/ahp');
  const snap = (((await init(c, clientId, [chat])).result as Json).snapshots as Json[])[0]!;
  const { send, answer } = ahp.dispatcher(c, chat);
  send(1, turnStart('run-1', 'run'));
  expect(((await answer(1)).params as Json).rejectionReason).toBeUndefined();
  return { c, snap, send, answer };
}

describe('AHP host conformance', () => {
  it('handshake as VS Code sends it: reconnect first (-32008 when unknown), then initialize with the root subscription', async () => {
    const c = await Client.connect(ahp.A, tok, '/ahp');
    const re = await c.rpc('reconnect', {
      channel: 'ahp-root://',
      clientId: 'vscode-1',
      lastSeenServerSeq: 12,
      subscriptions: ['ahp-root://'],
    });
    expect(re.error).toMatchObject({ code: -32008 });
    const r = await init(c, 'vscode-1');
    expect(r.error).toBeUndefined();
    const res = r.result as Json;
    expect(res.protocolVersion).toBe('1.0.0');
    expect(typeof res.serverSeq).toBe('number');
    const [root] = res.snapshots as Json[];
    expect(root).toMatchObject({ resource: 'ahp-root://' });
    const agents = (root!.state as Json).agents as Json[];
    expect(agents.length).toBeGreaterThan(0);
    for (const a of agents) expect(a).toMatchObject({ provider: expect.any(String), models: [] });
    // VS Code pushes its config as it connects: root/configChanged is echoed (no rejection); the
    // root has no config, so the spec's reducer changes nothing. Other root actions are rejected.
    const config = { telemetryLevel: 'off', workspaceTrust: { enabled: true, trustedUris: [] } };
    const onRoot = ahp.dispatcher(c, 'ahp-root://');
    const dispatchRoot = onRoot.send;
    const rootAnswer = async (clientSeq: number) => (await onRoot.answer(clientSeq)).params as Json;
    dispatchRoot(1, { type: 'root/configChanged', config });
    const echoed = await rootAnswer(1);
    expect(echoed).toMatchObject({
      channel: 'ahp-root://',
      action: { type: 'root/configChanged', config },
      origin: { clientId: 'vscode-1', clientSeq: 1 },
      serverSeq: expect.any(Number),
    });
    expect(echoed.rejectionReason).toBeUndefined();
    expect(echoed.serverSeq as number).toBeGreaterThan(res.serverSeq as number);
    dispatchRoot(2, { type: 'root/agentsChanged', agents: [] });
    expect((await rootAnswer(2)).rejectionReason).toMatch(/not a client-dispatchable root action/);
    // Spec commands Baton does not serve, and unknown ones: -32601.
    expect((await c.rpc('createSession', { channel: 'ahp-root://' })).error).toMatchObject({
      code: -32601,
    });
    expect((await c.rpc('x-nobody/knows', {})).error).toMatchObject({ code: -32601 });
    await c.close();
  });

  it('a client that cannot put a token on the upgrade authenticates in-protocol', async () => {
    // /ws still refuses an upgrade without a token; /ahp takes it, unauthenticated.
    await expect(Client.connect(ahp.A, undefined, '/ws')).rejects.toThrow(/401/);
    const c = await Client.connect(ahp.A, undefined, '/ahp');
    const r = (await init(c, 'no-url-token')).result as Json;
    const agents = ((r.snapshots as Json[])[0]!.state as Json).agents as Json[];
    const resource = (agents[0]!.protectedResources as Json[])[0]!.resource;
    expect(resource).toBe('urn:baton:gateway');
    // Its config push is answered before it authenticates, too.
    c.send({
      jsonrpc: '2.0',
      method: 'dispatchAction',
      params: {
        channel: 'ahp-root://',
        clientSeq: 1,
        action: { type: 'root/configChanged', config: { telemetryLevel: 'off' } },
      },
    });
    const cfg = await c.next(
      (m) => m.method === 'action' && ((m.params as Json).origin as Json)?.clientSeq === 1,
      'the echo of root/configChanged',
    );
    expect((cfg.params as Json).rejectionReason).toBeUndefined();
    expect((await c.rpc('listSessions', {})).error).toMatchObject({ code: -32007 });
    expect((await c.rpc('subscribe', { channel: 'ahp-session:/x' })).error).toMatchObject({
      code: -32007,
    });
    expect(
      (await c.rpc('authenticate', { channel: 'ahp-root://', resource, token: 'not-a-jwt' })).error,
    ).toMatchObject({ code: -32007 });
    expect(
      (await c.rpc('authenticate', { channel: 'ahp-root://', resource: 'https://x', token: tok }))
        .error,
    ).toMatchObject({ code: -32602 });
    expect(
      (await c.rpc('authenticate', { channel: 'ahp-root://', resource, token: tok })).result,
    ).toEqual({});
    expect((await c.rpc('listSessions', {})).result).toMatchObject({ items: expect.any(Array) });
    // The root it subscribed to before authenticating now follows the tenant's sessions.
    const w = new FakeWorker(ahp.stack.store, K('after-auth'), 's1');
    await w.start();
    await c.next(
      (m) =>
        m.method === 'root/sessionAdded' &&
        ((m.params as Json).summary as Json).resource === 'ahp-session:/after-auth',
      'root/sessionAdded after authenticate',
    );
    // Another tenant's token cannot take the connection over.
    expect(
      (await c.rpc('authenticate', { resource, token: tokenFor('someone-else') })).error,
    ).toMatchObject({ code: -32009 });
    await c.close();
  });

  it('a failed initialize leaves nothing behind: the next initialize on the socket works', async () => {
    const c = await Client.connect(ahp.A, tok, '/ahp');
    const bad = await c.rpc('initialize', { protocolVersions: ['1.0'], clientId: 'x' });
    expect(bad.error).toMatchObject({ code: -32602 });
    expect((await c.rpc('subscribe', { channel: 'ahp-root://' })).error).toMatchObject({
      code: -32600,
    });
    expect((await init(c, 'x')).result).toBeDefined();
    await c.close();
  });

  it('unknown and foreign channels are -32008 with no side effect', async () => {
    await ahp.stack.store.tenants.add('other-tenant', 'theirs');
    const c = await Client.connect(ahp.A, tok, '/ahp');
    await init(c, 'nf');
    for (const channel of [
      'ahp-terminal:/t1',
      'x-unknown://x',
      'ahp-chat:/never-written/s1',
      'ahp-chat:/theirs/s1',
      'ahp-session:/theirs',
      'ahp-session:/never-written',
    ]) {
      expect((await c.rpc('subscribe', { channel })).error).toMatchObject({ code: -32008 });
    }
    expect(await ahp.stack.store.tenants.has(TENANT, 'never-written')).toBe(false);
    expect(await ahp.stack.store.tenants.has(TENANT, 'theirs')).toBe(false);
    await c.close();
  });

  it('listSessions: the tenant’s sessions only, cursor-paginated', async () => {
    for (const t of ['list-a', 'list-b', 'list-c']) await ahp.stack.store.tenants.add('lister', t);
    await ahp.stack.store.tenants.add('not-lister', 'list-z');
    const c = await Client.connect(ahp.A, tokenFor('lister'), '/ahp');
    await init(c, 'lister');
    const p1 = (await c.rpc('listSessions', { channel: 'ahp-root://', limit: 2 })).result as Json;
    expect((p1.items as Json[]).map((i) => i.resource)).toEqual([
      'ahp-session:/list-a',
      'ahp-session:/list-b',
    ]);
    expect(typeof p1.nextCursor).toBe('string');
    const p2 = (
      await c.rpc('listSessions', { channel: 'ahp-root://', limit: 2, cursor: p1.nextCursor })
    ).result as Json;
    expect((p2.items as Json[]).map((i) => i.resource)).toEqual(['ahp-session:/list-c']);
    expect(p2.nextCursor).toBeUndefined();
    await c.close();
  });

  it('follows a session generating → background → idle, with turns, queued messages and rejected actions', async () => {
    const taskId = 'follow';
    const { w, chat } = await liveSession(taskId);
    const c = await Client.connect(ahp.A, tok, '/ahp');
    const r = (await init(c, 'follower', ['ahp-root://', 'ahp-session:/follow', chat]))
      .result as Json;
    const snaps = r.snapshots as Json[];
    expect(snaps.map((s) => s.resource)).toEqual(['ahp-root://', 'ahp-session:/follow', chat]);
    expect(((snaps[1]!.state as Json).chats as Json[]).map((x) => x.resource)).toEqual([chat]);
    const snapshot = snaps[2]!;
    expect(snapshot.state).toMatchObject({ resource: chat, status: 1, turns: [] });
    expect((snapshot.state as Json).activeTurn).toBeUndefined();

    const { send, answer } = ahp.dispatcher(c, chat);
    // A user message: admitted, so its echo (with our origin) is the turn's start.
    send(1, turnStart('turn-1', 'one'));
    const echo = await answer(1);
    expect(echo.params).toMatchObject({
      channel: chat,
      origin: { clientId: 'follower', clientSeq: 1 },
      action: { type: 'chat/turnStarted', turnId: 'turn-1', message: { text: 'one' } },
    });
    expect((echo.params as Json).rejectionReason).toBeUndefined();
    // A second while busy: Baton queues it — the optimistic turn is refused, the message queued.
    send(2, turnStart('turn-2', 'two'));
    const refused = await answer(2);
    expect((refused.params as Json).rejectionReason).toMatch(/queued/);
    await waitFor(
      () => wasSent(c, chat, (a) => a.type === 'chat/pendingMessageSet' && a.id === 'turn-2'),
      'turn-2 in queuedMessages',
    );
    // A server-only action is refused.
    send(3, {
      type: 'chat/backgroundWorkSet',
      work: { kind: 'shell', id: 'x', label: 'x', command: 'x', startedAt: '2026-12-01T00:00:00Z' },
    });
    const serverOnly = await answer(3);
    expect((serverOnly.params as Json).rejectionReason).toMatch(/not a client-dispatchable/);

    // generating → background (turn 1 ends, work keeps running) → idle.
    const view = await ahp.stack.store.views.read(K(taskId));
    expect(view?.sessions[0]?.activity.runningGeneration).toBe(1);
    const promptId = (await waitFor(async () => {
      const entries = await ahp.stack.store.readTask(K(taskId), '0-0');
      const e = entries.items.find(
        (i) =>
          i.entry.type === 'prompt.submit' && (i.entry.data as Json).idempotencyKey === 'turn-1',
      );
      return e && ((e.entry.data as Json).promptId as string);
    }, 'the prompt'))!;
    await w.fact('prompt.dispatched', { promptId, admissionGeneration: 1 });
    await w.fact('background.started', {
      attested: false,
      work: {
        kind: 'shell',
        id: 'sh-1',
        label: 'tests',
        command: 'npm test',
        startedAt: '2026-12-01T00:00:00.000Z',
      },
    });
    await w.fact('turn.ended', { admissionGeneration: 1, stopReason: 'end_turn' });
    await waitFor(
      () =>
        wasSent(
          c,
          chat,
          (a, e) =>
            e.rejectionReason === undefined &&
            a.type === 'chat/turnStarted' &&
            a.turnId === 'turn-2',
        ),
      'turn-2 to start from the queue',
    );
    const v2 = await ahp.stack.store.views.read(K(taskId));
    const gen2 = v2!.sessions[0]!.activity.runningGeneration!;
    const p2 = (await ahp.stack.store.readTask(K(taskId), '0-0')).items.find(
      (i) => i.entry.type === 'prompt.submit' && (i.entry.data as Json).idempotencyKey === 'turn-2',
    )!.entry.data as Json;
    await w.fact('prompt.dispatched', { promptId: p2.promptId, admissionGeneration: gen2 });
    await w.fact('turn.ended', { admissionGeneration: gen2, stopReason: 'end_turn' });
    await w.fact('background.ended', { workId: 'sh-1', status: 'completed' });
    await waitFor(
      () => wasSent(c, chat, (a) => a.type === 'chat/backgroundWorkRemoved'),
      'the work to end',
    );
    await waitFor(
      () =>
        ahp.envelopes(c, chat).filter((e) => (e.action as Json).type === 'chat/turnComplete')
          .length === 2,
      'both turns to complete',
    ).catch((e: Error) => {
      throw new Error(
        `${e.message}: ${JSON.stringify(ahp.envelopes(c, chat).map((x) => [x.action, x.rejectionReason]))}`,
      );
    });

    // Fold what was sent (rejected envelopes are not applied) and check every step.
    const all = ahp.envelopes(c, chat);
    const seqs = all.map((e) => e.serverSeq as number);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(seqs[0]).toBeGreaterThan(snapshot.fromSeq as number);
    let s = snapshot.state as Json;
    const statuses: number[] = [];
    for (const e of all) {
      if (e.rejectionReason !== undefined) continue;
      s = reduce(s, e.action as Json);
      statuses.push(s.status as number);
      // Spec invariants at every step: status agrees with activeTurn and the last turn.
      const busy = s.activeTurn !== undefined;
      expect(((s.status as number) & 8) !== 0).toBe(busy);
    }
    const final = ahpPart(s);
    expect(final.status).toBe(1);
    expect(final.activeTurn).toBeUndefined();
    expect(final.queuedMessages).toBeUndefined();
    expect(final.backgroundWork).toEqual([]);
    expect((final.turns as Json[]).map((t) => [t.id, t.state, (t.message as Json).text])).toEqual([
      ['turn-1', 'complete', 'one'],
      ['turn-2', 'complete', 'two'],
    ]);
    // A new subscriber's snapshot agrees with the folded state (Baton keeps no turn history).
    const late = await Client.connect(ahp.B, tok, '/ahp');
    const ls = ((await init(late, 'late', [chat])).result as Json).snapshots as Json[];
    const fresh = ahpPart(ls[0]!.state as Json);
    expect({ ...fresh, turns: [], modifiedAt: 0 }).toEqual({ ...final, turns: [], modifiedAt: 0 });
    await Promise.all([c.close(), late.close()]);
  });

  it('queued messages and cancellation are answered by their echoes', async () => {
    const taskId = 'cancel';
    const { w, chat } = await liveSession(taskId);
    const { c, snap, send, answer } = await turnStarted(taskId, 'canceller');
    // A queued message while busy: echoed, and it is in queuedMessages.
    send(2, { type: 'chat/pendingMessageSet', kind: 'queued', id: 'q-1', message: msg('later') });
    const set = (await answer(2)).params as Json;
    expect(set.rejectionReason).toBeUndefined();
    expect(set.action).toMatchObject({ type: 'chat/pendingMessageSet', id: 'q-1' });
    // Baton's queue has no reorder: a new order is rejected, the order it has is echoed.
    send(21, { type: 'chat/pendingMessageSet', kind: 'queued', id: 'q-2', message: msg('last') });
    expect(((await answer(21)).params as Json).rejectionReason).toBeUndefined();
    send(22, { type: 'chat/queuedMessagesReordered', order: ['q-2', 'q-1'] });
    expect(((await answer(22)).params as Json).rejectionReason).toMatch(/cannot be reordered/);
    send(23, { type: 'chat/queuedMessagesReordered', order: ['q-1', 'q-2'] });
    expect(((await answer(23)).params as Json).rejectionReason).toBeUndefined();
    send(24, { type: 'chat/pendingMessageRemoved', kind: 'queued', id: 'q-2' });
    expect(((await answer(24)).params as Json).rejectionReason).toBeUndefined();
    // Removing it: the echo is the removal.
    send(3, { type: 'chat/pendingMessageRemoved', kind: 'queued', id: 'q-1' });
    const removed = (await answer(3)).params as Json;
    expect(removed).toMatchObject({ action: { type: 'chat/pendingMessageRemoved', id: 'q-1' } });
    expect(removed.rejectionReason).toBeUndefined();
    // A steering message the agent cannot take (no steering here): queued, and said so.
    send(4, { type: 'chat/pendingMessageSet', kind: 'steering', id: 's-1', message: msg('steer') });
    expect(((await answer(4)).params as Json).rejectionReason).toMatch(
      /^queued \(busy\): .*steering.* queuedMessages as s-1$/,
    );
    send(40, { type: 'chat/pendingMessageRemoved', kind: 'queued', id: 's-1' });
    expect(((await answer(40)).params as Json).rejectionReason).toBeUndefined();
    // Removing what is not queued is refused.
    send(5, { type: 'chat/pendingMessageRemoved', kind: 'queued', id: 'nope' });
    expect(((await answer(5)).params as Json).rejectionReason).toMatch(/no such queued message/);
    // Cancelling the running turn (the agent has it): the echo is its end, when the agent ends it.
    await dispatchRun1(w, taskId);
    send(6, { type: 'chat/turnCancelled', turnId: 'run-1', duration: 1 });
    await waitFor(
      async () => (await readTypes(K(taskId))).includes('turn.cancel_requested'),
      'the cancel request',
    ).catch(async (e: Error) => {
      const last = JSON.stringify(ahp.envelopes(c, chat).slice(-3));
      throw new Error(`${e.message}: ${JSON.stringify(await readTypes(K(taskId)))} ${last}`);
    });
    await w.fact('turn.ended', { admissionGeneration: 1, stopReason: 'cancelled' });
    const ended = (await answer(6)).params as Json;
    expect(ended.rejectionReason).toBeUndefined();
    expect((ended.action as Json).turnId).toBe('run-1');
    expect(['chat/turnCancelled', 'chat/turnComplete']).toContain((ended.action as Json).type);
    // Folding everything accepted from the snapshot: no active turn, nothing queued.
    let s = snap.state as Json;
    for (const e of ahp.envelopes(c, chat))
      if (e.rejectionReason === undefined) s = reduce(s, e.action as Json);
    expect(s.activeTurn).toBeUndefined();
    expect(s.queuedMessages).toBeUndefined();
    expect((s.turns as Json[]).map((t) => t.id)).toEqual(['run-1']);
    await c.close();
  });

  it('a steering message is a steer of the running turn: echoed, the chat’s steeringMessage, and the next turn when that turn ends', async () => {
    const taskId = 'steer';
    const { w, chat } = await liveSession(taskId, { ...GENERIC_CAPS, promptQueueing: true });
    await ahp.stack.store.append(K(taskId), [
      {
        v: SCHEMA_VERSION,
        taskId: K(taskId),
        sessionId: 's1',
        writer: { role: 'gateway', instance: 'steer-config', seq: 1 },
        type: 'session.configure',
        data: { commandId: 'cfg-steer', steering: true },
      } as StreamEntry,
    ]);
    const { c, snap, send, answer } = await turnStarted(taskId, 'steerer');
    await dispatchRun1(w, taskId);
    send(2, {
      type: 'chat/pendingMessageSet',
      kind: 'steering',
      id: 'st-1',
      message: msg('tests'),
    });
    const echo = (await answer(2)).params as Json;
    expect(echo.rejectionReason).toBeUndefined();
    expect(echo.action).toMatchObject({
      type: 'chat/pendingMessageSet',
      kind: 'steering',
      id: 'st-1',
    });
    // Withdrawing it is refused: Baton has delivered it.
    send(3, { type: 'chat/pendingMessageRemoved', kind: 'steering', id: 'st-1' });
    expect(((await answer(3)).params as Json).rejectionReason).toMatch(/cannot be withdrawn/);
    // The steered turn ends: the steer carries on as the next turn, out of steeringMessage.
    await w.fact('turn.ended', { admissionGeneration: 1, stopReason: 'end_turn' });
    await c.next(
      (m) =>
        m.method === 'action' &&
        ((m.params as Json).action as Json).type === 'chat/turnStarted' &&
        ((m.params as Json).action as Json).turnId === 'st-1',
      'the steer’s turn',
    );
    let s = snap.state as Json;
    for (const e of ahp.envelopes(c, chat))
      if (e.rejectionReason === undefined) s = reduce(s, e.action as Json);
    expect(s.steeringMessage).toBeUndefined();
    expect((s.activeTurn as Json).id).toBe('st-1');
    expect((s.turns as Json[]).map((t) => t.id)).toEqual(['run-1']);
    // The host agrees: a new subscriber's snapshot has a turn running and no steering message
    // (joining mid-turn, it knows the turn by its generation: `s1#2`).
    const late = await Client.connect(ahp.A, tok, '/ahp');
    const ls = ((await init(late, 'late-steer', [chat])).result as Json).snapshots as Json[];
    const fresh = ls[0]!.state as Json;
    expect(fresh.activeTurn).toBeDefined();
    expect(fresh.steeringMessage).toBeUndefined();
    await Promise.all([c.close(), late.close()]);
  });

  it('root notifications and the session channel follow the tenant’s sessions and their chats', async () => {
    const c = await Client.connect(ahp.A, tok, '/ahp');
    await init(c, 'watcher');
    const notif = (method: string, pred: (p: Json) => boolean = () => true) =>
      c.next((m) => m.method === method && pred(m.params as Json), method);
    const w = new FakeWorker(ahp.stack.store, K('notify'), 's1');
    await w.start();
    const added = await notif(
      'root/sessionAdded',
      (p) => (p.summary as Json).resource === 'ahp-session:/notify',
    );
    expect(added.params).toMatchObject({
      channel: 'ahp-root://',
      summary: { title: 'notify', status: 1 },
    });
    const sub = (await c.rpc('subscribe', { channel: 'ahp-session:/notify' })).result as Json;
    const snap = sub.snapshot as Json;
    expect(snap.state).toMatchObject({ lifecycle: 'ready', defaultChat: 'ahp-chat:/notify/s1' });
    const w2 = new FakeWorker(ahp.stack.store, K('notify'), 's2');
    await w2.start();
    const chatAdded = await c.next(
      (m) =>
        m.method === 'action' && ((m.params as Json).action as Json).type === 'session/chatAdded',
      'session/chatAdded',
    );
    expect(chatAdded.params).toMatchObject({
      channel: 'ahp-session:/notify',
      action: { summary: { resource: 'ahp-chat:/notify/s2', title: 's2', status: 1 } },
    });
    expect((chatAdded.params as Json).serverSeq as number).toBeGreaterThan(snap.fromSeq as number);
    // VS Code names itself the session's active client as it opens one: refused, with the reason.
    c.send({
      jsonrpc: '2.0',
      method: 'dispatchAction',
      params: {
        channel: 'ahp-session:/notify',
        clientSeq: 7,
        action: {
          type: 'session/activeClientSet',
          activeClient: { clientId: 'watcher', tools: [], customizations: [] },
        },
      },
    });
    const active = await c.next(
      (m) => m.method === 'action' && ((m.params as Json).origin as Json)?.clientSeq === 7,
      'the answer to session/activeClientSet',
    );
    expect((active.params as Json).rejectionReason).toMatch(/client tools/);
    // A prompt makes the session busy: its summary changes at the root.
    const ws = await Client.connect(ahp.A, tok, '/ws');
    await ws.request({
      op: 'prompt',
      taskId: 'notify',
      sessionId: 's1',
      text: 'go',
      idempotencyKey: 'go-1',
    });
    await notif(
      'root/sessionSummaryChanged',
      (p) => p.session === 'ahp-session:/notify' && ((p.changes as Json).status as number) === 8,
    );
    await Promise.all([c.close(), ws.close()]);
  });

  it('reconnects through another gateway with no gap', async () => {
    const taskId = 'recon';
    const { w, chat } = await liveSession(taskId);
    const a = await Client.connect(ahp.A, tok, '/ahp');
    const r = (await init(a, 'roamer', ['ahp-root://', chat])).result as Json;
    let s = (r.snapshots as Json[])[1]!.state as Json;
    const work = (id: string) => shellStarted(id, id, '2026-12-01T00:00:00.000Z');
    await w.fact('background.started', work('w1'));
    await waitFor(() => ahp.envelopes(a, chat).length > 0, 'the first action');
    const seen = ahp.envelopes(a, chat);
    for (const e of seen) s = reduce(s, e.action as Json);
    const lastSeen = seen.at(-1)!.serverSeq as number;
    await a.close();
    // While away: more work starts, some ends.
    await w.fact('background.started', work('w2'));
    await w.fact('background.ended', { workId: 'w1', status: 'completed' });
    await waitFor(async () => {
      const v = await ahp.stack.store.views.read(K(taskId));
      return v?.sessions[0]?.backgroundWork.map((x) => x.id).join() === 'w2';
    }, 'the projector');
    const b = await Client.connect(ahp.B, tok, '/ahp');
    const re = await b.rpc('reconnect', {
      channel: 'ahp-root://',
      clientId: 'roamer',
      lastSeenServerSeq: lastSeen,
      subscriptions: ['ahp-root://', chat],
    });
    const res = re.result as Json;
    expect(res.type).toBe('replay');
    expect(res.missing).toEqual([]);
    for (const e of res.actions as Json[]) {
      expect(e.serverSeq as number).toBeGreaterThan(lastSeen);
      s = reduce(s, e.action as Json);
    }
    await waitFor(() => {
      let t = s;
      for (const e of ahp.envelopes(b, chat)) t = reduce(t, e.action as Json);
      return ((t.backgroundWork as Json[]) ?? []).map((x) => x.id).join() === 'w2';
    }, 'the client to catch up through gateway B').catch((e: Error) => {
      throw new Error(`${e.message}: ${JSON.stringify(res)} ${JSON.stringify(b.messages)}`);
    });
    const after = ahp.envelopes(b, chat).map((e) => e.serverSeq as number);
    for (const q of after) expect(q).toBeGreaterThan(lastSeen);
    await b.close();
  });

  it('reconnect replays exactly what the client missed, queued prompts whole, and falls back to snapshots when the window is gone', async () => {
    const taskId = 'replay';
    const { chat } = await liveSession(taskId);
    const a = await Client.connect(ahp.A, tok, '/ahp');
    const snap = (((await init(a, 'replayer', [chat])).result as Json).snapshots as Json[])[0]!;
    const big = 'x'.repeat(20_000);
    const ws = await Client.connect(ahp.A, tok, '/ws');
    const prompt = (key: string, text: string) =>
      ws.request({ op: 'prompt', taskId, sessionId: 's1', text, idempotencyKey: key });
    await prompt('busy', 'busy'); // takes the turn: what follows queues
    // (Its text is the transcript's, which this agent-less test has not: the turn starts after a while.)
    await waitFor(
      () => ahp.envelopes(a, chat).some((e) => (e.action as Json).type === 'chat/turnStarted'),
      'the turn to start',
    );
    await prompt('big', big);
    await prompt('small', 'small');
    await waitFor(
      () =>
        ahp.envelopes(a, chat).filter((e) => (e.action as Json).type === 'chat/pendingMessageSet')
          .length === 2,
      'both queued',
    );
    const seen = ahp.envelopes(a, chat);
    // The client saw only up to the turn's start; it missed the queue.
    const cut = seen.findIndex((e) => (e.action as Json).type === 'chat/turnStarted');
    const lastSeen = seen[cut]!.serverSeq as number;
    let s = snap.state as Json;
    for (const e of seen.slice(0, cut + 1)) s = reduce(s, e.action as Json);
    await a.close();
    const b = await Client.connect(ahp.B, tok, '/ahp');
    const res = (
      await b.rpc('reconnect', {
        clientId: 'replayer',
        lastSeenServerSeq: lastSeen,
        subscriptions: [chat],
      })
    ).result as Json;
    expect(res.type).toBe('replay');
    // Exactly the envelopes it was sent after lastSeenServerSeq, as they were sent.
    expect(res.actions).toEqual(seen.slice(cut + 1));
    for (const e of res.actions as Json[]) s = reduce(s, e.action as Json);
    // Whatever follows through B (a queued prompt re-sent whole is an upsert of what it has)
    // leaves the client with Baton's queue, the big prompt's text entire.
    await new Promise((r) => setTimeout(r, 300));
    for (const e of ahp.envelopes(b, chat)) s = reduce(s, e.action as Json);
    expect(
      (s.queuedMessages as Json[]).map((m) => [m.id, ((m.message as Json).text as string).length]),
    ).toEqual([
      ['big', 20_000],
      ['small', 5],
    ]);
    // The turn's id is its Baton prompt id (the one the gateway wrote for the key).
    const submitted = (await ahp.stack.store.readTask(K(taskId))).items
      .map((e) => e.entry as unknown as Json)
      .find((e) => e.type === 'prompt.submit' && (e.data as Json).idempotencyKey === 'busy');
    expect((s.activeTurn as Json).id).toBe((submitted!.data as Json).promptId);
    // A client that saw less than its window holds (it starts at its initialize) gets snapshots.
    const c = await Client.connect(ahp.B, tok, '/ahp');
    const floor = ((await init(c, 'late-replayer', [chat])).result as Json).serverSeq as number;
    expect(floor).toBeGreaterThan(0);
    await c.close();
    const c2 = await Client.connect(ahp.A, tok, '/ahp');
    const old = (
      await c2.rpc('reconnect', {
        clientId: 'late-replayer',
        lastSeenServerSeq: floor - 1,
        subscriptions: [chat],
      })
    ).result as Json;
    expect(old.type).toBe('snapshot');
    const st = (old.snapshots as Json[])[0]!.state as Json;
    expect((st.queuedMessages as Json[]).map((m) => m.id)).toEqual(['big', 'small']);
    await Promise.all([b.close(), c2.close(), ws.close()]);
  });
});
