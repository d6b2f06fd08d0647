import { Counter, Gauge, type Registry } from 'prom-client';

/** What a Redis connection reports when a node goes away or comes back (@baton/store). */
export interface NodeAvailability {
  available: boolean;
  /** The Cluster node; absent for a single server. */
  node?: string;
}

/** The Redis figures every role exposes, fed by its store's connection and dead-letter hooks. */
export interface RedisMetrics {
  /** Pass as the connection's `onAvailability` (beside the log line). */
  onAvailability(change: NodeAvailability): void;
  /** Pass as the store's `onDeadLetter`. */
  onDeadLetter(shard: number): void;
}

/**
 * `<prefix>redis_unreachable_nodes` (the Redis nodes this process cannot reach now: an alert on
 * it fires during an outage, whichever role sees it) and `<prefix>dead_letters_total{shard}` (what
 * this process refused and recorded in a shard's dead-letter stream).
 */
export function redisMetrics(registry: Registry, prefix: string): RedisMetrics {
  const down = new Set<string>();
  const unreachable = new Gauge({
    name: `${prefix}redis_unreachable_nodes`,
    help: 'Redis nodes this process cannot reach now (a single server counts as one)',
    registers: [registry],
  });
  unreachable.set(0);
  const deadLetters = new Counter({
    name: `${prefix}dead_letters_total`,
    help: 'Entries this process refused and recorded as dead letters, by shard',
    labelNames: ['shard'],
    registers: [registry],
  });
  return {
    onAvailability(change) {
      const node = change.node ?? '';
      if (change.available) down.delete(node);
      else down.add(node);
      unreachable.set(down.size);
    },
    onDeadLetter(shard) {
      deadLetters.inc({ shard: String(shard) });
    },
  };
}
