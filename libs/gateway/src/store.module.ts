import { Global, Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { EventStore, logAvailability, redisTargetFromUrl } from '@baton/store';
import type { Logger } from './logger';
import { GatewayMetrics } from './metrics/metrics';
import { LOGGER, OPTIONS, STORE, type ResolvedOptions } from './options';
import { Tenancy } from './tenancy';
import { TranscriptHub } from './transcripts/transcript-hub';
import { UpdateHub } from './updates/update-hub';

@Injectable()
class StoreShutdown implements OnApplicationShutdown {
  constructor(
    @Inject(STORE) private readonly store: EventStore,
    @Inject(UpdateHub) private readonly hub: UpdateHub,
    @Inject(TranscriptHub) private readonly transcripts: TranscriptHub,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([this.hub.stop(), this.transcripts.stop()]);
    await this.store.close();
  }
}

/** Redis: the event store, the one update tail of the process, tenancy. */
@Global()
@Module({
  providers: [
    {
      provide: STORE,
      inject: [OPTIONS, LOGGER, GatewayMetrics],
      useFactory: (o: ResolvedOptions, log: Logger, metrics: GatewayMetrics) => {
        const logged = logAvailability(log);
        return EventStore.connect(
          redisTargetFromUrl(o.redisUrl),
          {
            shards: o.shards,
            prefix: o.prefix,
            // WAIT within the request's bound, with room left for the reply.
            ackReplicas: o.ackReplicas,
            ackTimeoutMs: Math.floor(o.storeTimeoutMs / 2),
            onDeadLetter: metrics.redis.onDeadLetter,
            ...o.store,
          },
          {
            connectionName: `baton-${o.writerInstance}`,
            commandTimeoutMs: o.storeTimeoutMs,
            onAvailability: (change) => {
              logged(change);
              metrics.redis.onAvailability(change);
            },
          },
        );
      },
    },
    {
      provide: UpdateHub,
      inject: [STORE, LOGGER, OPTIONS],
      // Reads nothing until a client watches a task: each shard's tail is placed as its first
      // watcher comes, before anything is read for that watcher.
      useFactory: (store: EventStore, log: Logger, o: ResolvedOptions) => {
        const hub = new UpdateHub(store, log, o.viewCacheBytes, o.cacheIdleMs, o.tailLingerMs);
        hub.start();
        return hub;
      },
    },
    {
      provide: TranscriptHub,
      inject: [STORE, LOGGER],
      // Reads nothing until a client subscribes to a transcript.
      useFactory: (store: EventStore, log: Logger) => new TranscriptHub(store, log),
    },
    {
      provide: Tenancy,
      inject: [STORE, OPTIONS],
      useFactory: (store: EventStore, o: ResolvedOptions) => new Tenancy(store, o.cacheIdleMs),
    },
    StoreShutdown,
  ],
  exports: [STORE, UpdateHub, TranscriptHub, Tenancy],
})
export class StoreModule {}
