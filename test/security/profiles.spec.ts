// Agent profiles: no client can make a worker run a program of its choosing. Real redis-server,
// real gateway, projector and worker processes, real BullMQ. A client names a profile the
// operator configured and nothing else; the agent gets only its profile's environment, in a
// workspace the worker chose inside the tenant's folder; a job written straight into Redis that
// carries a command (or an unknown profile, or another tenant) is dead-lettered and runs nothing.
import { EXECUTIONS_QUEUE, EXECUTION_JOB_NAME, executionJobId, queuePrefix } from '@baton/jobs';
import { Queue, type ConnectionOptions } from 'bullmq';
import { taskKey } from '@baton/protocol';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  SECRET,
  startStack,
  streamLengths,
  token,
  type Stack,
  childrenOf,
  factsOf,
  readAll,
  spawnWorker,
  waitFor,
  type WorkerProcess,
} from '@baton/testing';

jest.setTimeout(120_000);

type Json = Record<string, unknown>;

const dir = mkdtempSync(join(tmpdir(), 'baton-profiles-sec-'));
const WORKSPACES = join(dir, 'workspaces');
const PROBES = join(dir, 'probes');
const MARKER = join(dir, 'marker-must-not-exist');
const OUTSIDE = join(dir, 'outside');
mkdirSync(PROBES);
mkdirSync(OUTSIDE);

/** Writes its environment and working directory to PROBES/<pid>.json, then exits. */
const PROBE = [
  "const fs = require('fs'), path = require('path');",
  'fs.writeFileSync(path.join(process.env.PROBE_DIR, process.pid + ".json"),',
  '  JSON.stringify({ env: process.env, cwd: process.cwd() }));',
].join('\n');

const PROFILES = {
  profiles: {
    replay: { kind: 'replay' },
    probe: {
      kind: 'command',
      command: process.execPath,
      args: ['-e', PROBE],
      env: { PROBE_DIR: PROBES, PROFILE_VAR: 'from-profile' },
      inheritEnv: ['PROBE_INHERITED'],
    },
  },
};

const A = 'tenant-a';
const B = 'tenant-b';
const execA = token({ tenant: A, scope: 'read execute' });

let stack: Stack;
let http: string;
let worker: WorkerProcess;
let queue: Queue;
let n = 0;

