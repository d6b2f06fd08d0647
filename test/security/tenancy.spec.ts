// Tenant isolation: a token of tenant Y can neither subscribe to, read, prompt nor command tenant
// X's task — on every /ws message type, the /ahp channel and every REST route — and every answer
// is word for word the one for a task that does not exist.
import {
  Client,
  FakeWorker,
  startStack,
  streamLengths,
  token,
  tokenFor,
  waitFor,
  type Stack,
} from '../../apps/gateway/test/support';

jest.setTimeout(60_000);

let stack: Stack;
let ws: string;
let http: string;
const owner = tokenFor('tenant-x');
// Y holds every scope: only tenancy stands between it and X's task.
const intruder = token({ tenant: 'tenant-y', scope: 'read prompt admin' });
const TASK = 'x-private';
const notFound = (taskId: string) => ({ code: 'not_found', message: `task ${taskId} not found` });

beforeAll(async () => {
  stack = await startStack({ gateways: 1, projectors: 1 });
  ws = stack.gateways[0]!.wsUrl;
  http = stack.gateways[0]!.url;
  // X creates its task: a session with an execution and a queued prompt.
  const c = await Client.connect(ws, owner);
  await new FakeWorker(stack.store, TASK, 's1').start();
  for (const key of ['k1', 'k2']) {
    const r = await c.request({
      op: 'prompt',
      taskId: TASK,
      sessionId: 's1',
      text: key,
      idempotencyKey: key,
    });
    expect(r.ok).toBe(true);
  }
  await waitFor(
    async () => (await stack.store.views.read(TASK))?.sessions[0]?.queue.entries.length === 1,
    'the view of X',
  );
  await c.close();
});
afterAll(() => stack?.stop());

type Json = Record<string, unknown>;

describe('tenant isolation', () => {
  it('/ws: every message type about X’s task answers as for an unknown task, and nothing is written', async () => {
    const queued = (await stack.store.views.read(TASK))!.sessions[0]!.queue.entries[0]!.promptId;
    const xWatcher = await Client.connect(ws, owner);
    await xWatcher.request({ op: 'subscribe', taskId: TASK });
    const before = await streamLengths(stack.store, stack.prefix);
    const y = await Client.connect(ws, intruder);
    const ref = { taskId: TASK, sessionId: 's1' };
    const messages: Json[] = [
      { op: 'subscribe', taskId: TASK },
      { op: 'subscribe', taskId: TASK, sessionId: 's1', afterSeq: 0 },
      { op: 'prompt', ...ref, text: 'let me in', idempotencyKey: 'y1' },
      { op: 'queue.list', ...ref },
      { op: 'queue.cancel', ...ref, promptId: queued },
      { op: 'queue.send_now', ...ref, promptId: queued },
      { op: 'queue.auto_run', ...ref, enabled: false },
      { op: 'session.cancel', ...ref },
    ];
    for (const m of messages) {
      const r = await y.request(m);
      expect({ op: m.op, ok: r.ok, error: r.error }).toEqual({
        op: m.op,
        ok: false,
        error: notFound(TASK),
      });
    }
    // The same messages about a task nobody has: the reads answer the same.
    const unknown = await y.request({ op: 'queue.list', taskId: 'nobody-has-it', sessionId: 's1' });
    expect(unknown.error).toEqual(notFound('nobody-has-it'));
    // Unsubscribing tells nothing either: it is a no-op for any task.
    expect((await y.request({ op: 'unsubscribe', taskId: TASK })).result).toEqual({
      taskId: TASK,
      subscribed: false,
    });
    expect(y.messages.filter((m) => m.type === 'snapshot' || m.type === 'update')).toEqual([]);
    expect(await streamLengths(stack.store, stack.prefix)).toEqual(before);
    // X's subscriber saw nothing happen.
    expect(xWatcher.updates(TASK)).toEqual([]);
    await Promise.all([y.close(), xWatcher.close()]);
  });

  it('/ahp: X’s chat is not found, and reconnect leaves it out', async () => {
    const y = await Client.connect(ws, intruder, '/ahp');
    await y.rpc('initialize', { protocolVersions: ['1.0.0'], clientId: 'y' });
    const r = await y.rpc('subscribe', { channel: `ahp-chat:/${TASK}/s1` });
    expect(r.error).toMatchObject({ code: -32008, message: `task ${TASK} not found` });
    const re = await y.rpc('reconnect', {
      clientId: 'y',
      lastSeenServerSeq: 0,
      subscriptions: [`ahp-chat:/${TASK}/s1`],
    });
    expect(re.result).toEqual({ type: 'snapshot', snapshots: [] });
    await y.close();
  });

  it('REST: every route about X’s task is a 404 like an unknown task’s', async () => {
    const before = await streamLengths(stack.store, stack.prefix);
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${http}${path}`, {
        method,
        headers: { authorization: `Bearer ${intruder}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, body: (await res.json()) as Json };
    };
    const s = `/v1/tasks/${TASK}/sessions/s1`;
    const routes: [string, string, unknown?][] = [
      ['GET', `/v1/tasks/${TASK}`],
      ['GET', s],
      ['POST', `${s}/prompts`, { text: 'hi', idempotencyKey: 'y2' }],
      ['GET', `${s}/queue`],
      ['DELETE', `${s}/queue/p1`],
      ['POST', `${s}/queue/p1/send-now`, {}],
      ['PUT', `${s}/queue/auto-run`, { enabled: false }],
      ['POST', `${s}/cancel`, {}],
      ['POST', `${s}/executions`, { profile: 'replay', recording: 'x' }],
    ];
    for (const [method, path, body] of routes) {
      expect({ route: `${method} ${path}`, ...(await call(method, path, body)) }).toEqual({
        route: `${method} ${path}`,
        status: 404,
        body: { error: notFound(TASK) },
      });
    }
    expect(await call('GET', '/v1/tasks/nobody-has-it')).toEqual({
      status: 404,
      body: { error: notFound('nobody-has-it') },
    });
    const list = await call('GET', '/v1/tasks');
    expect(list).toEqual({ status: 200, body: { tasks: [] } });
    expect(await streamLengths(stack.store, stack.prefix)).toEqual(before);
    // X itself reads its task.
    const mine = await fetch(`${http}/v1/tasks`, { headers: { authorization: `Bearer ${owner}` } });
    expect(await mine.json()).toEqual({ tasks: [TASK] });
  });
});
