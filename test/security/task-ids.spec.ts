// Attacks on task ids: probing an id tells nothing (a task of another tenant and a
// task nobody has answer with the same bytes on /ws, /ahp, REST and the CLI), reading never
// claims (no squatting by subscribing), and two tenants with one task id have two tasks.
import { executionQueue } from '@baton/jobs';
import { taskKey, type StreamEntry } from '@baton/protocol';
import WebSocket from 'ws';
import {
  Client,
  FakeWorker,
  streamLengths,
  token,
  waitFor,
  spawnWorker,
  stopWorker,
  type WorkerProcess,
  Proc,
  cli,
} from '@baton/testing';
import { startOneGateway, type OneGateway } from './support';

jest.setTimeout(180_000);

let stack: OneGateway;
const X = token({ tenant: 'tenant-x', scope: 'read prompt admin' });
const Y = token({ tenant: 'tenant-y', scope: 'read prompt admin' });

beforeAll(async () => {
  stack = await startOneGateway();
});
afterAll(() => stack?.stop());

type Json = Record<string, unknown>;

/**
 * Sends each frame on a fresh connection, one at a time, and returns every frame received
 * (raw text) up to the answer of each: the bytes a prober sees.
 */
async function rawExchange(path: string, tok: string, frames: Json[]): Promise<string[]> {
  const sock = new WebSocket(`${stack.ws}${path}`, { headers: { authorization: `Bearer ${tok}` } });
  const got: string[] = [];
  sock.on('message', (d) => got.push(d.toString()));
  await new Promise<void>((resolve, reject) => {
    sock.once('open', () => resolve());
    sock.once('error', reject);
  });
  for (const f of frames) {
    const from = got.length;
    sock.send(JSON.stringify(f));
    const answered = () =>
      got.slice(from).some((m) => (JSON.parse(m) as { id?: unknown }).id === f.id);
    await waitFor(answered, `an answer to ${JSON.stringify(f)}`, 15_000);
  }
  await new Promise<void>((r) => {
    sock.once('close', () => r());
    sock.close();
  });
  return got;
}

const cliEnv = (tok: string) => ({
  ...stack.env,
  BATON_GATEWAY_URL: stack.http,
  BATON_TOKEN: tok,
  LOG_LEVEL: 'warn',
});

/** `baton tail <id>` until its first line (the snapshot), then Ctrl-C. */
async function tailFirstLine(taskId: string, tok: string): Promise<string> {
  const p = new Proc(
    'tail',
    process.execPath,
    ['dist/apps/cli/src/main.js', 'tail', taskId],
    cliEnv(tok),
  );
  try {
    const [line] = await p.waitFor(/^\{"type":"snapshot".*$/);
    return line!;
  } finally {
    await p.stop('SIGINT');
  }
}

/** Everything tenant Y can learn about task id `id` without writing: the bytes of each answer. */
async function probe(id: string) {
  const chat = `ahp-chat:/${id}/s1`;
  const rest: [string, number, string][] = [];
  for (const path of [
    `/v1/tasks/${id}`,
    `/v1/tasks/${id}/sessions/s1`,
    `/v1/tasks/${id}/sessions/s1/queue`,
    '/v1/tasks',
  ]) {
    const res = await fetch(`${stack.http}${path}`, { headers: { authorization: `Bearer ${Y}` } });
    rest.push([path, res.status, await res.text()]);
  }
  const [queue, rebuild] = await Promise.all([
    cli(['queue', id, 's1'], cliEnv(Y)),
    cli(['rebuild', id, '--tenant', 'tenant-y'], cliEnv(Y)),
  ]);
  return {
    ws: await rawExchange('/ws', Y, [
      { v: 1, id: 'a', op: 'subscribe', taskId: id },
      { v: 1, id: 'b', op: 'subscribe', taskId: id, sessionId: 's1', afterSeq: 0 },
      { v: 1, id: 'c', op: 'subscribe', taskId: id, afterSeq: 5 },
      { v: 1, id: 'd', op: 'queue.list', taskId: id, sessionId: 's1' },
      { v: 1, id: 'e', op: 'unsubscribe', taskId: id },
    ]),
    ahp: await rawExchange('/ahp', Y, [
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersions: ['1.0.0'], clientId: 'y', initialSubscriptions: [chat] },
      },
      { jsonrpc: '2.0', id: 2, method: 'subscribe', params: { channel: chat } },
      {
        jsonrpc: '2.0',
        id: 3,
        method: 'reconnect',
        params: { clientId: 'y', lastSeenServerSeq: 0, subscriptions: [chat] },
      },
    ]),
    rest,
    cli: { queue, rebuild, tail: await tailFirstLine(id, Y) },
  };
}

