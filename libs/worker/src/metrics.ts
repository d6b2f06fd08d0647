import { ServiceMetrics, within } from '@baton/health';

/** How long a scrape waits for the queue's depth before it answers with the last one. */
const QUEUE_COUNT_WAIT_MS = 1_000;

/** What a worker exposes to Prometheus. */
export class WorkerMetrics extends ServiceMetrics {
  readonly running = this.gauge(
    'baton_worker_executions_running',
    'Agent executions this worker hosts now',
  );
  readonly started = this.counter(
    'baton_worker_executions_started_total',
    'Agent executions started',
  );
  readonly refused = this.counter(
    'baton_worker_jobs_refused_total',
    'Execution jobs refused (dead-lettered, nothing run): bad shape, unknown profile, wrong tenant',
  );
  readonly ended = this.counter(
    'baton_worker_executions_ended_total',
    'Agent executions ended, by reason',
    ['reason'],
  );

  /** The executions queue's depth when scraped (what an autoscaler adds workers on). */
  private countWaiting: (() => Promise<number>) | undefined;
  readonly waiting = this.gauge(
    'baton_worker_executions_waiting',
    'Executions waiting for a worker slot: the whole queue, as this worker sees it',
    [],
    async (g) => {
      if (!this.countWaiting) return;
      // Redis away: the last value stays, and /metrics still answers. The queue's connection
      // retries a command for as long as Redis is gone, so the scrape waits a bounded time for it
      // (a scrape that hangs would hide the outage the other metrics report).
      const n = await within(
        this.countWaiting().catch(() => undefined),
        QUEUE_COUNT_WAIT_MS,
        undefined,
      );
      if (n !== undefined) g.set(n);
    },
  );

  /** Reports the queue's depth from `count` at each scrape. */
  watchQueue(count: () => Promise<number>): void {
    this.countWaiting = count;
  }

  constructor(instance: string) {
    super('baton_worker_');
    this.registry.setDefaultLabels({ instance });
  }
}
