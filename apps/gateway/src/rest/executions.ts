import { enqueueExecution, executionQueue, type ExecutionQueue } from '@baton/jobs';
import type { ExecutionJobInput } from '@baton/protocol';
import type { EventStore } from '@baton/store';

/** Starts agent executions on the workers' BullMQ queue (opened on first use). */
export class Executions {
  private queue: ExecutionQueue | undefined;

  constructor(
    private readonly store: EventStore,
    private readonly prefix: string,
  ) {}

  start(job: ExecutionJobInput): Promise<string> {
    this.queue ??= executionQueue(this.store.redis, this.prefix);
    return enqueueExecution(this.queue, job);
  }

  async close(): Promise<void> {
    await this.queue?.close();
  }
}
