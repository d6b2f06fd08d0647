// Tenant isolation: task ids are the tenant's own. A token of tenant Y that names X's task id
// reads nothing of X's task — on every /ws message type, the /ahp channel and every REST route,
// each read answering exactly as for a task Y does not have — and its commands go to Y's own task
// of that id, never to X's.
import { Client, restClient, streamLengths, token, waitFor } from '@baton/testing';
import { startWithTaskOfX, tenantX, type OneGateway } from './support';

jest.setTimeout(60_000);

let stack: OneGateway;
// Y holds every scope: only tenancy stands between it and X's task.
const intruder = token({ tenant: 'tenant-y', scope: 'read prompt admin' });
const TASK = 'x-private';
const X_KEY = tenantX.key(TASK);
const notFound = (taskId: string) => ({ code: 'not_found', message: `task ${taskId} not found` });
const emptyView = (taskId: string) => ({
  taskId,
  status: 'active',
  seq: 0,
  activity: { foregroundActivity: null, activeSubagentCount: 0 },
  sessions: [],
});

beforeAll(async () => {
  stack = await startWithTaskOfX(TASK);
});
afterAll(() => stack?.stop());

type Json = Record<string, unknown>;

const call = (method: string, path: string, tok: string, body?: unknown) =>
  restClient(stack.http, tok)(method, path, body);

