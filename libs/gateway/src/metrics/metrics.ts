import { ServiceMetrics } from '@baton/health';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export type Endpoint = 'ws' | 'ahp';

/** The gateway's Prometheus metrics, in a registry of its own (several gateways may share a process). */
export class GatewayMetrics extends ServiceMetrics {
  readonly connections = new Gauge({
    name: 'baton_gateway_connections',
    help: 'Open WebSocket connections',
    labelNames: ['endpoint'] as const,
    registers: [this.registry],
  });
  readonly messages = new Counter({
    name: 'baton_gateway_messages_total',
    help: 'Client messages received, by endpoint and type (op or method; "invalid" when unreadable)',
    labelNames: ['endpoint', 'type'] as const,
    registers: [this.registry],
  });
  readonly errors = new Counter({
    name: 'baton_gateway_errors_total',
    help: 'Errors answered to clients, by code',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });
  /** Counted on the fan-out hot path as a plain number; the counter takes it at each scrape. */
  delivered = 0;
  readonly updatesDelivered = totalCounter(
    this.registry,
    'baton_gateway_updates_delivered_total',
    'Updates sent to subscribers (one per subscriber)',
    () => this.delivered,
  );
  readonly resyncs = new Counter({
    name: 'baton_gateway_resyncs_total',
    help: 'Snapshots sent because updates were no longer retained, the client fell behind or Redis lost writes',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly admissionWait = new Histogram({
    name: 'baton_gateway_admission_wait_seconds',
    help: 'From a prompt command appended to its decision received (or the wait given up)',
    labelNames: ['outcome'] as const,
    buckets: [0.001, 0.002, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5],
    registers: [this.registry],
  });
  readonly httpRequests = new Counter({
    name: 'baton_gateway_http_requests_total',
    help: 'REST requests, by route and status',
    labelNames: ['route', 'status'] as const,
    registers: [this.registry],
  });

  /** What the update hub reads: set by {@link followUpdateTails}. */
  private tails: () => { shards: number; decoded: number; reads: number } = () => ({
    shards: 0,
    decoded: 0,
    reads: 0,
  });
  readonly tailedShards: Gauge = new Gauge({
    name: 'baton_gateway_update_shards_tailed',
    help: 'Shards whose update stream this gateway reads (those its clients watch)',
    registers: [this.registry],
    collect: () => this.tailedShards.set(this.tails().shards),
  });
  readonly updatesDecoded = totalCounter(
    this.registry,
    'baton_gateway_updates_decoded_total',
    'Updates read and decoded from the tailed shards (each once, however many watch it)',
    () => this.tails().decoded,
  );
  readonly tailReads = totalCounter(
    this.registry,
    'baton_gateway_update_tail_reads_total',
    'Blocking reads (XREAD) of update streams sent',
    () => this.tails().reads,
  );

  /** The update hub's reads, taken at each scrape. */
  followUpdateTails(read: () => { shards: number; decoded: number; reads: number }): void {
    this.tails = read;
  }

  constructor() {
    super('baton_gateway_');
  }
}

/**
 * A counter of a running total kept elsewhere as a plain number (off the hot path's way): at
 * each scrape it adds what the total grew by since the last.
 */
function totalCounter(
  registry: Registry,
  name: string,
  help: string,
  total: () => number,
): Counter {
  let reported = 0;
  const counter: Counter = new Counter({
    name,
    help,
    registers: [registry],
    collect: () => {
      const now = total();
      counter.inc(now - reported);
      reported = now;
    },
  });
  return counter;
}
