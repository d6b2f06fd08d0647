import { ServiceMetrics } from '@baton/health';

export type Endpoint = 'ws' | 'ahp';

/** The gateway's Prometheus metrics, in a registry of its own (several gateways may share a process). */
export class GatewayMetrics extends ServiceMetrics {
  readonly connections = this.gauge('baton_gateway_connections', 'Open WebSocket connections', [
    'endpoint',
  ]);
  readonly messages = this.counter(
    'baton_gateway_messages_total',
    'Client messages received, by endpoint and type (op or method; "invalid" when unreadable)',
    ['endpoint', 'type'],
  );
  readonly errors = this.counter(
    'baton_gateway_errors_total',
    'Errors answered to clients, by code',
    ['code'],
  );
  /** Counted on the fan-out hot path as a plain number; the counter takes it at each scrape. */
  delivered = 0;
  readonly updatesDelivered = this.totalCounter(
    'baton_gateway_updates_delivered_total',
    'Updates sent to subscribers (one per subscriber)',
    () => this.delivered,
  );
  readonly resyncs = this.counter(
    'baton_gateway_resyncs_total',
    'Snapshots sent because updates were no longer retained, the client fell behind or Redis lost writes',
    ['reason'],
  );
  readonly admissionWait = this.histogram(
    'baton_gateway_admission_wait_seconds',
    'From a prompt command appended to its decision received (or the wait given up)',
    ['outcome'],
    [0.001, 0.002, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5],
  );
  readonly httpRequests = this.counter(
    'baton_gateway_http_requests_total',
    'REST requests, by route and status',
    ['route', 'status'],
  );

  /** What the update hub reads: set by {@link followUpdateTails}. */
  private tails: () => { shards: number; decoded: number; reads: number } = () => ({
    shards: 0,
    decoded: 0,
    reads: 0,
  });
  readonly tailedShards = this.gauge(
    'baton_gateway_update_shards_tailed',
    'Shards whose update stream this gateway reads (those its clients watch)',
    [],
    (g) => g.set(this.tails().shards),
  );
  readonly updatesDecoded = this.totalCounter(
    'baton_gateway_updates_decoded_total',
    'Updates read and decoded from the tailed shards (each once, however many watch it)',
    () => this.tails().decoded,
  );
  readonly tailReads = this.totalCounter(
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
