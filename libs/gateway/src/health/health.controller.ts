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
  /** Whether Redis has answered a readiness check since the gateway started. */
  private reachedRedis = false;

  constructor(
    @Inject(STORE) private readonly store: EventStore,
    @Inject(GatewayMetrics) private readonly metrics: GatewayMetrics,
    @Inject(UpdateHub) private readonly hub: UpdateHub,
  ) {}

  @Get('healthz')
  healthz() {
    return { status: 'ok' };
  }

  /**
   * Ready when the update tail follows, and an owner holds, every shard Redis answers for.
   * Each shard's lease is read on its own: on a Cluster, a lost master makes its shards
   * `unreachable` and nothing else. That alone does not make the gateway unready — every gateway
   * sees the same master gone, and taking them all out of service would stop the tasks of the
   * live masters too; `redis` says `degraded` instead. None answering is `unreachable`.
   */
  @Get('readyz')
  async readyz(@Res() res: HttpResponse): Promise<void> {
    const total = this.store.keys.shards;
    const reads = await Promise.allSettled(
      Array.from({ length: total }, (_, s) =>
        withTimeout(this.store.leases.read(s), PING_TIMEOUT_MS),
      ),
    );
    const owned: number[] = [];
    const unowned: number[] = [];
    const unreachable: number[] = [];
    reads.forEach((r, s) => {
      if (r.status === 'rejected') unreachable.push(s);
      else (r.value ? owned : unowned).push(s);
    });
    const redis =
      unreachable.length === 0 ? 'ok' : unreachable.length === total ? 'unreachable' : 'degraded';
    // Tails are placed as tasks are watched; until Redis has answered once there is none to place.
    if (redis !== 'unreachable') this.reachedRedis = true;
    const updates = this.hub.started && this.reachedRedis ? 'following' : 'starting';
    // A shard whose master is lost is placed once it is back; the rest are served meanwhile.
    const followed = Array.from({ length: total }, (_, s) => s).every(
      (s) => this.hub.follows(s) || unreachable.includes(s),
    );
    const ready = redis !== 'unreachable' && followed && unowned.length === 0;
    res.status(ready ? 200 : 503).json({
      status: ready ? 'ready' : 'not_ready',
      redis,
      updates,
      shards: {
        total,
        owned: owned.length,
        unowned: unowned.slice(0, 20),
        unreachable: unreachable.slice(0, 20),
      },
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
