// Lifecycle commands against real processes (redis-server, the projector, the gateway, ws
// clients, the CLI): session reset, delete and force-release, task archive, unarchive and delete,
// over /ws and REST, each refused without its scope; what they do to prompts, as the prompts'
// own decisions say it; and the tombstone a deleted task leaves.
import { CommandResult, TaskView, taskKey } from '@baton/protocol';
import {
  cli,
  Client,
  FakeWorker,
  startStack,
  streamLengths,
  token,
  waitFor,
  type Stack,
} from '@baton/testing';

jest.setTimeout(90_000);

type Json = Record<string, unknown>;
const TENANT = 'life';
const full = token({ tenant: TENANT, scope: 'read prompt execute delete admin' });
/** Everything but admin: force-release is refused. */
const deleter = token({ tenant: TENANT, scope: 'read prompt execute delete' });
/** Prompts, reset, archive and unarchive; no deletes. */
const prompter = token({ tenant: TENANT, scope: 'read prompt execute' });
const reader = token({ tenant: TENANT, scope: 'read' });

let stack: Stack;
let http: string;
let ws: string;

beforeAll(async () => {
  stack = await startStack({ gateways: 1, projectors: 1 });
  http = stack.gateways[0]!.url;
  ws = stack.gateways[0]!.wsUrl;
});
afterAll(() => stack?.stop());

