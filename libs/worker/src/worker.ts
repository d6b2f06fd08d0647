import { BUNDLED_RECORDINGS_DIR } from '@baton/acp';
import { checkProfileRequest } from '@baton/config';
import { serveHealth, serviceLogger, within, type Logger } from '@baton/health';
import {
  EXECUTIONS_QUEUE,
  InvalidExecutionJobError,
  executionJobId,
  executionQueue,
  parseExecutionJob,
  queuePrefix,
  startTimedOut,
} from '@baton/jobs';
import { splitTaskKey, type ExecutionJob } from '@baton/protocol';
import {
  EventStore,
  connectRedis,
  isUnavailableError,
  logAvailability,
  quietDuringOutages,
  redisTargetFromUrl,
} from '@baton/store';
import { UnrecoverableError, WaitingError, Worker, type ConnectionOptions } from 'bullmq';
import { Execution } from './execution';
import { WorkerMetrics } from './metrics';
import { resolveOptions, type WorkerOptionsInput } from './options';

export { WorkerOptionsError, workerOptions, type WorkerOptionsInput } from './options';

export interface WorkerHandle {
  readonly instanceId: string;
  /**
   * Stops taking jobs, ends every running execution (each gets its execution.ended, its agent's
   * process group is killed) and closes the connections.
   */
  stop(): Promise<void>;
  /** Execution ids running here now. */
  running(): string[];
  readonly metrics: WorkerMetrics;
  /** Port of /healthz and /metrics, or null when none is served. */
  readonly metricsPort: number | null;
}

/**
 * A worker: consumes the executions queue with one BullMQ job per agent execution, `concurrency`
 * at a time, each job lasting as long as its execution. A job is never retried or resumed under
 * the same execution id: a stalled job (its worker died) fails, and the task's owner declares the
 * execution lost when its execution lease lapses.
 */
