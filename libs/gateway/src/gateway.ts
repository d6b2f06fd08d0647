import { builtinProfiles } from '@baton/config';
import { serviceLogger } from '@baton/health';
import { quietDuringOutages } from '@baton/store';
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { NestPinoLogger } from './logger';
import { GatewayMetrics } from './metrics/metrics';
import {
  DEFAULTS,
  SERVICES,
  hardMaxMessageBytes,
  type GatewayOptions,
  type ResolvedOptions,
} from './options';
import { HttpErrors, type HttpResponse } from './rest/http-errors';
import { AhpGateway } from './ahp/ahp.gateway';
import { Authenticator } from './auth/auth';
import type { Services } from './ws/client-connection';
import { ConnectionRegistry } from './ws/connection';
import { TenantLimits } from './ws/tenant-limits';
import { BatonWsAdapter } from './ws/ws-adapter';
import { WsGateway } from './ws/ws.gateway';
import { UpdateHub } from './updates/update-hub';

export type { GatewayOptions } from './options';

export interface GatewayHandle {
  /** `http://host:port`; the WebSockets are `ws://host:port/ws` and `/ahp`. */
  url: string;
  port: number;
  /** The writer instance of the commands it appends (unique per start). */
  instance: string;
  metrics: GatewayMetrics;
  /** Closes every connection (1001), stops listening, and closes Redis. */
  stop(): Promise<void>;
}

export function resolveOptions(o: GatewayOptions): ResolvedOptions {
  if (!o.jwtSecret || o.jwtSecret.length < 32) {
    throw new Error('jwtSecret must be at least 32 characters');
  }
  const host = hostname()
    .replace(/[^A-Za-z0-9_.-]/g, '-')
    .slice(0, 40);
  const instanceId = o.instanceId ?? `gateway-${host}-${process.pid}`;
  const maxMessageBytes = o.maxMessageBytes ?? DEFAULTS.maxMessageBytes;
  return {
    redisUrl: o.redisUrl,
    prefix: o.prefix ?? DEFAULTS.prefix,
    shards: o.shards ?? DEFAULTS.shards,
    host: o.host ?? DEFAULTS.host,
    port: o.port ?? DEFAULTS.port,
    jwtSecret: o.jwtSecret,
    jwtIssuer: o.jwtIssuer,
    instanceId,
    // A restarted process must never reuse the writer seqs of its predecessor.
    writerInstance: `${instanceId}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`,
    admissionWaitMs: o.admissionWaitMs ?? DEFAULTS.admissionWaitMs,
    storeTimeoutMs: o.storeTimeoutMs ?? DEFAULTS.storeTimeoutMs,
    ackReplicas: o.ackReplicas ?? DEFAULTS.ackReplicas,
    maxMessageBytes,
    hardMaxMessageBytes: hardMaxMessageBytes(maxMessageBytes),
    maxSubscriptions: o.maxSubscriptions ?? DEFAULTS.maxSubscriptions,
    maxConnectionsPerTenant: o.maxConnectionsPerTenant ?? DEFAULTS.maxConnectionsPerTenant,
    maxSubscriptionsPerTenant: o.maxSubscriptionsPerTenant ?? DEFAULTS.maxSubscriptionsPerTenant,
    viewCacheBytes: o.viewCacheBytes ?? DEFAULTS.viewCacheBytes,
    cacheIdleMs: o.cacheIdleMs ?? DEFAULTS.cacheIdleMs,
    tailLingerMs: o.tailLingerMs ?? DEFAULTS.tailLingerMs,
    maxMessagesPerSecond: o.maxMessagesPerSecond ?? DEFAULTS.maxMessagesPerSecond,
    maxRequestsPerSecond: o.maxRequestsPerSecond ?? DEFAULTS.maxRequestsPerSecond,
    maxBufferedBytes: o.maxBufferedBytes ?? DEFAULTS.maxBufferedBytes,
    heartbeatMs: o.heartbeatMs ?? DEFAULTS.heartbeatMs,
    idleTimeoutMs: o.idleTimeoutMs ?? DEFAULTS.idleTimeoutMs,
    headersTimeoutMs: o.headersTimeoutMs ?? DEFAULTS.headersTimeoutMs,
    maxStoredBytesPerTenant: o.maxStoredBytesPerTenant ?? DEFAULTS.maxStoredBytesPerTenant,
    storedWindowMs: o.storedWindowMs ?? DEFAULTS.storedWindowMs,
    logLevel: o.logLevel ?? DEFAULTS.logLevel,
    store: o.store,
    profiles: o.profiles ?? builtinProfiles(),
  };
}

