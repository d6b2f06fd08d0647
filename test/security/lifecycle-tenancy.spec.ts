// Attack: tenant Y, holding every scope (admin included), tries to archive, delete, reset or
// force-release tenant X's task by naming X's task id, over /ws and REST. Each answer is exactly
// the one for a task id nobody has (not_found, 404), nothing is written anywhere, X's task, view
// and subscribers see nothing, and Y does not come to own a task of that id.
import { Client, restClient, streamLengths, token } from '@baton/testing';
import { startWithTaskOfX, tenantX, type OneGateway } from './support';

jest.setTimeout(60_000);

let stack: OneGateway;
const intruder = token({ tenant: 'tenant-y', scope: 'read prompt execute delete admin' });
const TASK = 'x-lifecycle';
const X_KEY = tenantX.key(TASK);
const ABSENT = 'nobody-has-it';
type Json = Record<string, unknown>;

beforeAll(async () => {
  stack = await startWithTaskOfX(TASK);
});
afterAll(() => stack?.stop());

/** REST as the intruder. */
const call = (method: string, path: string) => restClient(stack.http, intruder)(method, path);

const wsOps = (taskId: string): Json[] => [
  { op: 'task.archive', taskId },
  { op: 'task.unarchive', taskId },
  { op: 'task.delete', taskId },
  { op: 'session.reset', taskId, sessionId: 's1' },
  { op: 'session.delete', taskId, sessionId: 's1' },
  { op: 'session.force_release', taskId, sessionId: 's1', reason: 'mine now' },
];
const restOps = (taskId: string): Array<[string, string]> => [
  ['POST', `/v1/tasks/${taskId}/archive`],
  ['POST', `/v1/tasks/${taskId}/unarchive`],
  ['DELETE', `/v1/tasks/${taskId}`],
  ['POST', `/v1/tasks/${taskId}/sessions/s1/reset`],
  ['DELETE', `/v1/tasks/${taskId}/sessions/s1`],
  ['POST', `/v1/tasks/${taskId}/sessions/s1/force-release`],
];

describe('lifecycle commands across tenants', () => {
  it('Y cannot archive, delete, reset or force-release X’s task: answered as for an absent one', async () => {
    const xWatcher = await Client.connect(stack.ws, tenantX.token);
    await xWatcher.request({ op: 'subscribe', taskId: TASK });
    const before = await streamLengths(stack.store, stack.prefix);
    const xView = await stack.store.views.read(X_KEY);
    const y = await Client.connect(stack.ws, intruder);
    const answers: Record<string, unknown[]> = { [TASK]: [], [ABSENT]: [] };
    for (const taskId of [TASK, ABSENT]) {
      for (const m of wsOps(taskId)) {
        const r = await y.request(m);
        expect(r.ok).toBe(false);
        // The id in the message is the one the client sent; everything else is the same.
        answers[taskId]!.push(JSON.parse(JSON.stringify(r.error).replaceAll(taskId, '<id>')));
      }
      for (const [method, path] of restOps(taskId)) {
        const r = await call(method, path);
        answers[taskId]!.push(JSON.parse(JSON.stringify(r).replaceAll(taskId, '<id>')));
      }
    }
    expect(answers[TASK]).toEqual(answers[ABSENT]);
    expect(answers[ABSENT]![0]).toEqual({ code: 'not_found', message: 'task <id> not found' });
    expect(answers[ABSENT]![6]).toEqual({
      status: 404,
      body: { error: { code: 'not_found', message: 'task <id> not found' } },
    });
    // Nothing written: no stream grew, X's view is as it was, Y owns no task.
    expect(await streamLengths(stack.store, stack.prefix)).toEqual(before);
    expect(await stack.store.views.read(X_KEY)).toEqual(xView);
    expect(xView!.status).toBe('active');
    expect(await stack.store.tenants.tasks('tenant-y')).toEqual([]);
    expect(xWatcher.updates(TASK)).toEqual([]);
    await Promise.all([y.close(), xWatcher.close()]);
  });
});