export async function startWorker(
  input: WorkerOptionsInput & { logger?: Logger },
): Promise<WorkerHandle> {
  const { logger, ...rest } = input;
  const opts = resolveOptions(rest);
  const log =
    logger ??
    serviceLogger('worker', opts.instanceId, opts.logLevel, {
      logMethod: quietDuringOutages,
    });
  const target = redisTargetFromUrl(opts.redisUrl);
  const metrics = new WorkerMetrics(opts.instanceId);
  const logged = logAvailability(log);
  const store = EventStore.connect(
    target,
    { shards: opts.shards, prefix: opts.prefix, onDeadLetter: metrics.redis.onDeadLetter },
    {
      connectionName: opts.instanceId,
      onAvailability: (change) => {
        logged(change);
        metrics.redis.onAvailability(change);
      },
    },
  );
  // BullMQ blocks on its connections, so they must never give up on a command. Its outages are
  // the store's (same Redis), reported once by the store's connection.
  const bull = connectRedis(target, {
    maxRetriesPerRequest: null,
    connectionName: `${opts.instanceId}:jobs`,
  });
  // By task and execution id: two tasks (two tenants) may choose one execution id.
  const runs = new Map<string, { executionId: string; run: Execution }>();
  let stopping = false;
  // Read only, for the waiting gauge: the worker's own jobs come from the Worker below.
  const queue = executionQueue(bull, opts.prefix);
  metrics.watchQueue(() => queue.getWaitingCount());
  const settings = {
    workerId: opts.instanceId,
    periods: opts.periods,
    factBuffer: opts.factBuffer,
    recordingsDir: opts.recordingsDir ?? BUNDLED_RECORDINGS_DIR,
    workspaceRoot: opts.workspaceRoot,
  };
  const profiles = opts.profiles;
  const source = `${queuePrefix(opts.prefix)}:${EXECUTIONS_QUEUE}`;

  /**
   * A job this worker will not run: recorded with its reason in the dead letters of its task's
   * shard (shard 0 when it names no task), then failed for good. Nothing is started.
   */
  const refuse = async (jobId: string, raw: unknown, reason: string): Promise<never> => {
    const taskId = (raw as { taskId?: unknown } | null)?.taskId;
    const shard = typeof taskId === 'string' && taskId !== '' ? store.shardOf(taskId) : 0;
    log.error({ jobId, reason }, 'execution job refused');
    metrics.refused.inc();
    let text: string;
    try {
      text = JSON.stringify(raw) ?? 'undefined';
    } catch {
      text = String(raw);
    }
    await store.deadLetters.add(shard, source, jobId, `execution job refused: ${reason}`, text);
    throw new UnrecoverableError(`execution job refused: ${reason}`);
  };

  /**
   * Every job is checked again here, whoever queued it (Redis is writable by more than the
   * gateway): strict shape (no agent, command, env or cwd), a configured profile, and the task's
   * owner is the job's tenant.
   */
  const admit = async (jobId: string, raw: unknown): Promise<ExecutionJob> => {
    let data: ExecutionJob;
    try {
      data = parseExecutionJob(raw);
    } catch (err) {
      return refuse(
        jobId,
        raw,
        err instanceof InvalidExecutionJobError ? err.problems.join('; ') : String(err),
      );
    }
    const problem = checkProfileRequest(profiles, data);
    if (problem !== null) return refuse(jobId, raw, problem);
    // The job's task is a key, `<tenant>/<task id>`: it must be a task of the job's tenant.
    const owner = splitTaskKey(data.taskId)?.tenant ?? null;
    if (owner !== data.tenant) {
      return refuse(
        jobId,
        raw,
        owner === null
          ? `task ${data.taskId} has no tenant`
          : `task ${data.taskId} is not tenant ${JSON.stringify(data.tenant)}'s`,
      );
    }
    return data;
  };

  const worker = new Worker<ExecutionJob, void>(
    EXECUTIONS_QUEUE,
    async (job, token) => {
      if (stopping) {
        // Taken while shutting down: hand it back untouched for another worker.
        await job.moveToWait(token);
        throw new WaitingError();
      }
      const data = await admit(job.id ?? '', job.data);
      // Past the start bound its owner has given up on it (no_worker): it never starts.
      const now = Date.now();
      if (startTimedOut(job.timestamp, now, opts.periods.executionStart)) {
        return refuse(
          job.id ?? '',
          job.data,
          `start_timeout: no worker took it within ${opts.periods.executionStart} ms (it waited ${now - job.timestamp} ms)`,
        );
      }
      const key = executionJobId(data.taskId, data.executionId);
      if (runs.has(key)) throw new Error(`${data.executionId} already runs here`);
      const run = new Execution(data, profiles[data.profile]!, store, settings, log);
      runs.set(key, { executionId: data.executionId, run });
      metrics.started.inc();
      metrics.running.set(runs.size);
      try {
        const outcome = await run.run();
        metrics.ended.inc({ reason: outcome.reason });
        log.info({ executionId: data.executionId, ...outcome }, 'execution ended');
      } finally {
        runs.delete(key);
        metrics.running.set(runs.size);
      }
    },
    {
      connection: bull as unknown as ConnectionOptions,
      prefix: queuePrefix(opts.prefix),
      concurrency: opts.concurrency,
      name: opts.instanceId,
      // A stalled job belongs to a dead worker; its execution is declared lost, never rerun.
      maxStalledCount: 0,
    },
  );
  // A lost connection is an outage, already logged once as such; anything else is worth a line.
  worker.on('error', (err) => {
    if (!isUnavailableError(err)) log.error({ err: String(err) }, 'queue error');
  });
  worker.on('failed', (job, err) =>
    log.warn({ jobId: job?.id, err: String(err) }, 'execution job failed'),
  );
  await worker.waitUntilReady();
  const health =
    opts.metricsPort === null
      ? null
      : await serveHealth({
          registry: metrics.registry,
          port: opts.metricsPort,
          // Healthy while it takes jobs and Redis answers: the orchestrator's cue to restart it.
          check: async () => {
            if (stopping) return 'stopping';
            if (!worker.isRunning()) return 'not taking jobs';
            try {
              const pong = await store.redis.ping();
              return pong === 'PONG' ? null : `Redis answered PING with ${pong}`;
            } catch (err) {
              return `Redis did not answer PING: ${err instanceof Error ? err.message : String(err)}`;
            }
          },
          checkTimeoutMs: 1_000,
          timeoutReason: 'Redis did not answer PING within 1000 ms',
        });
  log.info({ concurrency: opts.concurrency, metricsPort: health?.port }, 'worker ready');

  const stopCleanly = async () => {
    // close() stops fetching at once and resolves when the running jobs have returned.
    const closing = worker.close();
    for (const { run } of runs.values()) run.shutdown();
    await closing;
    await health?.close();
    await queue.close();
    await store.close();
    await bull.quit().catch(() => bull.disconnect());
  };
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      stopping = true;
      log.info({ running: runs.size }, 'worker stopping');
      // The agents are told to end at once; waits on an unreachable Redis are cut at the bound:
      // what could not be written is told by the execution leases lapsing (declared lost).
      const clean = await within(
        stopCleanly().then(() => true),
        opts.periods.shutdown,
        false,
      );
      if (!clean) {
        log.warn({ afterMs: opts.periods.shutdown }, 'stop unfinished; executions left to lapse');
        store.redis.disconnect();
        bull.disconnect();
        await health?.close().catch(() => undefined);
      }
      log.info('worker stopped');
    })());

  return {
    instanceId: opts.instanceId,
    stop,
    running: () => [...runs.values()].map((r) => r.executionId),
    metrics,
    metricsPort: health?.port ?? null,
  };
}
