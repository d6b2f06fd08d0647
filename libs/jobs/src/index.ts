import {
  ExecutionJob,
  SCHEMA_VERSION,
  type ExecutionJobInput,
  type ExecutionStopDelivery,
} from '@baton/protocol';
import { DEFAULT_PREFIX, type RedisClient } from '@baton/store';
import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';

/**
 * The BullMQ queue of agent executions, shared by the worker (which consumes it), and by the
 * gateway, the CLI and the one-process run (which start executions). One job is one execution
 * and lasts as long as it does.
 *
 * Keys: BullMQ names every key `<prefix>:executions:<suffix>`. The prefix is `{<BATON_PREFIX>:q}`,
 * so its braces are the Cluster hash tag of every queue key: BullMQ's scripts touch several keys
 * at once and need them in one slot. The store's own keys are `<BATON_PREFIX>:{b:<shard>}:...`
 * (braces are refused in BATON_PREFIX), so the two never collide.
 */

export const EXECUTIONS_QUEUE = 'executions';
export const EXECUTION_JOB_NAME = 'execution';

export const queuePrefix = (batonPrefix: string = DEFAULT_PREFIX): string => {
  if (/[{}]/.test(batonPrefix))
    throw new RangeError(`prefix must not contain braces: ${batonPrefix}`);
  return `{${batonPrefix}:q}`;
};

/**
 * The BullMQ job id of an execution: its task and its id, so two tenants (or two tasks) that
 * choose one execution id start two executions. BullMQ refuses ids that look like integers or
 * contain `:`, and both parts come from clients; so each part is escaped (`%`, `:` and `.`),
 * which keeps the mapping one-to-one, joined by `.`, and prefixed, which keeps it from ever being
 * an integer.
 */
const escapeJobIdPart = (part: string): string =>
  part.replace(/%/g, '%25').replace(/:/g, '%3A').replace(/\./g, '%2E');
export const executionJobId = (taskId: string, executionId: string): string =>
  `x.${escapeJobIdPart(taskId)}.${escapeJobIdPart(executionId)}`;

/**
 * How long a finished job is kept. While it is, adding its execution id again is a no-op: an
 * execution never runs twice (a restart is a new execution id with a higher generation).
 */
export const FINISHED_JOB_RETENTION = { age: 7 * 24 * 3600, count: 100_000 } as const;

const JOB_OPTIONS: JobsOptions = {
  // A failed or lost execution is never retried under the same id; its owner starts a new one.
  attempts: 1,
  removeOnComplete: FINISHED_JOB_RETENTION,
  removeOnFail: FINISHED_JOB_RETENTION,
};

export type ExecutionQueue = Queue<ExecutionJob, void, typeof EXECUTION_JOB_NAME>;

/**
 * The queue of executions over `connection` (an ioredis client or Cluster; BullMQ duplicates it
 * for its own blocking reads). Close it with `queue.close()`; the connection stays the caller's.
 */
export const executionQueue = (
  connection: RedisClient,
  batonPrefix: string = DEFAULT_PREFIX,
): ExecutionQueue =>
  new Queue<ExecutionJob, void, typeof EXECUTION_JOB_NAME>(EXECUTIONS_QUEUE, {
    connection: connection as unknown as ConnectionOptions,
    prefix: queuePrefix(batonPrefix),
    defaultJobOptions: JOB_OPTIONS,
  });

export class InvalidExecutionJobError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid execution job: ${problems.join('; ')}`);
    this.name = 'InvalidExecutionJobError';
  }
}

/** Validates an execution job, naming each bad field. */
export const parseExecutionJob = (input: unknown): ExecutionJob => {
  const r = ExecutionJob.safeParse(input);
  if (r.success) return r.data;
  throw new InvalidExecutionJobError(
    r.error.issues.slice(0, 10).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`),
  );
};

/**
 * Starts an execution: validates the job and adds it under its execution's job id, so adding the
 * same execution twice (a retried request) is one job. Returns the job id.
 *
 * `enqueuedAt` (ms since the epoch, default now) is the job's timestamp, from which the start
 * bound ({@link startTimedOut}) counts; a retried request keeps the first job and its timestamp.
 */
