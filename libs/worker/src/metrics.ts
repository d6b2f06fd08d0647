import { createServer, type Server } from 'node:http';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

/** What a worker exposes to Prometheus. */
export class WorkerMetrics {
  readonly registry = new Registry();
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

  constructor(instance: string) {
    this.registry.setDefaultLabels({ instance });
    collectDefaultMetrics({ register: this.registry, prefix: 'baton_worker_' });
  }
}

/**
 * Serves /metrics and /healthz (200 while the worker takes jobs and Redis answers, 503 otherwise:
 * the orchestrator's cue to restart it). Resolves with the bound port.
 */
export async function serveHealth(
  metrics: WorkerMetrics,
  port: number,
  healthy: () => Promise<boolean>,
): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    if (req.url === '/metrics' || req.url?.startsWith('/metrics?')) {
      metrics.registry.metrics().then(
        (body) => {
          res.writeHead(200, { 'content-type': metrics.registry.contentType });
          res.end(body);
        },
        (err: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(String(err));
        },
      );
      return;
    }
    if (req.url === '/healthz') {
      healthy().then(
        (ok) => {
          res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' });
          res.end(ok ? 'ok\n' : 'unhealthy\n');
        },
        () => {
          res.writeHead(503, { 'content-type': 'text/plain' });
          res.end('unhealthy\n');
        },
      );
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '0.0.0.0', () => resolve());
  });
  const address = server.address();
  return { server, port: typeof address === 'object' && address ? address.port : port };
}
