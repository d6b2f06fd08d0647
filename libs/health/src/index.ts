/**
 * The small HTTP server of the projector and the worker (the gateway serves its own through
 * NestJS): `/metrics` for Prometheus, `/healthz` for the orchestrator. /healthz answers 200 `ok`
 * while the process's own check finds nothing wrong, and 503 `unhealthy: <reason>` otherwise (a
 * check that throws or takes longer than `checkTimeoutMs` is a reason too): the cue to restart it.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/** What is wrong, in a few words; null: healthy. */
export type HealthCheck = () => string | null | Promise<string | null>;

export interface HealthServerOptions {
  registry: Registry;
  /** 0 picks a free port. */
  port: number;
  check: HealthCheck;
  /** A check that has not answered after this long is a failure (default 2 s)... */
  checkTimeoutMs?: number;
  /** ...with this reason (default: the check did not answer in time). */
  timeoutReason?: string;
  /** Default 0.0.0.0: a container's probe and Prometheus come from outside. */
  host?: string;
}

export interface HealthServer {
  readonly server: Server;
  /** The bound port. */
  readonly port: number;
  /** Stops listening and closes open connections. */
  close(): Promise<void>;
}

/**
 * `p`'s value, or `fallback` when it has not settled within `ms`: a wait on Redis that must not
 * outlast its caller's own bound (a scrape, a request). A rejection within `ms` is passed on.
 */
export async function within<T, F>(p: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<F>((resolve) => {
        timer = setTimeout(resolve, ms, fallback);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs `check`, bounded: its reason, or null when healthy. */
export async function runCheck(
  check: HealthCheck,
  timeoutMs = 2_000,
  timeoutReason = `the health check did not answer within ${timeoutMs} ms`,
): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      Promise.resolve().then(check),
      new Promise<string>((r) => {
        timer = setTimeout(() => r(timeoutReason), timeoutMs);
      }),
    ]);
  } catch (err) {
    return `health check failed: ${err instanceof Error ? err.message : String(err)}`;
  } finally {
    clearTimeout(timer);
  }
}

/** Serves /metrics and /healthz on `port`; resolves once it listens. */
export async function serveHealth(o: HealthServerOptions): Promise<HealthServer> {
  const text = (res: ServerResponse, status: number, body: string) => {
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end(body);
  };
  const server = createServer((req, res) => {
    if (req.url === '/metrics' || req.url?.startsWith('/metrics?')) {
      o.registry.metrics().then(
        (body) => {
          res.writeHead(200, { 'content-type': o.registry.contentType });
          res.end(body);
        },
        (err: unknown) => text(res, 500, String(err)),
      );
      return;
    }
    if (req.url === '/healthz') {
      void runCheck(o.check, o.checkTimeoutMs, o.timeoutReason).then((reason) =>
        reason === null ? text(res, 200, 'ok\n') : text(res, 503, `unhealthy: ${reason}\n`),
      );
      return;
    }
    text(res, 404, 'not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host ?? '0.0.0.0', () => resolve());
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Keep-alive connections (Prometheus scrapes) would hold close() open.
        server.closeAllConnections();
      }),
  };
}

export { serviceLogger, type Logger } from './logger';
export { runMain, stopOnSignals } from './process';
export { redisMetrics, type NodeAvailability, type RedisMetrics } from './redis-metrics';
export { ServiceMetrics } from './service-metrics';
export {
  contextOf,
  inSpan,
  startSpan,
  startTracing,
  traceLogFields,
  traceparentOf,
  tracingConfigured,
} from './tracing';
