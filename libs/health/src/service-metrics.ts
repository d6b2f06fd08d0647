import { Registry, collectDefaultMetrics } from 'prom-client';
import { redisMetrics, type RedisMetrics } from './redis-metrics';

/**
 * What every service (gateway, worker, projector) exposes to Prometheus, in a registry of its own
 * (several services may share a process): Node's own metrics and the Redis figures, named under
 * the service's `prefix`. A service declares its own metrics in {@link registry} beside them.
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  /** Redis reachability and dead letters (the store's hooks). */
  readonly redis: RedisMetrics;

  constructor(prefix: string) {
    collectDefaultMetrics({ register: this.registry, prefix });
    this.redis = redisMetrics(this.registry, prefix);
  }
}
