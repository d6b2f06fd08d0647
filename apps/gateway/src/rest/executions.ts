import { checkProfileRequest, type Profiles } from '@baton/config';
import { enqueueExecution, executionQueue, type ExecutionQueue } from '@baton/jobs';
import type { ExecutionJobInput } from '@baton/protocol';
import type { EventStore } from '@baton/store';
import { WireFailure } from '../errors';

/** Starts agent executions on the workers' BullMQ queue (opened on first use). */
export class Executions {
  private queue: ExecutionQueue | undefined;

  constructor(
    private readonly store: EventStore,
    private readonly prefix: string,
    private readonly profiles: Profiles,
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

  start(job: ExecutionJobInput): Promise<string> {
    this.check(job);
    this.queue ??= executionQueue(this.store.redis, this.prefix);
    return enqueueExecution(this.queue, job);
  }

  async close(): Promise<void> {
    await this.queue?.close();
  }
}