export const enqueueExecution = async (
  queue: ExecutionQueue,
  input: ExecutionJobInput,
  enqueuedAt?: number,
): Promise<string> => {
  const job = parseExecutionJob(input);
  const jobId = executionJobId(job.taskId, job.executionId);
  await queue.add(EXECUTION_JOB_NAME, job, {
    ...JOB_OPTIONS,
    jobId,
    ...(enqueuedAt !== undefined ? { timestamp: enqueuedAt } : {}),
  });
  return jobId;
};

/**
 * Whether a job enqueued at `enqueuedAt` has waited longer than the start bound
 * (EXECUTION_START_TIMEOUT_MS) at `now`: no worker may start it any more (the task's owner has
 * declared, or is about to declare, its request expired).
 */
export const startTimedOut = (enqueuedAt: number, now: number, timeoutMs: number): boolean =>
  now - enqueuedAt > timeoutMs;

export type ExecutionJobState =
  'waiting' | 'active' | 'completed' | 'failed' | 'delayed' | 'prioritized' | 'unknown';

/** Where an execution's job is: waiting for a worker, running, finished, or not known. */
export const executionJobState = async (
  queue: ExecutionQueue,
  taskId: string,
  executionId: string,
): Promise<ExecutionJobState> => {
  const state = await queue.getJobState(executionJobId(taskId, executionId));
  return state === 'waiting-children' ? 'waiting' : (state as ExecutionJobState);
};

/** Where an execution is, as clients are told: `position` is 1-based among waiting jobs. */
export type ExecutionStatus =
  | { state: 'waiting'; position: number | null }
  | { state: 'active' | 'completed' | 'failed' | 'unknown'; position: null };

/**
 * An execution's state and, while it waits for a worker, its 1-based position among the waiting
 * executions (1: the next one a free slot takes). Delayed and prioritized jobs (Baton makes
 * neither) count as waiting, without a position. Costs O(waiting) job ids, once.
 * When `sessionId` is given, an execution of another session is `unknown`.
 */
export const executionStatus = async (
  queue: ExecutionQueue,
  taskId: string,
  executionId: string,
  sessionId?: string,
): Promise<ExecutionStatus> => {
  const jobId = executionJobId(taskId, executionId);
  const job = await queue.getJob(jobId);
  if (!job || (sessionId !== undefined && job.data?.sessionId !== sessionId)) {
    return { state: 'unknown', position: null };
  }
  const state = await job.getState();
  switch (state) {
    case 'active':
    case 'completed':
    case 'failed':
      return { state, position: null };
    case 'waiting': {
      // Oldest first: workers take jobs from that end of the wait list.
      const ids = await queue.getRanges(['wait'], 0, -1, true);
      const i = ids.indexOf(jobId);
      if (i >= 0) return { state: 'waiting', position: i + 1 };
      // Taken (or removed) between the two reads: say where it is now.
      const now = await job.getState();
      return now === 'active' || now === 'completed' || now === 'failed'
        ? { state: now, position: null }
        : now === 'unknown'
          ? { state: 'unknown', position: null }
          : { state: 'waiting', position: null };
    }
    case 'unknown':
      return { state: 'unknown', position: null };
    default:
      return { state: 'waiting', position: null };
  }
};

/**
 * Takes back an execution no worker has started yet. Returns false when it has started (stop it
 * through its inbox: {@link executionStop}) or is unknown. A job that is picked up in between is
 * not removed: BullMQ does not remove a locked job.
 */
export const withdrawExecution = async (
  queue: ExecutionQueue,
  taskId: string,
  executionId: string,
): Promise<boolean> => {
  const job = await queue.getJob(executionJobId(taskId, executionId));
  if (!job || !(await job.isWaiting())) return false;
  try {
    await job.remove();
    return true;
  } catch {
    // Locked: a worker took it between the two calls.
    return false;
  }
};

/**
 * The inbox message that stops a running execution (written by the task's owner with
 * `store.inbox.append`, fenced by its shard lease). The worker ends the agent's process group
 * and reports `execution.ended` with reason `cancelled`.
 */
export const executionStop = (
  ref: { taskId: string; sessionId: string; executionId: string },
  reason: ExecutionStopDelivery['data']['reason'],
): ExecutionStopDelivery => ({
  v: SCHEMA_VERSION,
  taskId: ref.taskId,
  sessionId: ref.sessionId,
  executionId: ref.executionId,
  type: 'execution.stop',
  data: { reason },
});
