import {
  startRedis,
  startRedisCluster,
  type RedisClusterHandle,
  type RedisServer,
} from '@baton/redis-server';
import { connectRedis, type RedisClient } from '@baton/store';
import { Worker, type ConnectionOptions } from 'bullmq';
import {
  EXECUTIONS_QUEUE,
  InvalidExecutionJobError,
  enqueueExecution,
  executionJobId,
  executionJobState,
  executionQueue,
  executionStatus,
  executionStop,
  queuePrefix,
  startTimedOut,
  withdrawExecution,
  type ExecutionQueue,
} from '../src';
import { InboxMessage, type ExecutionJobInput } from '@baton/protocol';

const job = (executionId: string): ExecutionJobInput => ({
  v: 1,
  taskId: 'task-1',
  sessionId: 'session-1',
  executionId,
  tenant: 'local',
  profile: 'replay',
  recording: 'generic-turn.jsonl',
});

describe('the executions queue', () => {
  let server: RedisServer;
  let redis: RedisClient;
  let queue: ExecutionQueue;

  beforeAll(async () => {
    server = await startRedis();
    redis = connectRedis({ url: server.url }, { maxRetriesPerRequest: null });
    queue = executionQueue(redis, 'jt');
  });
  afterAll(async () => {
    await queue.close();
    redis.disconnect();
    await server.stop();
  });

  it('keeps every key under one hash tag, apart from the store keys', async () => {
    await enqueueExecution(queue, job('keys-1'));
    const keys = await redis.keys('*');
    expect(keys.length).toBeGreaterThan(0);
    for (const k of keys) expect(k.startsWith(`{jt:q}:${EXECUTIONS_QUEUE}:`)).toBe(true);
    expect(queuePrefix('baton')).toBe('{baton:q}');
    expect(() => queuePrefix('a{b}')).toThrow(/braces/);
  });

  it('validates the job and names the bad fields', async () => {
    const bad = {
      ...job('bad-1'),
      taskId: '',
      agent: { kind: 'command', command: '/bin/sh' },
    } as never;
    const err = await enqueueExecution(queue, bad).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidExecutionJobError);
    expect((err as InvalidExecutionJobError).problems.join('\n')).toMatch(/taskId/);
    // A job names a profile; a command (or env, cwd) is never part of one.
    expect((err as InvalidExecutionJobError).problems.join('\n')).toMatch(
      /Unrecognized key: "agent"/,
    );
    expect(await executionJobState(queue, 'task-1', 'bad-1')).toBe('unknown');
  });

  it('adds the same execution once', async () => {
    const a = await enqueueExecution(queue, job('twice'));
    const b = await enqueueExecution(queue, { ...job('twice'), sessionId: 'other' });
    expect(a).toBe(b);
    const stored = await queue.getJob(a);
    expect(stored?.data).toEqual(job('twice'));
    const waiting = await queue.getWaiting();
    expect(waiting.filter((j) => j.data.executionId === 'twice')).toHaveLength(1);
  });

  it('takes any execution id, one job per id (colons, integers, escapes)', async () => {
    const ids = ['42', 'a:b', 'a%3Ab', 'a%b', 'x.42', 'a.b', 'a%2Eb'];
    const jobIds = await Promise.all(ids.map((id) => enqueueExecution(queue, job(id))));
    expect(new Set(jobIds).size).toBe(ids.length);
    expect(jobIds.map((j) => j.includes(':'))).toEqual(ids.map(() => false));
    for (const id of ids)
      expect((await queue.getJob(executionJobId('task-1', id)))?.data.executionId).toBe(id);
  });

  it('names a job by its task and its id: two tasks (two tenants) with one execution id are two jobs', async () => {
    const a = await enqueueExecution(queue, { ...job('same'), taskId: 'tenant-a/t.1' });
    const b = await enqueueExecution(queue, { ...job('same'), taskId: 'tenant-b/t.1' });
    // Escaping keeps the two parts apart: ("a.b", "c") and ("a", "b.c") are two jobs.
    const c = await enqueueExecution(queue, { ...job('c'), taskId: 'x/a.b' });
    const d = await enqueueExecution(queue, { ...job('b.c'), taskId: 'x/a' });
    expect(new Set([a, b, c, d]).size).toBe(4);
    expect((await queue.getJob(a))?.data.taskId).toBe('tenant-a/t.1');
    expect((await queue.getJob(b))?.data.taskId).toBe('tenant-b/t.1');
    expect(await executionJobState(queue, 'tenant-b/t.1', 'same')).toBe('waiting');
  });

  it('withdraws an execution no worker has started, and says so', async () => {
    await enqueueExecution(queue, job('withdraw-me'));
    expect(await executionJobState(queue, 'task-1', 'withdraw-me')).toBe('waiting');
    expect(await withdrawExecution(queue, 'other-task', 'withdraw-me')).toBe(false);
    expect(await withdrawExecution(queue, 'task-1', 'withdraw-me')).toBe(true);
    expect(await executionJobState(queue, 'task-1', 'withdraw-me')).toBe('unknown');
    expect(await withdrawExecution(queue, 'task-1', 'never-added')).toBe(false);
  });

  it('says where an execution is: its 1-based position while it waits, its state after', async () => {
    const q = executionQueue(redis, 'jt-pos');
    try {
      for (const id of ['p1', 'p2', 'p3']) await enqueueExecution(q, job(id));
      expect(await executionStatus(q, 'task-1', 'p1')).toEqual({ state: 'waiting', position: 1 });
      expect(await executionStatus(q, 'task-1', 'p3')).toEqual({ state: 'waiting', position: 3 });
      // A retried request is the same job, in the same place.
      await enqueueExecution(q, job('p1'));
      expect(await executionStatus(q, 'task-1', 'p1')).toEqual({ state: 'waiting', position: 1 });
      // Of another session, or never added: not known.
      expect(await executionStatus(q, 'task-1', 'p2', 'other')).toEqual({
        state: 'unknown',
        position: null,
      });
      expect(await executionStatus(q, 'task-1', 'p2', 'session-1')).toEqual({
        state: 'waiting',
        position: 2,
      });
      expect(await executionStatus(q, 'task-1', 'nope')).toEqual({
        state: 'unknown',
        position: null,
      });
      // The head leaves the queue: the others move up.
      await withdrawExecution(q, 'task-1', 'p1');
      expect(await executionStatus(q, 'task-1', 'p3')).toEqual({ state: 'waiting', position: 2 });
    } finally {
      await q.obliterate({ force: true });
      await q.close();
    }
  });

  it('keeps the enqueue time a request gives, and the first one on a retry', async () => {
    const at = Date.now() - 60_000;
    const id = await enqueueExecution(queue, job('stamped'), at);
    await enqueueExecution(queue, job('stamped'), Date.now());
    expect((await queue.getJob(id))?.timestamp).toBe(at);
  });

  it('bounds the wait for a worker: a job older than the start timeout is timed out', () => {
    expect(startTimedOut(1_000, 2_500, 1_500)).toBe(false);
    expect(startTimedOut(1_000, 2_501, 1_500)).toBe(true);
    expect(startTimedOut(1_000, 900, 1_500)).toBe(false);
  });

  it('builds a valid stop message for the inbox', () => {
    const stop = executionStop(
      { taskId: 't', sessionId: 's', executionId: 'e' },
      'session_deleted',
    );
    expect(InboxMessage.parse(stop)).toEqual(stop);
  });
});

describe('the executions queue on a Redis Cluster', () => {
  let cluster: RedisClusterHandle;
  let redis: RedisClient;

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    redis = connectRedis({ cluster: cluster.nodes }, { maxRetriesPerRequest: null });
  }, 60_000);
  afterAll(async () => {
    redis.disconnect();
    await cluster.stop();
  });

  it('enqueues and runs a job (every script stays in one slot)', async () => {
    const queue = executionQueue(redis, 'cl');
    const ran: string[] = [];
    const worker = new Worker(
      EXECUTIONS_QUEUE,
      async (j) => {
        ran.push((j.data as { executionId: string }).executionId);
      },
      { connection: redis as unknown as ConnectionOptions, prefix: queuePrefix('cl') },
    );
    try {
      await enqueueExecution(queue, job('on-cluster'));
      await enqueueExecution(queue, job('on-cluster'));
      while ((await executionJobState(queue, 'task-1', 'on-cluster')) !== 'completed') {
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(ran).toEqual(['on-cluster']);
    } finally {
      await worker.close();
      await queue.close();
    }
  }, 60_000);
});
