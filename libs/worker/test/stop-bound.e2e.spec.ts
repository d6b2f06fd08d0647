import { within } from '@baton/health';
import { startRedis, type RedisServer } from '@baton/redis-server';
import { spawnWorker, type WorkerProcess } from '@baton/testing';

/**
 * A worker told to stop (SIGTERM, as an orchestrator stops a pod) while its Redis answers
 * nothing: it exits within WORKER_SHUTDOWN_TIMEOUT_MS rather than wait for Redis to come back.
 * What it could not write is not lost: its executions' leases lapse and their owner declares them
 * lost, as after a crash.
 */

jest.setTimeout(60_000);

const SHUTDOWN_MS = 2_000;

let server: RedisServer;
let worker: WorkerProcess | undefined;

beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  if (worker?.child.exitCode === null) worker.child.kill('SIGKILL');
  server.resume();
  await server.stop();
});

it('a worker whose Redis answers nothing exits within its shutdown bound', async () => {
  worker = await spawnWorker({
    REDIS_URL: server.url,
    BATON_PREFIX: 'stop',
    BATON_SHARDS: '2',
    WORKER_SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_MS),
  });
  server.pause();
  worker.child.kill('SIGTERM');
  const stillRunning = 'still running past its shutdown bound';
  expect(await within(worker.exited, 4 * SHUTDOWN_MS, stillRunning)).not.toBe(stillRunning);
});
