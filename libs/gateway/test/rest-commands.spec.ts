// REST and the queue/session commands: prompts with the same semantics as /ws, queue operations
// answered by the task's owner (done, or failed with its reason), pending when no owner answers in
// time (the decision follows as an update), executions, OpenAPI, health and metrics.
import { randomBytes } from 'node:crypto';
import { executionJobState, executionQueue } from '@baton/jobs';
import { CommandResult, PromptResult, SessionView, TaskView, taskKey } from '@baton/protocol';
import { z } from 'zod';
import { openApiDocument } from '../src/rest/openapi';
import {
  Client,
  FakeWorker,
  readAll,
  spawnGateway,
  spawnProjector,
  startStack,
  token,
  tokenFor,
  waitFor,
  type Stack,
} from '@baton/testing';

jest.setTimeout(90_000);

let stack: Stack;
let http: string;
let ws: string;
const tok = tokenFor('rest');
type Json = Record<string, unknown>;

beforeAll(async () => {
  stack = await startStack({ gateways: 1, projectors: 1 });
  http = stack.gateways[0]!.url;
  ws = stack.gateways[0]!.wsUrl;
});
afterAll(() => stack?.stop());

async function call(method: string, path: string, body?: unknown, t = tok) {
  const res = await fetch(`${http}${path}`, {
    method,
    headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

describe('REST', () => {
  it('prompts: 200 with the decision; a retried key gets the same answer; views match /ws', async () => {
    const s = '/v1/tasks/rest-1/sessions/s1';
    await new FakeWorker(stack.store, taskKey('rest', 'rest-1'), 's1').start();
    const a = await call('POST', `${s}/prompts`, { text: 'first', idempotencyKey: 'r1' });
    expect(a.status).toBe(200);
    expect(PromptResult.parse(a.body)).toMatchObject({
      status: 'decided',
      decision: { outcome: 'admitted' },
    });
    const b = await call('POST', `${s}/prompts`, {
      text: 'second',
      idempotencyKey: 'r2',
      origin: 'workflow',
    });
    expect(b.body).toMatchObject({ decision: { outcome: 'queued', position: 1, reason: 'busy' } });
    // A retry is answered with the prompt's decision as it stands: the same prompt, still queued
    // at the same place (the domain words the reason of a re-announced queued decision itself).
    const retry = (await call('POST', `${s}/prompts`, { text: 'second', idempotencyKey: 'r2' }))
      .body;
    expect(retry).toMatchObject({
      promptId: b.body.promptId,
      decision: { outcome: 'queued', position: 1 },
    });
    const session = await call('GET', s);
    expect(SessionView.parse(session.body).queue.entries.map((e) => e.idempotencyKey)).toEqual([
      'r2',
    ]);
    const c = await Client.connect(ws, tok);
    await c.request({ op: 'subscribe', taskId: 'rest-1' });
    const snap = c.messages.find((m) => m.type === 'snapshot')!;
    const task = await call('GET', '/v1/tasks/rest-1');
    expect(TaskView.parse(task.body)).toEqual(snap.task);
    expect((await call('GET', `${s}/queue`)).body).toEqual({
      taskId: 'rest-1',
      sessionId: 's1',
      ...(session.body.queue as Json),
    });
    expect((await call('GET', '/v1/tasks/rest-1/sessions/nope')).status).toBe(404);
    await c.close();
  });

  it('queue and session commands: done when carried out, 409 failed with the owner’s reason', async () => {
    const t = 'rest-2';
    const s = `/v1/tasks/${t}/sessions/s1`;
    await new FakeWorker(stack.store, taskKey('rest', t), 's1').start();
    const c = await Client.connect(ws, tok);
    const first = (
      await c.request({ op: 'prompt', taskId: t, sessionId: 's1', text: 'a', idempotencyKey: 'a' })
    ).result as Json;
    const queued = (
      await c.request({ op: 'prompt', taskId: t, sessionId: 's1', text: 'b', idempotencyKey: 'b' })
    ).result as Json;
    expect(queued.decision).toMatchObject({ outcome: 'queued' });
    // /ws: cancel the queued prompt; cancelling it again is refused by the owner.
    const cancel = await c.request({
      op: 'queue.cancel',
      taskId: t,
      sessionId: 's1',
      promptId: queued.promptId,
    });
    expect(CommandResult.parse(cancel.result)).toMatchObject({ status: 'done' });
    const again = await c.request({
      op: 'queue.cancel',
      taskId: t,
      sessionId: 's1',
      promptId: queued.promptId,
    });
    expect(again.result).toMatchObject({ status: 'failed', reason: 'not_queued' });
    // REST: the same operations.
    expect((await call('DELETE', `${s}/queue/never-was`)).status).toBe(409);
    const off = await call('PUT', `${s}/queue/auto-run`, { enabled: false });
    expect(off).toMatchObject({ status: 200, body: { status: 'done' } });
    const third = (await call('POST', `${s}/prompts`, { text: 'c', idempotencyKey: 'c' })).body;
    expect(third).toMatchObject({ decision: { outcome: 'queued', reason: 'busy' } });
    const stale = await call('POST', `${s}/cancel`, { observedGeneration: 7 });
    expect(stale).toMatchObject({
      status: 409,
      body: { status: 'failed', reason: 'stale_generation' },
    });
    const sendNow = await call('POST', `${s}/queue/${third.promptId as string}/send-now`, {});
    expect(sendNow).toMatchObject({ status: 200, body: { status: 'done' } });
    // The released first prompt went back to the queue; the promoted one was admitted.
    await waitFor(async () => {
      const v = SessionView.parse((await call('GET', s)).body);
      return (
        v.activity.runningGeneration === 2 &&
        v.queue.entries.map((e) => e.promptId).join() === first.promptId
      );
    }, 'send-now to take effect');
    const cancelRunning = await c.request({
      op: 'session.cancel',
      taskId: t,
      sessionId: 's1',
      observedGeneration: 2,
    });
    expect(cancelRunning.result).toMatchObject({ status: 'done' });
    const nothing = await call('POST', '/v1/tasks/rest-2/sessions/idle-one/cancel', {});
    expect(nothing.body).toMatchObject({ status: 'failed', reason: 'nothing_running' });
    const list = (await c.request({ op: 'queue.list', taskId: t, sessionId: 's1' })).result as Json;
    expect(list).toMatchObject({ taskId: t, sessionId: 's1', autoRun: false });
    await c.close();
  });

  it('with no owner answering in time: 202/pending, and the decision follows as an update', async () => {
    const prefix = `p${randomBytes(2).toString('hex')}`;
    const env = { REDIS_URL: stack.redis.url, BATON_PREFIX: prefix, BATON_SHARDS: '2' };
    const g = await spawnGateway({ ...env, GATEWAY_ADMISSION_WAIT_MS: '100' });
    const r = await fetch(`${g.url}/v1/tasks/t/sessions/s/prompts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'x', idempotencyKey: 'rest-k' }),
    });
    expect(r.status).toBe(202);
    expect(await r.json()).toEqual({
      status: 'pending',
      taskId: 't',
      sessionId: 's',
      idempotencyKey: 'rest-k',
    });
    const c = await Client.connect(g.wsUrl, tok);
    let projector: Awaited<ReturnType<typeof spawnProjector>> | undefined;
    try {
      const p = await c.request({
        op: 'prompt',
        taskId: 't',
        sessionId: 's',
        text: 'y',
        idempotencyKey: 'ws-k',
      });
      expect(p.result).toEqual({
        status: 'pending',
        taskId: 't',
        sessionId: 's',
        idempotencyKey: 'ws-k',
      });
      const cmd = await c.request({
        op: 'queue.auto_run',
        taskId: 't',
        sessionId: 's',
        enabled: false,
      });
      expect(cmd.result).toMatchObject({ status: 'pending' });
      // An owner arrives: the decision reaches the connection that prompted, though not subscribed.
      projector = await spawnProjector(env);
      const u = await c.next(
        (m) =>
          m.type === 'update' &&
          (m.update as Json).type === 'prompt.decided' &&
          ((m.update as Json).data as Json).idempotencyKey === 'ws-k',
        'the late decision',
        0,
        30_000,
      );
      expect(((u.update as Json).data as Json).decision).toMatchObject({ outcome: 'queued' });
    } finally {
      await c.close();
      await Promise.all([g.stop(), projector?.stop()]);
    }
  });

  it('starts an execution of a profile on the workers’ queue (execute scope; admin implies it)', async () => {
    const queue = executionQueue(stack.store.redis, stack.prefix);
    const before = await queue.getWaitingCount();
    for (const [n, scope, executionId] of [
      [before + 1, 'execute', 'exec-1'],
      [before + 2, 'admin', 'exec-2'],
    ] as const) {
      const r = await call(
        'POST',
        '/v1/tasks/rest-3/sessions/s1/executions',
        { executionId, profile: 'replay', recording: 'claude-subagent', speed: 0 },
        token({ tenant: 'rest', scope }),
      );
      // No worker runs here: it waits, behind the executions queued before it.
      expect(r).toEqual({
        status: 202,
        body: { executionId, jobId: expect.any(String), state: 'waiting', position: n },
      });
      expect(await executionJobState(queue, 'rest/rest-3', executionId)).toBe('waiting');
      const job = await queue.getJob(r.body.jobId as string);
      expect(job?.data).toEqual({
        v: 1,
        // The job names the task by its key.
        taskId: 'rest/rest-3',
        sessionId: 's1',
        executionId,
        tenant: 'rest',
        profile: 'replay',
        recording: 'claude-subagent',
        speed: 0,
      });
    }
    // The session's owner was told: one execution.request per execution, naming it.
    const requests = async () =>
      (await readAll(stack.store, 'rest/rest-3')).filter((e) => e.type === 'execution.request');
    expect((await requests()).map((e) => [e.sessionId, e.data])).toEqual([
      ['s1', { commandId: expect.any(String), executionId: 'exec-1' }],
      ['s1', { commandId: expect.any(String), executionId: 'exec-2' }],
    ]);
    // A retried request is the same execution, where it was: no second job, no second request.
    const exec = token({ tenant: 'rest', scope: 'execute' });
    const retry = await call(
      'POST',
      '/v1/tasks/rest-3/sessions/s1/executions',
      { executionId: 'exec-1', profile: 'replay', recording: 'claude-subagent', speed: 0 },
      exec,
    );
    expect(retry.body).toMatchObject({
      executionId: 'exec-1',
      state: 'waiting',
      position: before + 1,
    });
    expect(await requests()).toHaveLength(2);
    expect(await queue.getWaitingCount()).toBe(before + 2);
    // Where an execution is (scope read; tenant-checked like every read).
    const read = tokenFor('rest', 'read');
    expect(
      await call('GET', '/v1/tasks/rest-3/sessions/s1/executions/exec-2', undefined, read),
    ).toEqual({
      status: 200,
      body: { executionId: 'exec-2', state: 'waiting', position: before + 2 },
    });
    expect(
      (await call('GET', '/v1/tasks/rest-3/sessions/s1/executions/nope', undefined, read)).body,
    ).toEqual({ executionId: 'nope', state: 'unknown', position: null });
    // Of another session of the task: not this session's.
    expect(
      (await call('GET', '/v1/tasks/rest-3/sessions/s2/executions/exec-2', undefined, read)).body,
    ).toEqual({ executionId: 'exec-2', state: 'unknown', position: null });
    // Another tenant's task of that id does not exist for it.
    const other = await call(
      'GET',
      '/v1/tasks/rest-3/sessions/s1/executions/exec-2',
      undefined,
      tokenFor('someone-else', 'read'),
    );
    expect(other.status).toBe(404);
    const bad = await call(
      'POST',
      '/v1/tasks/rest-3/sessions/s1/executions',
      { profile: 'replay', recording: 'x', agent: { kind: 'command', command: '/bin/sh' } },
      exec,
    );
    expect(bad.status).toBe(400);
    expect((bad.body.error as Json).message).toMatch(/unknown field "agent"/);
    const unknown = await call(
      'POST',
      '/v1/tasks/rest-3/sessions/s1/executions',
      { profile: 'nope' },
      exec,
    );
    expect(unknown.status).toBe(400);
    expect((unknown.body.error as Json).message).toMatch(
      /^unknown profile "nope"; known: .*replay/,
    );
    expect(await executionJobState(queue, 'rest/rest-3', 'exec-3')).toBe('unknown');
    await queue.close();
  });

  it('serves its OpenAPI 3.1 document, built from the zod schemas', async () => {
    const doc = (await (await fetch(`${http}/openapi.json`)).json()) as Json;
    expect(doc).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
    expect(doc.openapi).toBe('3.1.0');
    const { $schema: _, ...taskView } = z.toJSONSchema(TaskView, {
      io: 'output',
      unrepresentable: 'any',
    }) as Json;
    expect(((doc.components as Json).schemas as Json).TaskView).toEqual(taskView);
    expect(Object.keys(doc.paths as Json)).toEqual(
      expect.arrayContaining([
        '/v1/tasks',
        '/v1/tasks/{taskId}',
        '/v1/tasks/{taskId}/sessions/{sessionId}',
        '/v1/tasks/{taskId}/sessions/{sessionId}/prompts',
        '/v1/tasks/{taskId}/sessions/{sessionId}/executions',
        '/v1/tasks/{taskId}/sessions/{sessionId}/executions/{executionId}',
        '/healthz',
        '/readyz',
        '/metrics',
      ]),
    );
  });

  it('health, readiness and metrics', async () => {
    expect(await (await fetch(`${http}/healthz`)).json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${http}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      status: 'ready',
      redis: 'ok',
      updates: 'following',
      shards: { total: 4, owned: 4, unowned: [], unreachable: [] },
    });
    const text = await (await fetch(`${http}/metrics`)).text();
    for (const name of [
      'baton_gateway_connections',
      'baton_gateway_messages_total',
      'baton_gateway_errors_total',
      'baton_gateway_updates_delivered_total',
      'baton_gateway_admission_wait_seconds_bucket',
    ]) {
      expect(text).toContain(name);
    }
    // Without its projector, a gateway's deployment is not ready: no owner for the shards.
    const lone = await spawnGateway({
      REDIS_URL: stack.redis.url,
      BATON_PREFIX: 'nobody',
      BATON_SHARDS: '2',
    });
    const r = await fetch(`${lone.url}/readyz`);
    expect(r.status).toBe(503);
    expect(await r.json()).toEqual({
      status: 'not_ready',
      redis: 'ok',
      updates: expect.stringMatching(/^(following|starting)$/),
      shards: { total: 2, owned: 0, unowned: [0, 1], unreachable: [] },
    });
    await lone.stop();
  });
});