beforeAll(async () => {
  const profiles = JSON.stringify(PROFILES);
  stack = await startStack({
    gateways: 1,
    projectors: 1,
    gatewayEnv: { BATON_PROFILES: profiles },
  });
  http = stack.gateways[0]!.url;
  worker = await spawnWorker({
    ...stack.env,
    BATON_PROFILES: profiles,
    WORKER_WORKSPACE_ROOT: WORKSPACES,
    WORKER_METRICS_PORT: '0',
    // What an agent must never see, and what only an `inheritEnv` may pass.
    BATON_JWT_SECRET: SECRET,
    BATON_CANARY: 'leaked',
    UNLISTED_VAR: 'leaked',
    PROBE_INHERITED: 'inherited',
  });
  queue = new Queue(EXECUTIONS_QUEUE, {
    connection: stack.store.redis as unknown as ConnectionOptions,
    prefix: queuePrefix(stack.prefix),
  });
});
afterAll(async () => {
  await queue?.close();
  if (worker) {
    worker.child.kill('SIGTERM');
    await worker.exited;
  }
  await stack?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const ended = (ref: { taskId: string }, executionId: string) =>
  waitFor(async () => {
    const facts = factsOf(await readAll(stack.store, taskKey(A, ref.taskId)), executionId);
    return facts.find((f) => f.type === 'execution.ended');
  }, `execution.ended of ${executionId}`);

const newTask = () => {
  n++;
  return { taskId: `sec-task-${n}`, sessionId: `s${n}` };
};

const post = async (
  ref: { taskId: string; sessionId: string },
  body: unknown,
  tok = execA,
): Promise<{ status: number; body: Json }> => {
  const res = await fetch(`${http}/v1/tasks/${ref.taskId}/sessions/${ref.sessionId}/executions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Json };
};

/** Everything the queue holds, and every stream's length: what "nothing queued" compares. */
const snapshot = async () => ({
  jobs: await queue.getJobCounts('waiting', 'active', 'completed', 'failed', 'delayed'),
  streams: await streamLengths(stack.store, stack.prefix),
});

const deadLetter = (taskId: string | undefined, jobId: string) =>
  waitFor(async () => {
    const shard = taskId === undefined ? 0 : stack.store.shardOf(taskId);
    const page = await stack.store.deadLetters.read(shard);
    return page.items.find((d) => d.sourceId === jobId);
  }, `dead letter of ${jobId}`);

const probes = () => readdirSync(PROBES).filter((f) => f.endsWith('.json'));

describe('configuration', () => {
  it.each(['dist/apps/worker/src/main.js', 'dist/apps/gateway/src/main.js'])(
    '%s refuses to start on a bad profile, in one line',
    (main) => {
      const r = spawnSync(process.execPath, [main], {
        cwd: join(__dirname, '..', '..'),
        env: {
          ...process.env,
          ...stack.env,
          BATON_JWT_SECRET: SECRET,
          BATON_PROFILES: JSON.stringify({
            profiles: { sh: { kind: 'command', command: '/bin/sh', env: { REDIS_URL: 'x' } } },
          }),
        },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(r.status).toBe(2);
      expect(r.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(
          /^invalid configuration: BATON_PROFILES: profiles\.sh\.env\.REDIS_URL: Baton settings .* are never given to agents$/,
        ),
      ]);
    },
  );
});

describe('starting an execution over REST', () => {
  it.each([
    ['agent', { agent: { kind: 'command', command: '/bin/sh', args: ['-c', `touch ${MARKER}`] } }],
    ['command', { profile: 'replay', recording: 'x', command: '/bin/sh' }],
    ['args', { profile: 'probe', args: ['-c', 'id'] }],
    ['env', { profile: 'probe', env: { LD_PRELOAD: '/tmp/x.so' } }],
    ['cwd', { profile: 'probe', cwd: '/' }],
  ])('refuses a body with `%s` (400 naming it), nothing queued', async (key, body) => {
    const ref = newTask();
    const before = await snapshot();
    const r = await post(ref, { executionId: `x-${ref.taskId}`, ...body });
    expect(r.status).toBe(400);
    expect((r.body.error as Json).code).toBe('invalid_message');
    expect((r.body.error as Json).message).toContain(`unknown field "${key}"`);
    expect(await snapshot()).toEqual(before);
    expect(
      await queue.getJob(executionJobId(taskKey(A, ref.taskId), `x-${ref.taskId}`)),
    ).toBeUndefined();
    expect(existsSync(MARKER)).toBe(false);
  });

  it('refuses an unknown profile (400 naming the known ones), nothing queued or claimed', async () => {
    const ref = newTask();
    const before = await snapshot();
    const r = await post(ref, { profile: 'sh' });
    expect(r).toEqual({
      status: 400,
      body: {
        error: {
          code: 'invalid_message',
          message: 'unknown profile "sh"; known: probe, replay',
          path: 'profile',
        },
      },
    });
    // A recording for a command profile is refused too.
    expect((await post(ref, { profile: 'probe', recording: 'x' })).status).toBe(400);
    expect(await snapshot()).toEqual(before);
    expect(await stack.store.tenants.has(A, ref.taskId)).toBe(false);
  });

  it('needs the execute scope', async () => {
    const ref = newTask();
    const before = await snapshot();
    for (const scope of ['read', 'read prompt']) {
      const r = await post(ref, { profile: 'replay', recording: 'x' }, token({ tenant: A, scope }));
      expect(r).toEqual({
        status: 403,
        body: {
          error: { code: 'forbidden', message: "the token's scope does not include execute" },
        },
      });
    }
    expect(await snapshot()).toEqual(before);
  });

  it('a token of tenant A naming the id of tenant B’s task starts an execution on its own task', async () => {
    const ref = newTask();
    await stack.store.tenants.add(B, ref.taskId);
    const r = await post(ref, { profile: 'probe', executionId: 'probe-b' });
    expect(r.status).toBe(202);
    // Task ids are tenant-scoped: the job names A's task by its key, never B's.
    const job = await queue.getJob(r.body.jobId as string);
    expect(job?.data).toMatchObject({ taskId: taskKey(A, ref.taskId), tenant: A });
    // It runs (on A's task) and ends before the next test counts what was written.
    await ended(ref, 'probe-b');
  });

  it('two tenants choosing one task id and one execution id start two executions, neither blocking the other', async () => {
    const ref = newTask();
    const body = { profile: 'probe', executionId: 'chosen-1' };
    const b = await post(ref, body, token({ tenant: B, scope: 'execute' }));
    const a = await post(ref, body);
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(a.body.jobId).not.toBe(b.body.jobId);
    // Each runs on its own tenant's task, and ends there.
    for (const tenant of [A, B]) {
      await waitFor(async () => {
        const facts = factsOf(await readAll(stack.store, taskKey(tenant, ref.taskId)), 'chosen-1');
        return facts.find((f) => f.type === 'execution.ended');
      }, `chosen-1 ended on ${tenant}'s task`);
    }
  });

  it.each(['../x', '/etc', 'a/../../x', './a', 'a//b', '..', 'a\\..\\b'])(
    'refuses the workspace %j (400), nothing queued',
    async (workspace) => {
      const ref = newTask();
      const before = await snapshot();
      const r = await post(ref, { profile: 'probe', workspace });
      expect(r.status).toBe(400);
      expect((r.body.error as Json).path).toBe('workspace');
      expect(await snapshot()).toEqual(before);
    },
  );
});

