import { checkProfileRequest, type Profiles } from '@baton/config';
import {
  enqueueExecution,
  executionJobState,
  executionQueue,
  executionStatus,
  type ExecutionQueue,
  type ExecutionStatus,
} from '@baton/jobs';
import type { ExecutionJobInput } from '@baton/protocol';
import { isUnavailableError, type EventStore } from '@baton/store';
import type { Commands } from '../commands/commands';
import { WireFailure } from '../errors';
import type { Logger } from '../logger';

/** Starts agent executions on the workers' BullMQ queue (opened on first use). */
export class Executions {
  private queue: ExecutionQueue | undefined;

  constructor(
    private readonly store: EventStore,
    private readonly prefix: string,
    private readonly profiles: Profiles,
    private readonly commands: Commands,
    private readonly log: Logger,
  ) {}

  /**
   * Refuses (400) what no worker would run: an unknown profile, a recording or a speed for a
   * profile that is not a replay. Called before anything is written.
   */
  check(req: {
    profile: string;
    recording?: string | undefined;
    speed?: number | undefined;
  }): void {
    const problem = checkProfileRequest(this.profiles, req);
    if (problem !== null) throw new WireFailure('invalid_message', problem, 'profile');
  }

  private open(): ExecutionQueue {
    if (!this.queue) {
      this.queue = executionQueue(this.store.redis, this.prefix);
      // BullMQ re-emits its connection's errors; unheard, each would be printed with its stack.
      // An outage is already logged once by the store's connection (logAvailability).
      this.queue.on('error', (err) => {
        if (!isUnavailableError(err)) this.log.warn({ err }, 'execution queue error');
      });
    }
    return this.queue;
  }

  /**
   * Starts an execution: its request goes to the task stream first (`execution.request`: the
   * session shows it waiting for a worker, and its owner bounds the wait), then its job to the
   * queue, stamped with a time taken before the request was written, so a worker's start bound
   * never ends after the owner's. A retried request of a known execution writes nothing again
   * and makes no second job. Returns the job id and where the execution is now.
   */
  async start(job: ExecutionJobInput): Promise<{ jobId: string } & ExecutionStatus> {
    this.check(job);
    const queue = this.open();
    const at = Date.now();
    if ((await executionJobState(queue, job.taskId, job.executionId)) === 'unknown') {
      await this.commands.requestExecution(job.taskId, job.sessionId, job.executionId);
    }
    const jobId = await enqueueExecution(queue, job, at);
    return { jobId, ...(await executionStatus(queue, job.taskId, job.executionId)) };
  }

  /** Where an execution of the session is: its state, and its position while it waits. */
  status(taskId: string, sessionId: string, executionId: string): Promise<ExecutionStatus> {
    return executionStatus(this.open(), taskId, executionId, sessionId);
  }

  async close(): Promise<void> {
    await this.queue?.close();
  }
}