async function call(method: string, path: string, tok: string, body?: unknown) {
  const res = await fetch(`${http}${path}`, {
    method,
    headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

/** A task of the tenant with a live execution on s1, one prompt running and one queued. */
async function busyTask(taskId: string, c: Client, sessionId = 's1') {
  const w = new FakeWorker(stack.store, taskKey(TENANT, taskId), sessionId);
  await w.start();
  const ref = { taskId, sessionId };
  const running = (await c.request({ op: 'prompt', ...ref, text: 'run', idempotencyKey: 'run' }))
    .result as Json;
  expect(running).toMatchObject({ status: 'decided', decision: { outcome: 'admitted' } });
  // The worker delivered it: a turn is open (not just a claim).
  await w.fact('prompt.dispatched', { promptId: running.promptId, admissionGeneration: 1 });
  const queued = (await c.request({ op: 'prompt', ...ref, text: 'wait', idempotencyKey: 'wait' }))
    .result as Json;
  expect(queued).toMatchObject({ status: 'decided', decision: { outcome: 'queued' } });
  return { w, running: running.promptId as string, queued: queued.promptId as string };
}

/** The decision of a prompt with the given outcome, as a subscriber gets it (`prompt.decided`). */
async function decided(c: Client, promptId: string, outcome: string, from = 0) {
  const u = await c.next(
    (m) =>
      m.type === 'update' &&
      (m.update as Json).type === 'prompt.decided' &&
      ((m.update as Json).data as Json).promptId === promptId &&
      (((m.update as Json).data as Json).decision as Json).outcome === outcome,
    `prompt ${promptId} ${outcome}`,
    from,
  );
  return ((u.update as Json).data as Json).decision as Json;
}

/**
 * A {@link busyTask} seen by a client subscribed to it: `from` is where the updates after the
 * subscription start in its messages.
 */
async function watchedBusyTask(taskId: string) {
  const c = await Client.connect(ws, full);
  const busy = await busyTask(taskId, c);
  await c.request({ op: 'subscribe', taskId });
  return { c, ...busy, from: c.messages.length };
}

/** A prompt over /ws; its reply's result. */
const prompt = async (c: Client, taskId: string, sessionId: string, text: string, key: string) =>
  (await c.request({ op: 'prompt', taskId, sessionId, text, idempotencyKey: key })).result;

const view = async (taskId: string) =>
  TaskView.parse((await call('GET', `/v1/tasks/${taskId}`, reader)).body);

describe('lifecycle commands', () => {
  it('each is refused without its scope, over /ws and REST, and writes nothing', async () => {
    const setup = await Client.connect(ws, full);
    await busyTask('scoped', setup);
    await setup.close();
    const before = await streamLengths(stack.store, stack.prefix);
    const ref = { taskId: 'scoped', sessionId: 's1' };
    const cases: Array<[string, Json, string, string, string]> = [
      ['session.reset', ref, 'POST', '/v1/tasks/scoped/sessions/s1/reset', 'prompt'],
      ['task.archive', { taskId: 'scoped' }, 'POST', '/v1/tasks/scoped/archive', 'prompt'],
      ['task.unarchive', { taskId: 'scoped' }, 'POST', '/v1/tasks/scoped/unarchive', 'prompt'],
      ['session.delete', ref, 'DELETE', '/v1/tasks/scoped/sessions/s1', 'delete'],
      ['task.delete', { taskId: 'scoped' }, 'DELETE', '/v1/tasks/scoped', 'delete'],
      ['session.force_release', ref, 'POST', '/v1/tasks/scoped/sessions/s1/force-release', 'admin'],
    ];
    const lacking: Record<string, string> = { prompt: reader, delete: prompter, admin: deleter };
    for (const [op, params, method, path, scope] of cases) {
      const forbidden = {
        code: 'forbidden',
        message: `the token's scope does not include ${scope}`,
      };
      const c = await Client.connect(ws, lacking[scope]!);
      expect({ op, error: (await c.request({ op, ...params })).error }).toEqual({
        op,
        error: forbidden,
      });
      await c.close();
      expect({ op, ...(await call(method, path, lacking[scope]!)) }).toEqual({
        op,
        status: 403,
        body: { error: forbidden },
      });
    }
    expect(await streamLengths(stack.store, stack.prefix)).toEqual(before);
    expect((await view('scoped')).status).toBe('active');
  });

  it('session reset: done over /ws and REST; the queue stays', async () => {
    const c = await Client.connect(ws, full);
    const { queued } = await busyTask('reset', c);
    const r = await c.request({ op: 'session.reset', taskId: 'reset', sessionId: 's1' });
    expect(CommandResult.parse(r.result)).toMatchObject({ status: 'done' });
    const rest = await call('POST', '/v1/tasks/reset/sessions/s1/reset', prompter);
    expect(rest).toMatchObject({ status: 200, body: { status: 'done' } });
    const entries = (await stack.store.readTask(taskKey(TENANT, 'reset'))).items.map(
      (i) => i.entry.type,
    );
    expect(entries.filter((t) => t === 'session.was_reset')).toHaveLength(2);
    const s = (await view('reset')).sessions.find((x) => x.sessionId === 's1')!;
    expect(s.queue.entries.map((e) => e.promptId)).toEqual([queued]);
    await c.close();
  });

  it('session delete: each queued prompt is told why; deleting it again is done', async () => {
    const { c, queued, from } = await watchedBusyTask('del-session');
    const r = await c.request({ op: 'session.delete', taskId: 'del-session', sessionId: 's1' });
    expect(r.result).toMatchObject({ status: 'done' });
    expect(await decided(c, queued, 'removed', from)).toEqual({
      outcome: 'removed',
      reason: 'session_deleted',
    });
    await waitFor(async () => (await view('del-session')).sessions.length === 0, 'no session');
    const again = await call('DELETE', '/v1/tasks/del-session/sessions/s1', deleter);
    expect(again).toMatchObject({ status: 200, body: { status: 'done' } });
    // A prompt to it is refused with the reason.
    const p = await prompt(c, 'del-session', 's1', 'late', 'late');
    expect(p).toMatchObject({
      decision: { outcome: 'rejected', reason: 'session_deleted' },
    });
    await c.close();
  });

  it('force-release (admin): the running turn ends cancelled now, over /ws and REST', async () => {
    const { c, running, queued, from } = await watchedBusyTask('stuck');
    const r = await c.request({
      op: 'session.force_release',
      taskId: 'stuck',
      sessionId: 's1',
      reason: 'agent hung',
    });
    expect(r.result).toMatchObject({ status: 'done' });
    expect(await decided(c, running, 'cancelled', from)).toMatchObject({
      outcome: 'cancelled',
      reason: 'force_released',
    });
    // The queued prompt is still there, waiting for the next execution.
    const s = (await view('stuck')).sessions.find((x) => x.sessionId === 's1')!;
    expect(s.queue.entries.map((e) => e.promptId)).toEqual([queued]);
    const rest = await call('POST', '/v1/tasks/stuck/sessions/s1/force-release', full, {
      reason: 'again',
    });
    expect([200, 409]).toContain(rest.status);
    expect(CommandResult.parse(rest.body).status).not.toBe('pending');
    await c.close();
  });

  it('archive, then unarchive: prompts refused and queues discarded meanwhile, no executions', async () => {
    const { c, queued, from } = await watchedBusyTask('shelf');
    const r = await c.request({ op: 'task.archive', taskId: 'shelf' });
    expect(r.result).toMatchObject({ status: 'done' });
    expect(await decided(c, queued, 'removed', from)).toEqual({
      outcome: 'removed',
      reason: 'task_archived',
    });
    await c.next(
      (m) => m.type === 'update' && (m.update as Json).type === 'task.status',
      'the task.status update',
      from,
    );
    await waitFor(async () => (await view('shelf')).status === 'archived', 'archived view');
    // Archiving it again changes nothing, and is done.
    expect(await call('POST', '/v1/tasks/shelf/archive', prompter)).toMatchObject({
      status: 200,
      body: { status: 'done' },
    });
    const p = await prompt(c, 'shelf', 's1', 'on the shelf', 'shelf-1');
    expect(p).toMatchObject({ decision: { outcome: 'rejected', reason: 'task_archived' } });
    const exec = await call('POST', '/v1/tasks/shelf/sessions/s1/executions', full, {
      profile: 'replay',
      recording: 'claude-subagent',
    });
    expect(exec).toEqual({
      status: 409,
      body: {
        error: {
          code: 'conflict',
          message: 'task shelf is archived: unarchive it to start an execution',
        },
      },
    });
    const un = await call('POST', '/v1/tasks/shelf/unarchive', prompter);
    expect(un).toMatchObject({ status: 200, body: { status: 'done' } });
    await waitFor(async () => (await view('shelf')).status === 'active', 'active again');
    const again = (await prompt(c, 'shelf', 's1', 'back', 'shelf-2')) as Json;
    expect(again.decision).not.toMatchObject({ outcome: 'rejected' });
    await c.close();
  });

  it('task delete: a tombstone — prompts told why, later ones refused, no execution, id kept', async () => {
    const { c, queued, from } = await watchedBusyTask('gone');
    const r = await call('DELETE', '/v1/tasks/gone', deleter);
    expect(r).toMatchObject({ status: 200, body: { status: 'done' } });
    expect(await decided(c, queued, 'removed', from)).toEqual({
      outcome: 'removed',
      reason: 'task_deleted',
    });
    const tomb = await waitFor(async () => {
      const v = await view('gone');
      return v.status === 'deleted' && v;
    }, 'the tombstone');
    expect(tomb.sessions).toEqual([]);
    const p = await prompt(c, 'gone', 's1', 'hello?', 'gone-1');
    expect(p).toMatchObject({ decision: { outcome: 'rejected', reason: 'task_deleted' } });
    const fresh = await prompt(c, 'gone', 'new-session', 'a new session?', 'gone-2');
    expect(fresh).toMatchObject({
      decision: { outcome: 'rejected', reason: 'task_deleted' },
    });
    const exec = await call('POST', '/v1/tasks/gone/sessions/s1/executions', full, {
      profile: 'replay',
      recording: 'claude-subagent',
    });
    expect(exec.status).toBe(409);
    expect(exec.body).toMatchObject({ error: { code: 'conflict' } });
    // Deleting it again is done; archiving it is refused with the reason.
    expect((await c.request({ op: 'task.delete', taskId: 'gone' })).result).toMatchObject({
      status: 'done',
    });
    const archive = await call('POST', '/v1/tasks/gone/archive', full);
    expect(archive).toMatchObject({
      status: 409,
      body: { status: 'failed', reason: 'task_deleted' },
    });
    // The id stays the tenant's: listed, and readable as a tombstone.
    expect((await call('GET', '/v1/tasks', reader)).body.tasks).toContain('gone');
    expect((await view('gone')).status).toBe('deleted');
    await c.close();
  });

  it('the CLI sends them with the caller’s token', async () => {
    const c = await Client.connect(ws, full);
    await busyTask('by-cli', c);
    await c.close();
    const env = (tok: string) => ({ BATON_GATEWAY_URL: http, BATON_TOKEN: tok, LOG_LEVEL: 'warn' });
    const noAdmin = await cli(['session', 'by-cli', 's1', 'force-release'], env(deleter));
    expect(noAdmin.code).toBe(1);
    expect(noAdmin.stderr).toContain("403 forbidden: the token's scope does not include admin");
    const released = await cli(
      ['session', 'by-cli', 's1', 'force-release', '--reason', 'stuck'],
      env(full),
    );
    expect(released.code).toBe(0);
    expect(JSON.parse(released.stdout)).toMatchObject({ status: 'done' });
    for (const args of [
      ['session', 'by-cli', 's1', 'reset'],
      ['task', 'by-cli', 'archive'],
      ['task', 'by-cli', 'unarchive'],
      ['session', 'by-cli', 's1', 'delete'],
      ['task', 'by-cli', 'delete'],
    ]) {
      const r = await cli(args, env(full));
      expect({ args, code: r.code, out: r.stdout.trim() && JSON.parse(r.stdout) }).toMatchObject({
        args,
        code: 0,
        out: { status: 'done' },
      });
    }
    const refused = await cli(['task', 'by-cli', 'archive'], env(full));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^baton: task_deleted: /);
    expect((await view('by-cli')).status).toBe('deleted');
  });
});
