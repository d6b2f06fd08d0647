import { checkProfileRequest, type Profiles } from '@baton/config';
import {
  enqueueExecution,
  executionJobState,
  executionQueue,
  executionStatus,
  type ExecutionQueue,
  type ExecutionStatus,
} from '@baton/jobs';
import type { ExecutionJobInput, PromptResult, SessionView } from '@baton/protocol';
import { isUnavailableError, type EventStore } from '@baton/store';
import { createHash } from 'node:crypto';
import type { Commands } from '../commands/commands';
import { WireFailure } from '../errors';
import type { Logger } from '../logger';
import type { UpdateHub } from '../updates/update-hub';

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

/**
 * A prompt to a parked session starts the execution that resumes it: when the owner queued it for
 * want of an execution (`no_execution`), or behind prompts already queued (`queue_not_empty`: an
 * earlier resume may have found no worker in time), and the session is parked. A resume already
 * under way is the same execution (resumeParked), so nothing starts twice. The prompt then runs on
 * that execution as soon as it is ready. Best effort: when it cannot (the profile is gone), the
 * prompt waits as for any session without an execution.
 */
export async function resumeForPrompt(
  hub: UpdateHub,
  executions: Executions,
  key: string,
  tenant: string,
  sessionId: string,
  result: PromptResult,
  log?: { warn(o: object, m: string): void },
): Promise<void> {
  if (
    result.status !== 'decided' ||
    result.decision.outcome !== 'queued' ||
    (result.decision.reason !== 'no_execution' && result.decision.reason !== 'queue_not_empty')
  )
    return;
  try {
    const view = await hub.view(key);
    const session = view.sessions.find((s) => s.sessionId === sessionId);
    if (session?.parked) await executions.resumeParked(key, tenant, session);
  } catch (err) {
    log?.warn({ err, taskId: key, sessionId }, 'resuming a parked session for a prompt failed');
  }
}
