import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { redisMetrics, type RedisMetrics } from './redis-metrics';

/**
 * What every service (gateway, worker, projector) exposes to Prometheus, in a registry of its own
 * (several services may share a process): Node's own metrics and the Redis figures, named under
 * the service's `prefix`. A service declares its own metrics beside them with {@link counter},
 * {@link gauge} and {@link histogram}, which register them in {@link registry}.
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  /** Redis reachability and dead letters (the store's hooks). */
  readonly redis: RedisMetrics;

  constructor(prefix: string) {
    collectDefaultMetrics({ register: this.registry, prefix });
    this.redis = redisMetrics(this.registry, prefix);
  }

  protected counter<L extends string = never>(
    name: string,
    help: string,
    labelNames: readonly L[] = [],
  ): Counter<L> {
    return new Counter<L>({ name, help, labelNames, registers: [this.registry] });
  }

  /** A gauge; with `collect`, set by it at each scrape (which waits for it when it is async). */
  protected gauge<L extends string = never>(
    name: string,
    help: string,
    labelNames: readonly L[] = [],
    collect?: (gauge: Gauge<L>) => void | Promise<void>,
  ): Gauge<L> {
    const gauge: Gauge<L> = new Gauge<L>({
      name,
      help,
      labelNames,
      registers: [this.registry],
      ...(collect ? { collect: () => collect(gauge) } : {}),
    });
    return gauge;
  }

  protected histogram<L extends string = never>(
    name: string,
    help: string,
    labelNames: readonly L[],
    buckets: number[],
  ): Histogram<L> {
    return new Histogram<L>({ name, help, labelNames, buckets, registers: [this.registry] });
  }

  /**
   * A counter of a running total kept elsewhere as a plain number (off the hot path's way): at
   * each scrape it adds what the total grew by since the last.
   */
  protected totalCounter(name: string, help: string, total: () => number): Counter {
    let reported = 0;
    const counter: Counter = new Counter({
      name,
      help,
      registers: [this.registry],
      collect: () => {
        const now = total();
        counter.inc(now - reported);
        reported = now;
      },
    });
    return counter;
  }
}