/** X writes to its task `id`: an execution (facts as a worker writes them) and two prompts. */
async function xCreates(id: string): Promise<void> {
  await new FakeWorker(stack.store, taskKey('tenant-x', id), 's1').start();
  const c = await Client.connect(stack.ws, X);
  for (const k of ['x1', 'x2']) {
    const r = await c.request({
      op: 'prompt',
      taskId: id,
      sessionId: 's1',
      text: k,
      idempotencyKey: k,
    });
    expect(r.result).toMatchObject({ status: 'decided', taskId: id });
  }
  await c.close();
  await waitFor(
    async () =>
      (await stack.store.views.read(taskKey('tenant-x', id)))?.sessions[0]?.queue.entries.length ===
      1,
    'X’s task to settle',
  );
}

describe('task ids are tenant-scoped', () => {
  it('probing an id: "absent" and "another tenant’s" are the same bytes on /ws, /ahp, REST and the CLI', async () => {
    const id = 'probe-1';
    const absent = await probe(id);
    await xCreates(id);
    const othersTask = await probe(id);
    expect(othersTask).toEqual(absent);
    // What those bytes are: an empty task on /ws, not found on /ahp and REST, nothing listed.
    expect(absent.ws.map((m) => JSON.parse(m) as Json)).toEqual([
      {
        v: 1,
        type: 'snapshot',
        resync: false,
        task: {
          taskId: id,
          status: 'active',
          seq: 0,
          activity: { foregroundActivity: null, activeSubagentCount: 0 },
          sessions: [],
        },
      },
      { v: 1, type: 'reply', id: 'a', ok: true, result: { taskId: id, mode: 'snapshot', seq: 0 } },
      {
        v: 1,
        type: 'reply',
        id: 'b',
        ok: true,
        result: { taskId: id, sessionId: 's1', mode: 'resumed', seq: 0 },
      },
      expect.objectContaining({ type: 'snapshot', resync: true }),
      { v: 1, type: 'reply', id: 'c', ok: true, result: { taskId: id, mode: 'resync', seq: 0 } },
      {
        v: 1,
        type: 'reply',
        id: 'd',
        ok: false,
        error: { code: 'not_found', message: `task ${id} not found` },
      },
      { v: 1, type: 'reply', id: 'e', ok: true, result: { taskId: id, subscribed: false } },
    ]);
    const ahp = absent.ahp.map((m) => JSON.parse(m) as Json);
    expect(ahp[0]).toMatchObject({ id: 1, result: { snapshots: [] } });
    expect(ahp[1]).toEqual({
      jsonrpc: '2.0',
      id: 2,
      error: { code: -32008, message: `task ${id} not found`, data: { code: 'not_found' } },
    });
    // The host knows the client (it initialized): a replay, the chat it cannot resume `missing`.
    expect(ahp[2]).toEqual({
      jsonrpc: '2.0',
      id: 3,
      result: { type: 'replay', actions: [], missing: [`ahp-chat:/${id}/s1`] },
    });
    const notFound = JSON.stringify({
      error: { code: 'not_found', message: `task ${id} not found` },
    });
    expect(absent.rest.map(([, status, body]) => [status, body])).toEqual([
      [404, notFound],
      [404, notFound],
      [404, notFound],
      [200, '{"tasks":[]}'],
    ]);
    expect(absent.cli.queue).toEqual({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(new RegExp(`^baton: .*task ${id} not found\n$`)),
    });
    expect(JSON.parse(absent.cli.tail)).toMatchObject({ type: 'snapshot', view: { taskId: id } });
    expect(JSON.parse(absent.cli.rebuild.stdout)).toMatchObject({
      entries: 0,
      view: { taskId: id, seq: 0, sessions: [] },
    });
    // And the probes wrote nothing of Y's anywhere.
    expect(await stack.store.tenants.tasks('tenant-y')).toEqual([]);
  });

  it('subscribing, reading and listing never claim: another tenant still uses the id, the reader sees none of it', async () => {
    const id = 'squat-me';
    const before = await streamLengths(stack.store, stack.prefix);
    // Y tries to squat on the id every way a reader can, and stays subscribed.
    const yWs = await Client.connect(stack.ws, Y);
    expect((await yWs.request({ op: 'subscribe', taskId: id })).ok).toBe(true);
    const yAhp = await Client.connect(stack.ws, Y, '/ahp');
    await yAhp.rpc('initialize', { protocolVersions: ['1.0.0'], clientId: 'y' });
    expect((await yAhp.rpc('subscribe', { channel: `ahp-chat:/${id}/s1` })).error).toMatchObject({
      code: -32008,
    });
    const get = (path: string) =>
      fetch(`${stack.http}${path}`, { headers: { authorization: `Bearer ${Y}` } });
    expect((await get(`/v1/tasks/${id}`)).status).toBe(404);
    expect((await get('/v1/tasks')).status).toBe(200);
    expect((await cli(['queue', id, 's1'], cliEnv(Y))).code).toBe(1);
    await tailFirstLine(id, Y);
    // Nothing was written: no stream, no tenant list entry, no key of Y's task.
    expect(await streamLengths(stack.store, stack.prefix)).toEqual(before);
    expect(await stack.store.tenants.tasks('tenant-y')).toEqual([]);
    // Nothing of Y's but its AHP client's replay window (which expires, and names no task: the
    // chat it could not subscribe to is not in it).
    const keys = await stack.store.redis.keys(`${stack.prefix}:*tenant-y*`);
    expect(keys).toEqual([`${stack.prefix}:ahp:client:{tenant-y:y}:state`]);
    expect(Object.keys(await stack.store.redis.hgetall(keys[0]!))).toEqual(['#floor']);
    expect(await stack.store.redis.ttl(keys[0]!)).toBeGreaterThan(0);

    // X takes the id as if nobody had looked at it.
    await xCreates(id);
    const xTasks = await fetch(`${stack.http}/v1/tasks`, {
      headers: { authorization: `Bearer ${X}` },
    });
    expect(((await xTasks.json()) as { tasks: string[] }).tasks).toContain(id);
    // Y, still subscribed, saw nothing of it, and still reads nothing.
    await new Promise((r) => setTimeout(r, 300));
    expect(yWs.updates()).toEqual([]);
    expect(yAhp.messages.filter((m) => m.method === 'action')).toEqual([]);
    expect((await get(`/v1/tasks/${id}`)).status).toBe(404);
    expect(await (await get('/v1/tasks')).json()).toEqual({ tasks: [] });
    await Promise.all([yWs.close(), yAhp.close()]);
  });

  describe('two tenants, one task id, real workers', () => {
    let worker: WorkerProcess | undefined;
    afterAll(async () => {
      await stopWorker(worker);
    });

    it('both prompt and run without seeing each other’s prompts or updates', async () => {
      // The replay asks one permission per turn: denied at once here (this test is about tenancy).
      worker = await spawnWorker({
        ...stack.env,
        BATON_PROFILES: JSON.stringify({
          profiles: { replay: { kind: 'replay', permissionPolicy: 'deny' } },
        }),
      });
      const id = 'shared';
      const tenants = [
        { name: 'tenant-x', tok: X, secret: 'x-secret-prompt' },
        { name: 'tenant-y', tok: Y, secret: 'y-secret-prompt' },
      ];
      const sessionUrl = `${stack.http}/v1/tasks/${id}/sessions/s1`;
      const session = async (tok: string) => {
        const r = await fetch(sessionUrl, { headers: { authorization: `Bearer ${tok}` } });
        return r.status === 200 ? ((await r.json()) as { activity: { state: string } }) : null;
      };
      const watchers = await Promise.all(tenants.map((t) => Client.connect(stack.ws, t.tok)));
      for (const w of watchers)
        expect((await w.request({ op: 'subscribe', taskId: id })).ok).toBe(true);
      // Each tenant starts an execution of a one-turn recording on its task `shared`.
      const jobs: string[] = [];
      for (const t of tenants) {
        const r = await fetch(`${sessionUrl}/executions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${t.tok}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            profile: 'replay',
            recording: 'generic-turn',
            speed: 0,
          }),
        });
        expect(r.status).toBe(202);
        jobs.push(((await r.json()) as { jobId: string }).jobId);
      }
      // The worker is tenant-agnostic: each job names its task by key.
      const queue = executionQueue(stack.store.redis, stack.prefix);
      const jobTasks = await Promise.all(
        jobs.map(async (j) => ((await queue.getJob(j))?.data as { taskId: string }).taskId),
      );
      await queue.close();
      expect(jobTasks).toEqual(tenants.map((t) => taskKey(t.name, id)));
      for (const t of tenants) {
        await waitFor(
          async () => (await session(t.tok))?.activity.state === 'idle',
          `${t.name} ready`,
          60_000,
        );
      }
      // Both prompt the same task id and session: each is admitted in its own task.
      const results = await Promise.all(
        tenants.map((t, i) =>
          watchers[i]!.request({
            op: 'prompt',
            taskId: id,
            sessionId: 's1',
            text: t.secret,
            idempotencyKey: 'same-key',
          }),
        ),
      );
      for (const r of results) {
        expect(r.result).toMatchObject({
          status: 'decided',
          taskId: id,
          decision: { outcome: 'admitted', admissionGeneration: 1 },
        });
      }
      // Each turn runs to its end in its own task.
      const streamOf = async (tenant: string): Promise<StreamEntry[]> =>
        (await stack.store.readTask(taskKey(tenant, id), '0-0', 1_000)).items.map((i) => i.entry);
      for (const t of tenants) {
        await waitFor(
          async () => (await streamOf(t.name)).some((e) => e.type === 'turn.ended'),
          `${t.name}'s turn to end`,
          60_000,
        );
      }
      for (const [i, t] of tenants.entries()) {
        const other = tenants[1 - i]!;
        const entries = await streamOf(t.name);
        const submits = entries.filter((e) => e.type === 'prompt.submit');
        expect(submits.map((e) => (e.data as { text: string }).text)).toEqual([t.secret]);
        expect(entries.every((e) => e.taskId === taskKey(t.name, id))).toBe(true);
        // What each tenant's subscriber got: its own task under its own id, nothing of the other.
        const seen = watchers[i]!.messages;
        const texts = JSON.stringify(seen);
        expect(texts).not.toContain(other.secret);
        expect(texts).not.toContain(other.name);
        const updates = watchers[i]!.updates();
        expect(updates.length).toBeGreaterThan(0);
        expect(updates.every((u) => u.taskId === id)).toBe(true);
        expect(updates.map((u) => u.seq)).toEqual(updates.map((_, j) => j + 1));
      }
      await Promise.all(watchers.map((w) => w.close()));
    });
  });
});