describe('the agent process', () => {
  it('gets only its profile’s environment, and runs in the named subfolder of its tenant', async () => {
    const ref = newTask();
    const seen = new Set(probes());
    const r = await post(ref, { profile: 'probe', workspace: 'proj/sub', executionId: 'probe-1' });
    expect(r.status).toBe(202);
    const file = await waitFor(() => probes().find((f) => !seen.has(f)), 'the probe’s report');
    const report = JSON.parse(readFileSync(join(PROBES, file), 'utf8')) as {
      env: Record<string, string>;
      cwd: string;
    };
    expect(report.env.PROFILE_VAR).toBe('from-profile');
    expect(report.env.PROBE_INHERITED).toBe('inherited');
    expect(report.env.PATH).toBe(process.env.PATH);
    expect(report.env.HOME).toBe(process.env.HOME);
    for (const name of ['REDIS_URL', 'BATON_JWT_SECRET', 'BATON_PREFIX', 'BATON_SHARDS']) {
      expect(report.env[name]).toBeUndefined();
    }
    expect(report.env.BATON_CANARY).toBeUndefined();
    expect(report.env.UNLISTED_VAR).toBeUndefined();
    expect(Object.keys(report.env).sort()).toEqual(
      ['HOME', 'PATH', 'PROBE_DIR', 'PROBE_INHERITED', 'PROFILE_VAR'].filter(
        (k) => k in report.env,
      ),
    );
    expect(report.cwd).toBe(realpathSync(join(WORKSPACES, A, 'proj', 'sub')));
    await ended(ref, 'probe-1');
  });

  it('runs in a fresh folder of its tenant when none is named, removed when it ends', async () => {
    const ref = newTask();
    const seen = new Set(probes());
    const r = await post(ref, { profile: 'probe', executionId: 'probe-2' });
    expect(r.status).toBe(202);
    const file = await waitFor(() => probes().find((f) => !seen.has(f)), 'the probe’s report');
    const { cwd } = JSON.parse(readFileSync(join(PROBES, file), 'utf8')) as { cwd: string };
    expect(cwd.startsWith(`${realpathSync(join(WORKSPACES, A))}/x-`)).toBe(true);
    await ended(ref, 'probe-2');
    await waitFor(() => !existsSync(cwd), 'the fresh folder removed');
  });

  it('refuses a workspace that leads out through a symbolic link: the execution fails, nothing runs', async () => {
    mkdirSync(join(WORKSPACES, A), { recursive: true });
    symlinkSync(OUTSIDE, join(WORKSPACES, A, 'out'));
    const ref = newTask();
    const seen = new Set(probes());
    const r = await post(ref, {
      profile: 'probe',
      workspace: 'out/deeper',
      executionId: 'probe-3',
    });
    expect(r.status).toBe(202);
    const end = await ended(ref, 'probe-3');
    expect(end.data).toMatchObject({
      reason: 'failed',
      error: expect.stringMatching(/workspace "out\/deeper" leads outside the tenant's workspace/),
    });
    expect(probes().filter((f) => !seen.has(f))).toEqual([]);
    expect(readdirSync(OUTSIDE)).toEqual([]);
  });

  it('the replay agent runs with the same minimal environment', async () => {
    const ref = newTask();
    const before = new Set(childrenOf(worker.pid));
    const r = await post(ref, {
      profile: 'replay',
      recording: 'demo-claude.jsonl',
      executionId: 'replay-env',
    });
    expect(r.status).toBe(202);
    await waitFor(async () => {
      const facts = factsOf(await readAll(stack.store, taskKey(A, ref.taskId)), 'replay-env');
      return facts.some((f) => f.type === 'capabilities.negotiated');
    }, 'the replay agent ready');
    const [agent] = childrenOf(worker.pid).filter((p) => !before.has(p));
    expect(agent).toBeDefined();
    const env = Object.fromEntries(
      readFileSync(`/proc/${agent}/environ`, 'utf8')
        .split('\0')
        .filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    );
    expect(Object.keys(env).sort()).toEqual(['HOME', 'PATH'].filter((k) => k in env));
    expect(env.PATH).toBe(process.env.PATH);
  });
});

describe('a job written straight into Redis', () => {
  const inject = async (jobId: string, data: unknown) => {
    await queue.add(EXECUTION_JOB_NAME, data, { jobId, attempts: 1 });
    return jobId;
  };
  /** A job of schema v1 for `ref`, as execution `name` (job id `x.<name>`), carrying `rest`. */
  const injectExecution = (name: string, ref: object, rest: Json = {}) =>
    inject(`x.${name}`, { v: 1, ...ref, executionId: name, ...rest });

  it('with a command, env and cwd: dead-lettered with the reason, nothing run', async () => {
    const ref = newTask();
    ref.taskId = taskKey(A, ref.taskId);
    const seen = new Set(probes());
    const legacy = await injectExecution('legacy', ref, {
      agent: { kind: 'command', command: '/bin/sh', args: ['-c', `touch ${MARKER}`], env: {} },
      cwd: dir,
    });
    const smuggled = await injectExecution('smuggled', ref, {
      tenant: A,
      profile: 'probe',
      command: '/bin/sh',
      args: ['-c', `touch ${MARKER}`],
      env: { REDIS_URL: stack.env.REDIS_URL },
      cwd: dir,
    });
    const legacyDead = await deadLetter(ref.taskId, legacy);
    expect(legacyDead.reason).toMatch(/^execution job refused: /);
    expect(legacyDead.reason).toMatch(/Unrecognized key(s)?: .*"agent"/);
    expect(legacyDead.reason).toMatch(/profile/);
    expect(JSON.parse(legacyDead.raw)).toMatchObject({ agent: { command: '/bin/sh' } });
    const smuggledDead = await deadLetter(ref.taskId, smuggled);
    expect(smuggledDead.reason).toMatch(/Unrecognized keys: "command", "args", "env", "cwd"/);
    for (const id of [legacy, smuggled]) {
      await waitFor(async () => (await queue.getJobState(id)) === 'failed', `${id} failed`);
    }
    expect(existsSync(MARKER)).toBe(false);
    expect(probes().filter((f) => !seen.has(f))).toEqual([]);
    const facts = await readAll(stack.store, ref.taskId);
    expect(facts.filter((e) => e.type === 'execution.started')).toEqual([]);
  });

  it('with an unknown profile, or a tenant that does not own the task: dead-lettered, nothing run', async () => {
    const ref = newTask();
    // A task of B: its key names B.
    ref.taskId = taskKey(B, ref.taskId);
    const seen = new Set(probes());
    const unknown = await injectExecution('unknown', ref, { tenant: B, profile: 'sh' });
    const foreign = await injectExecution('foreign', ref, { tenant: A, profile: 'probe' });
    const unclaimed = newTask();
    const orphan = await injectExecution('orphan', unclaimed, { tenant: A, profile: 'probe' });
    const notAJob = await inject('x.garbage', 'rm -rf /');
    expect((await deadLetter(ref.taskId, unknown)).reason).toBe(
      'execution job refused: unknown profile "sh"; known: probe, replay',
    );
    expect((await deadLetter(ref.taskId, foreign)).reason).toBe(
      `execution job refused: task ${ref.taskId} is not tenant "${A}"'s`,
    );
    expect((await deadLetter(unclaimed.taskId, orphan)).reason).toBe(
      `execution job refused: task ${unclaimed.taskId} has no tenant`,
    );
    expect((await deadLetter(undefined, notAJob)).reason).toMatch(/^execution job refused: /);
    for (const id of [unknown, foreign, orphan, notAJob]) {
      await waitFor(async () => (await queue.getJobState(id)) === 'failed', `${id} failed`);
    }
    expect(probes().filter((f) => !seen.has(f))).toEqual([]);
    expect(existsSync(MARKER)).toBe(false);
    for (const taskId of [ref.taskId, unclaimed.taskId]) {
      const facts = await readAll(stack.store, taskId);
      expect(facts.filter((e) => e.type === 'execution.started')).toEqual([]);
    }
  });
});