describe('tenant isolation', () => {
  it('/ws: Y’s reads of X’s task id answer as for a task Y does not have, and write nothing', async () => {
    const xWatcher = await Client.connect(stack.ws, tenantX.token);
    await xWatcher.request({ op: 'subscribe', taskId: TASK });
    const before = await streamLengths(stack.store, stack.prefix);
    const y = await Client.connect(stack.ws, intruder);
    // A subscription is Y's own (empty) task: the same as for an id nobody has.
    for (const taskId of [TASK, 'nobody-has-it']) {
      const from = y.messages.length;
      const r = await y.request({ op: 'subscribe', taskId });
      expect(r.result).toEqual({ taskId, mode: 'snapshot', seq: 0 });
      const snap = y.messages.slice(from).find((m) => m.type === 'snapshot');
      expect(snap).toEqual({ v: 1, type: 'snapshot', resync: false, task: emptyView(taskId) });
    }
    expect(
      (await y.request({ op: 'subscribe', taskId: TASK, sessionId: 's1', afterSeq: 0 })).result,
    ).toEqual({ taskId: TASK, sessionId: 's1', mode: 'resumed', seq: 0 });
    for (const taskId of [TASK, 'nobody-has-it']) {
      const r = await y.request({ op: 'queue.list', taskId, sessionId: 's1' });
      expect(r.error).toEqual(notFound(taskId));
    }
    expect((await y.request({ op: 'unsubscribe', taskId: TASK })).result).toEqual({
      taskId: TASK,
      subscribed: false,
    });
    expect(y.updates()).toEqual([]);
    expect(await streamLengths(stack.store, stack.prefix)).toEqual(before);
    expect(await stack.store.tenants.tasks('tenant-y')).toEqual([]);
    // X's subscriber saw nothing happen.
    expect(xWatcher.updates(TASK)).toEqual([]);
    await Promise.all([y.close(), xWatcher.close()]);
  });

  it('/ahp: X’s chat is not found for Y, and reconnect and initialize leave it out', async () => {
    const y = await Client.connect(stack.ws, intruder, '/ahp');
    const init = await y.rpc('initialize', {
      protocolVersions: ['1.0.0'],
      clientId: 'y',
      initialSubscriptions: [`ahp-chat:/${TASK}/s1`],
    });
    expect(init.result).toMatchObject({ snapshots: [] });
    const r = await y.rpc('subscribe', { channel: `ahp-chat:/${TASK}/s1` });
    expect(r.error).toEqual({
      code: -32008,
      message: `task ${TASK} not found`,
      data: { code: 'not_found' },
    });
    const re = await y.rpc('reconnect', {
      clientId: 'y',
      lastSeenServerSeq: 0,
      subscriptions: [`ahp-chat:/${TASK}/s1`],
    });
    // The host knows Y's client: it replays nothing of X's chat and says it cannot resume it
    // (or, past its window, gives no snapshot of it).
    expect([
      { type: 'replay', actions: [], missing: [`ahp-chat:/${TASK}/s1`] },
      { type: 'snapshot', snapshots: [] },
    ]).toContainEqual(re.result);
    expect(await stack.store.tenants.tasks('tenant-y')).toEqual([]);
    await y.close();
  });

  it('REST: every read of X’s task id is a 404 like an unknown task’s; the list is empty', async () => {
    // X's session has a transcript: Y reads none of it, not even that it exists.
    await stack.store.transcripts.append(X_KEY, [
      {
        sessionId: 's1',
        executionId: 'e1',
        event: {
          type: 'prompt',
          turn: 'k1',
          phase: 'turn',
          item: 'p1',
          promptId: 'k1',
          content: [],
        },
      },
    ]);
    const before = await streamLengths(stack.store, stack.prefix);
    const s = `/v1/tasks/${TASK}/sessions/s1`;
    for (const path of [
      `/v1/tasks/${TASK}`,
      s,
      `${s}/queue`,
      `${s}/transcript`,
      `${s}/transcript?limit=1&after=0-0`,
      `${s}/transcript/turns/k1`,
    ]) {
      expect({ path, ...(await call('GET', path, intruder)) }).toEqual({
        path,
        status: 404,
        body: { error: notFound(TASK) },
      });
    }
    expect(await call('GET', '/v1/tasks/nobody-has-it', intruder)).toEqual({
      status: 404,
      body: { error: notFound('nobody-has-it') },
    });
    expect(await call('GET', '/v1/tasks', intruder)).toEqual({ status: 200, body: { tasks: [] } });
    expect(await streamLengths(stack.store, stack.prefix)).toEqual(before);
    // X itself reads its task.
    expect((await call('GET', '/v1/tasks', tenantX.token)).body).toEqual({ tasks: [TASK] });
    expect((await call('GET', `/v1/tasks/${TASK}`, tenantX.token)).body).toMatchObject({
      taskId: TASK,
    });
    expect((await call('GET', `${s}/transcript/turns/k1`, tenantX.token)).status).toBe(200);
  });

  it('Y’s commands with X’s task id go to Y’s own task: X’s stream, view and subscribers see nothing', async () => {
    const xWatcher = await Client.connect(stack.ws, tenantX.token);
    await xWatcher.request({ op: 'subscribe', taskId: TASK });
    const xStream = (await stack.store.readTask(X_KEY)).items.length;
    const xView = await stack.store.views.read(X_KEY);
    const queued = xView!.sessions[0]!.queue.entries[0]!.promptId;
    const y = await Client.connect(stack.ws, intruder);
    const ref = { taskId: TASK, sessionId: 's1' };
    const p = await y.request({ op: 'prompt', ...ref, text: 'let me in', idempotencyKey: 'y1' });
    expect(p.result).toMatchObject({ status: 'decided', ...ref, idempotencyKey: 'y1' });
    // X's queued prompt is not in Y's task: cancelling or promoting it finds nothing.
    for (const m of [
      { op: 'queue.cancel', ...ref, promptId: queued },
      { op: 'queue.send_now', ...ref, promptId: queued },
    ]) {
      expect((await y.request(m)).result).toMatchObject({ status: 'failed' });
    }
    for (const m of [
      { op: 'queue.auto_run', ...ref, enabled: false },
      { op: 'session.cancel', ...ref },
    ]) {
      expect((await y.request(m)).ok).toBe(true);
    }
    const rest = await call('POST', `/v1/tasks/${TASK}/sessions/s1/prompts`, intruder, {
      text: 'and again',
      idempotencyKey: 'y2',
    });
    expect(rest.body).toMatchObject({ taskId: TASK, idempotencyKey: 'y2' });
    // Y now has a task of that id: its own, with its own prompts only.
    const yView = await waitFor(async () => {
      const v = (await call('GET', `/v1/tasks/${TASK}/sessions/s1/queue`, intruder)).body;
      return (v.entries as Json[] | undefined)?.length === 2 && v;
    }, 'Y’s own queue');
    expect((yView.entries as Json[]).map((e) => e.text)).toEqual(['let me in', 'and again']);
    expect((await call('GET', '/v1/tasks', intruder)).body).toEqual({ tasks: [TASK] });
    // X's task is untouched.
    expect((await stack.store.readTask(X_KEY)).items.length).toBe(xStream);
    expect(await stack.store.views.read(X_KEY)).toEqual(xView);
    expect(xWatcher.updates(TASK)).toEqual([]);
    expect(JSON.stringify(xWatcher.messages)).not.toContain('let me in');
    const xQueue = (await call('GET', `/v1/tasks/${TASK}/sessions/s1/queue`, tenantX.token)).body;
    expect((xQueue.entries as Json[]).map((e) => e.text)).toEqual(['k2']);
    await Promise.all([y.close(), xWatcher.close()]);
  });
});