describe('one id grammar on every surface', () => {
  const BAD = ['.', '..', 'nul\u0000x', 'rtl\u202etxt.exe', 'trailing ', ' leading', 'b{1}'];

  it('a task or session id outside the grammar is refused with the rule, on /ws and REST alike, and nothing is written', async () => {
    const before = await streamLengths(stack.store, stack.prefix);
    const c = await Client.connect(stack.ws, X);
    for (const id of BAD) {
      for (const m of [
        { op: 'prompt', taskId: id, sessionId: 's', text: 'x', idempotencyKey: 'k' },
        { op: 'prompt', taskId: 't-ok', sessionId: id, text: 'x', idempotencyKey: 'k' },
        { op: 'subscribe', taskId: id },
      ]) {
        const r = await c.request(m);
        expect([id, m.op, r.ok, (r.error as { code?: string }).code]).toEqual([
          id,
          m.op,
          false,
          'invalid_message',
        ]);
      }
      const res = await fetch(
        `${stack.http}/v1/tasks/${encodeURIComponent(id)}/sessions/s/prompts`,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${X}`, 'content-type': 'application/json' },
          body: JSON.stringify({ text: 'x', idempotencyKey: 'k' }),
        },
      );
      // `.` and `..` are resolved away by any HTTP client before they reach a server: 404 there.
      expect([id, res.status]).toEqual([id, id === '.' || id === '..' ? 404 : 400]);
    }
    await c.close();
    expect(await streamLengths(stack.store, stack.prefix)).toEqual(before);
  });
});
