import { Controller, Get, Header, Inject, Res } from '@nestjs/common';
import type { EventStore } from '@baton/store';
import { GatewayMetrics } from '../metrics/metrics';
import { STORE } from '../options';
import type { HttpResponse } from '../rest/http-errors';
import { UpdateHub } from '../updates/update-hub';
import { openApiDocument } from '../rest/openapi';

const PING_TIMEOUT_MS = 1_000;

/** Liveness, readiness, metrics and the API document: no authentication. */
@Controller()
export class HealthController {
  private readonly openapi = openApiDocument();

  constructor(
    @Inject(STORE) private readonly store: EventStore,
    @Inject(GatewayMetrics) private readonly metrics: GatewayMetrics,
    @Inject(UpdateHub) private readonly hub: UpdateHub,
  ) {}

  @Get('healthz')
  healthz() {
    return { status: 'ok' };
  }

  /** Ready when Redis answers, the update tail follows every shard and each has an owner. */
  @Get('readyz')
  async readyz(@Res() res: HttpResponse): Promise<void> {
    const shards = this.store.keys.shards;
    let redis: 'ok' | 'unreachable' = 'ok';
    let owned = 0;
    let unowned: number[] = [];
    try {
      await withTimeout(this.store.redis.ping(), PING_TIMEOUT_MS);
      const leases = await withTimeout(this.store.leases.list(), PING_TIMEOUT_MS);
      const held = new Set(leases.map((l) => l.shard));
      owned = held.size;
      unowned = Array.from({ length: shards }, (_, s) => s).filter((s) => !held.has(s));
    } catch {
      redis = 'unreachable';
    }
    const updates = this.hub.started ? 'following' : 'starting';
    const ready = redis === 'ok' && updates === 'following' && owned === shards;
    res.status(ready ? 200 : 503).json({
      status: ready ? 'ready' : 'not_ready',
      redis,
      updates,
      shards: { total: shards, owned, unowned: unowned.slice(0, 20) },
    });
  }

  @Get('metrics')
  async metricsText(@Res() res: HttpResponse): Promise<void> {
    res.type(this.metrics.registry.contentType).send(await this.metrics.registry.metrics());
  }

  @Get('openapi.json')
  @Header('Cache-Control', 'no-cache')
  openApi() {
    return this.openapi;
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      t = setTimeout(() => reject(new Error('timeout')), ms);
    }),
  ]).finally(() => clearTimeout(t));
}
