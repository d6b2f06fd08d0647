// The AHP chat channel, driven by a client that knows AHP and nothing of Baton: JSON-RPC 2.0,
// version negotiation, a chat snapshot carrying backgroundWork, then chat/backgroundWorkSet and
// chat/backgroundWorkRemoved actions whose serverSeq only grows, unknown kinds kept as they came.
import { taskKey, type Capabilities } from '@baton/protocol';
import { Client, FakeWorker, startStack, tokenFor, waitFor, type Stack } from '@baton/testing';

jest.setTimeout(60_000);

let stack: Stack;
let url: string;
const tok = tokenFor('ahp-tenant');
/** The task key below the gateway of the tenant's task id. */
const K = (taskId: string) => taskKey('ahp-tenant', taskId);
const ATTESTING: Capabilities = {
  agent: { name: 'claude-agent-acp' },
  dialect: 'claude',
  promptQueueing: true,
  handoff: false,
  attestedKinds: ['shell', 'subagent'],
  unambiguousCompletionKinds: [],
};

beforeAll(async () => {
  stack = await startStack({ gateways: 1, projectors: 1 });
  url = stack.gateways[0]!.wsUrl;
});
afterAll(() => stack?.stop());

type Json = Record<string, unknown>;
type Work = { id: string; [k: string]: unknown };

/** AHP 1.0.0's chat reducer for backgroundWork, as an AHP client has it (no Baton code). */
function reduce(state: { backgroundWork?: Work[] }, action: Json): { backgroundWork?: Work[] } {
  if (action.type === 'chat/backgroundWorkSet') {
    const work = action.work as Work;
    const list = state.backgroundWork ?? [];
    const i = list.findIndex((w) => w.id === work.id);
    return {
      ...state,
      backgroundWork: i < 0 ? [...list, work] : list.map((w, j) => (j === i ? work : w)),
    };
  }
  if (action.type === 'chat/backgroundWorkRemoved') {
    const list = state.backgroundWork;
    if (!list?.some((w) => w.id === action.id)) return state;
    return { ...state, backgroundWork: list.filter((w) => w.id !== action.id) };
  }
  return state; // unknown actions (Baton's x- ones included) are no-ops
}

const actionsOf = (c: Client, channel: string) =>
  c.messages
    .filter((m) => m.method === 'action' && (m.params as Json).channel === channel)
    .map((m) => m.params as Json);