/**
 * Starts a gateway: WebSockets (/ws, /ahp), REST (/v1/...), /healthz, /readyz, /metrics and
 * /openapi.json on one port. Holds no state another gateway needs: any number run side by side.
 */
export async function startGateway(options: GatewayOptions): Promise<GatewayHandle> {
  const opts = resolveOptions(options);
  const log = serviceLogger('gateway', opts.instanceId, opts.logLevel, {
    logMethod: quietDuringOutages,
  });
  const metrics = new GatewayMetrics();
  const nestLogger = new NestPinoLogger(log);
  const app = await NestFactory.create<NestExpressApplication>(
    AppModule.forRoot(opts, log, metrics),
    { logger: nestLogger, bodyParser: false, forceCloseConnections: true },
  );
  app.useBodyParser('json', { limit: opts.maxMessageBytes });
  const hub = app.get(UpdateHub);
  metrics.followUpdateTails(() => ({
    shards: hub.tailedShards.length,
    decoded: hub.decoded,
    reads: hub.tailReads,
  }));
  app.useGlobalFilters(new HttpErrors(log));
  app.use(
    (
      req: { method: string; route?: { path?: string }; path?: string },
      res: HttpResponse & { statusCode: number; on(e: 'finish', f: () => void): void },
      next: () => void,
    ) => {
      res.on('finish', () => {
        const route = req.route?.path ?? 'unmatched';
        metrics.httpRequests.inc({
          route: `${req.method} ${route}`,
          status: String(res.statusCode),
        });
      });
      next();
    },
  );
  app.useWebSocketAdapter(
    new BatonWsAdapter(
      app.getHttpServer(),
      app.get<string, Services>(SERVICES),
      app.get(ConnectionRegistry),
      app.get(Authenticator),
      app.get(TenantLimits),
      [app.get(WsGateway), app.get(AhpGateway)],
    ),
  );
  // No enableShutdownHooks: with no signals named, Nest listens to every one and re-raises it
  // after closing, which kills a process that hosts more than the gateway (the one-process run)
  // before its worker and projector stop. main.ts and the embedding process handle signals.

  // A client that never finishes its headers (a half-open upgrade) holds a socket before any
  // token or tenant limit is checked; Node's defaults let it for 60 s, checked every 30 s.
  const server: Server = app.getHttpServer();
  server.headersTimeout = opts.headersTimeoutMs;
  server.requestTimeout = Math.max(server.requestTimeout, opts.headersTimeoutMs);
  // Typed only as a createServer option; Node reads the property at listen.
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval =
    Math.min(1_000, Math.ceil(opts.headersTimeoutMs / 4));
  await app.listen(opts.port, opts.host);
  const port = (app.getHttpServer().address() as AddressInfo).port;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  log.info({ port, host: opts.host, writer: opts.writerInstance }, 'gateway listening');
  let stopping: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    port,
    instance: opts.writerInstance,
    metrics,
    stop: () =>
      (stopping ??= (async () => {
        app.get(ConnectionRegistry).closeAll(1001, 'server shutting down');
        await app.close();
        await new Promise<void>((r) => log.flush(() => r()));
      })()),
  };
}
