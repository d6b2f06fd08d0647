import { checkProfileRequest, type Profiles } from '@baton/config';
import {
  enqueueExecution,
  executionJobState,
  executionQueue,
  executionStatus,
  type ExecutionQueue,
  type ExecutionStatus,
} from '@baton/jobs';
import { SCHEMA_VERSION, type ExecutionJobInput, type SessionView } from '@baton/protocol';
import { isUnavailableError, type EventStore } from '@baton/store';
import { createHash, randomUUID } from 'node:crypto';
import type { CommandWriter } from '../commands/command-writer';
import { WireFailure } from '../errors';
import type { Logger } from '../logger';

/** Starts agent executions on the workers' BullMQ queue (opened on first use). */
export class Executions {
  private queue: ExecutionQueue | undefined;

  constructor(
    private readonly store: EventStore,
    private readonly prefix: string,
    private readonly profiles: Profiles,
    private readonly writer: CommandWriter,
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
   * Records in the task stream that an execution of the session was put on the execution queue
   * (`execution.request`): its owner shows the session waiting for a worker until the execution
   * starts, and fails the request visibly (no_worker) after the start bound. Not waited on.
   */
  private async request(taskId: string, sessionId: string, executionId: string): Promise<string> {
    const commandId = randomUUID();
    await this.writer.append(taskId, (writer) => ({
      v: SCHEMA_VERSION,
      type: 'execution.request',
      taskId,
      sessionId,
      writer,
      data: { commandId, executionId },
    }));
    return commandId;
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
      await this.request(job.taskId, job.sessionId, job.executionId);
    }
    const jobId = await enqueueExecution(queue, job, at);
    return { jobId, ...(await executionStatus(queue, job.taskId, job.executionId)) };
  }

  /**
   * Starts the execution that resumes a parked session: the parked execution's profile and
   * choices (a replay's `recording` and `speed` may be given anew), loading its ACP session when
   * the agent can (`session/load`), else a fresh one. Its id is derived from the parked
   * execution's, so resumes racing through any gateways make one execution; and, once a resume
   * found no worker in time (`no_worker`), from that one's too, so the next resume is a new
   * execution rather than the failed job of the last (kept for days). Null when the session is
   * not parked.
   */
  async resumeParked(
    taskKey: string,
    tenant: string,
    session: SessionView | undefined,
    over: { recording?: string | undefined; speed?: number | undefined } = {},
  ): Promise<({ executionId: string; jobId: string } & ExecutionStatus) | null> {
    const parked = session?.parked;
    if (!session || !parked) return null;
    if (parked.profile === undefined) {
      throw new WireFailure(
        'conflict',
        `session ${session.sessionId} was parked by an execution that did not record its profile: start an execution`,
      );
    }
    const attention = session.activity.attention;
    const expired =
      attention?.kind === 'failed' && attention.reason === 'no_worker' && attention.executionId
        ? `\n${attention.executionId}`
        : '';
    const executionId = `resume-${createHash('sha256')
      .update(`${session.sessionId}\n${parked.executionId}${expired}`)
      .digest('hex')
      .slice(0, 32)}`;
    const recording = over.recording ?? parked.recording;
    const speed = over.speed ?? parked.speed;
    const started = await this.start({
      v: 1,
      taskId: taskKey,
      sessionId: session.sessionId,
      executionId,
      tenant,
      profile: parked.profile,
      ...(recording !== undefined ? { recording } : {}),
      ...(speed !== undefined ? { speed } : {}),
      ...(parked.workspace !== undefined ? { workspace: parked.workspace } : {}),
      ...(parked.loadable ? { resumeAcpSessionId: parked.acpSessionId } : {}),
    });
    return { executionId, ...started };
  }

  /** Where an execution of the session is: its state, and its position while it waits. */
  status(taskId: string, sessionId: string, executionId: string): Promise<ExecutionStatus> {
    return executionStatus(this.open(), taskId, executionId, sessionId);
  }

  async close(): Promise<void> {
    await this.queue?.close();
  }
}