describe('AHP chat channel', () => {
  it('negotiates the version: the highest offered in a supported range; none ⇒ -32005 and close', async () => {
    const c = await Client.connect(url, tok, '/ahp');
    expect((await c.rpc('ping')).result).toEqual({});
    expect((await c.rpc('subscribe', { channel: 'ahp-chat:/t/s' })).error).toMatchObject({
      code: -32600,
    });
    const init = await c.rpc('initialize', {
      protocolVersions: ['0.9.0', '1.3.0', '2.0.0'],
      clientId: 'c1',
    });
    expect(init.result).toMatchObject({ protocolVersion: '1.3.0', serverSeq: 0, snapshots: [] });
    expect(
      (await c.rpc('initialize', { protocolVersions: ['1.0.0'], clientId: 'c1' })).error,
    ).toMatchObject({
      code: -32600,
    });
    const bad = await Client.connect(url, tok, '/ahp');
    expect(
      (await bad.rpc('initialize', { protocolVersions: ['1.0'], clientId: 'c2' })).error,
    ).toMatchObject({
      code: -32602,
    });
    const old = await Client.connect(url, tok, '/ahp');
    const r = await old.rpc('initialize', { protocolVersions: ['2.0.0', '0.8.0'], clientId: 'c3' });
    expect(r.error).toMatchObject({
      code: -32005,
      data: { supportedVersions: ['1.0.0', '0.9.0'] },
    });
    await waitFor(() => old.closed, 'the close after -32005');
    await Promise.all([c.close(), bad.close()]);
  });

  it('follows a session’s background work: snapshot, then Set/Removed with a growing serverSeq', async () => {
    const taskId = 'ahp/task 1';
    const channel = `ahp-chat:/${encodeURIComponent(taskId)}/s1`;
    // The session exists (its execution started): a chat Baton does not have is -32008.
    const w = new FakeWorker(stack.store, K(taskId), 's1');
    await w.start(ATTESTING);
    await waitFor(
      async () =>
        (
          await fetch(
            `${stack.gateways[0]!.url}/v1/tasks/${encodeURIComponent(taskId)}/sessions/s1`,
            { headers: { authorization: `Bearer ${tok}` } },
          )
        ).status === 200,
      'the session to exist',
    );
    const c = await Client.connect(url, tok, '/ahp');
    const init = await c.rpc('initialize', {
      protocolVersions: ['1.0.0'],
      clientId: 'ide',
      initialSubscriptions: [channel],
    });
    const [snapshot] = (init.result as { snapshots: Json[] }).snapshots;
    expect(snapshot).toMatchObject({ resource: channel });
    // The session exists, so its inventory is known: [] (absent would mean none published yet).
    expect((snapshot!.state as Json).backgroundWork).toEqual([]);
    expect(snapshot!.state).toMatchObject({ resource: channel, status: 1, turns: [] });

    await w.fact('background.started', {
      attested: true,
      toolCallId: 'tool-1',
      work: {
        kind: 'shell',
        id: 'shell-1',
        label: 'Run tests',
        command: 'npm test',
        terminal: 'ahp-terminal:/t1',
        startedAt: '2026-11-30T00:00:00.000Z',
        _meta: { 'vscode.copilot.shellAttachment': 'detached' },
      },
    });
    await w.fact('background.started', {
      attested: true,
      work: {
        kind: 'subagent',
        id: 'subagent-1',
        label: 'Review',
        chat: 'ahp-chat:/sub/1',
        startedAt: '2026-11-30T00:01:00.000Z',
      },
    });
    const future = {
      kind: 'futureKind',
      id: 'future-1',
      label: 'Start review',
      startedAt: '2026-11-30T00:02:00.000Z',
      target: 'reviewer',
      nested: { deep: [1, 2] },
    };
    await w.fact('background.started', { attested: false, work: future });
    await w.fact('background.ended', { workId: 'shell-1', status: 'completed' });

    await waitFor(
      () =>
        actionsOf(c, channel).some((a) => (a.action as Json).type === 'chat/backgroundWorkRemoved'),
      'the removal',
    );
    const envelopes = actionsOf(c, channel);
    // serverSeq: the host's, only growing, every one above the snapshot's fromSeq.
    const seqs0 = envelopes.map((e) => e.serverSeq as number);
    expect(seqs0).toEqual([...seqs0].sort((a, b) => a - b));
    expect(new Set(seqs0).size).toBe(seqs0.length);
    expect(seqs0[0]).toBeGreaterThan(snapshot!.fromSeq as number);
    expect(envelopes.every((e) => e.origin === undefined)).toBe(true);
    const bw = envelopes
      .map((e) => e.action as Json)
      .filter((a) => String(a.type).startsWith('chat/'));
    expect(bw.map((a) => [a.type, (a.work as Json | undefined)?.id ?? a.id])).toEqual([
      ['chat/backgroundWorkSet', 'shell-1'],
      ['chat/backgroundWorkSet', 'subagent-1'],
      ['chat/backgroundWorkSet', 'future-1'],
      ['chat/backgroundWorkRemoved', 'shell-1'],
    ]);
    // Provider fields ride in _meta; the unknown kind arrives exactly as the worker reported it.
    expect((bw[0]!.work as Json)._meta).toEqual({ 'vscode.copilot.shellAttachment': 'detached' });
    expect(bw[2]!.work).toEqual(future);
    // Baton's own actions only under x- names.
    for (const e of envelopes) {
      const type = String((e.action as Json).type);
      expect(type.startsWith('chat/') || type.startsWith('x-baton/')).toBe(true);
    }
    // A client that folds snapshot + actions with AHP's reducer has the session's list.
    const folded = envelopes.reduce(
      (s, e) => reduce(s, e.action as Json),
      snapshot!.state as { backgroundWork?: Work[] },
    );
    const rest = await fetch(
      `${stack.gateways[0]!.url}/v1/tasks/${encodeURIComponent(taskId)}/sessions/s1`,
      {
        headers: { authorization: `Bearer ${tok}` },
      },
    );
    const session = (await rest.json()) as { backgroundWork: Work[] };
    expect(folded.backgroundWork).toEqual(session.backgroundWork);
    expect(session.backgroundWork.map((x) => x.id)).toEqual(['subagent-1', 'future-1']);

    // A late subscriber gets the same list in its snapshot, and reconnect gives snapshots too.
    const late = await Client.connect(url, tok, '/ahp');
    await late.rpc('initialize', { protocolVersions: ['1.0.0'], clientId: 'late' });
    const sub = (await late.rpc('subscribe', { channel })).result as { snapshot: Json };
    expect((sub.snapshot.state as Json).backgroundWork).toEqual(session.backgroundWork);
    const re = (
      await late.rpc('reconnect', {
        clientId: 'late',
        lastSeenServerSeq: 0,
        subscriptions: [channel],
      })
    ).result as Json;
    expect(re.type).toBe('snapshot');
    expect(((re.snapshots as Json[])[0]!.state as Json).backgroundWork).toEqual(
      session.backgroundWork,
    );

    // After unsubscribe (a notification: no answer), the chat's actions stop for that client.
    const other = 'ahp-chat:/ahp-other/s1';
    c.send({ jsonrpc: '2.0', method: 'unsubscribe', params: { channel } });
    const o = new FakeWorker(stack.store, K('ahp-other'), 's1');
    await o.start(ATTESTING);
    await waitFor(
      async () => 'result' in (await c.rpc('subscribe', { channel: other })),
      'the other session to exist',
    );
    const before = actionsOf(c, channel).length;
    await w.fact('background.ended', { workId: 'subagent-1', status: 'completed' });
    await o.fact('background.started', {
      attested: true,
      work: {
        kind: 'shell',
        id: 'x',
        label: 'x',
        command: 'x',
        startedAt: '2026-11-30T00:00:00.000Z',
      },
    });
    await waitFor(
      () => actionsOf(c, other).some((a) => (a.action as Json).type === 'chat/backgroundWorkSet'),
      'the other chat',
    );
    await waitFor(
      () =>
        actionsOf(late, channel).some(
          (a) => (a.action as Json).type === 'chat/backgroundWorkRemoved',
        ),
      'the late subscriber to see the removal',
    );
    expect(actionsOf(c, channel)).toHaveLength(before);
    const seqs = c.messages
      .filter((m) => m.method === 'action')
      .map((m) => (m.params as Json).serverSeq as number);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    await Promise.all([c.close(), late.close()]);
  });
});
