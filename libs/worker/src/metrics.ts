import { ServiceMetrics, within } from '@baton/health';
import { Counter, Gauge } from 'prom-client';

/** How long a scrape waits for the queue's depth before it answers with the last one. */
const QUEUE_COUNT_WAIT_MS = 1_000;

/** What a worker exposes to Prometheus. */
export class WorkerMetrics extends ServiceMetrics {
  readonly running = new Gauge({
    name: 'baton_worker_executions_running',
    help: 'Agent executions this worker hosts now',
    registers: [this.registry],
  });
  readonly started = new Counter({
    name: 'baton_worker_executions_started_total',
    help: 'Agent executions started',
    registers: [this.registry],
  });
  readonly refused = new Counter({
    name: 'baton_worker_jobs_refused_total',
    help: 'Execution jobs refused (dead-lettered, nothing run): bad shape, unknown profile, wrong tenant',
    registers: [this.registry],
  });
  readonly ended = new Counter({
    name: 'baton_worker_executions_ended_total',
    help: 'Agent executions ended, by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  /** The executions queue's depth when scraped (what an autoscaler adds workers on). */
  private countWaiting: (() => Promise<number>) | undefined;
  readonly waiting = new Gauge({
    name: 'baton_worker_executions_waiting',
    help: 'Executions waiting for a worker slot: the whole queue, as this worker sees it',
    registers: [this.registry],
    collect: async () => {
      if (!this.countWaiting) return;
      // Redis away: the last value stays, and /metrics still answers. The queue's connection
      // retries a command for as long as Redis is gone, so the scrape waits a bounded time for it
      // (a scrape that hangs would hide the outage the other metrics report).
      const n = await within(
        this.countWaiting().catch(() => undefined),
        QUEUE_COUNT_WAIT_MS,
        undefined,
      );
      if (n !== undefined) this.waiting.set(n);
    },
  });

  /** Reports the queue's depth from `count` at each scrape. */
  watchQueue(count: () => Promise<number>): void {
    this.countWaiting = count;
  }

  constructor(instance: string) {
    super('baton_worker_');
    this.registry.setDefaultLabels({ instance });
  }
}
