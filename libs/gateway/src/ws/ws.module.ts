import { Module } from '@nestjs/common';
import type { EventStore } from '@baton/store';
import { TranscriptTail } from '../ahp/transcript-tail';
import { HostLog } from '../ahp/host-log';
import { CommandsModule } from '../commands/commands.module';
import { Commands } from '../commands/commands';
import type { Logger } from '../logger';
import { GatewayMetrics } from '../metrics/metrics';
import { LOGGER, OPTIONS, SERVICES, STORE, type ResolvedOptions } from '../options';
import { Tenancy } from '../tenancy';
import { TranscriptHub } from '../transcripts/transcript-hub';
import { UpdateHub } from '../updates/update-hub';
import type { Services } from './client-connection';
import { ConnectionRegistry } from './connection';
import { TenantLimits } from './tenant-limits';
import { AhpGateway } from '../ahp/ahp.gateway';
import { Routes } from './ws-adapter';
import { WsGateway } from './ws.gateway';

/**
 * The WebSocket gateways: /ws (subscriptions, prompts and queue operations over Baton's own
 * protocol) and /ahp (the AHP host), served by BatonWsAdapter (ws-adapter.ts).
 */
@Module({
  imports: [CommandsModule],
  providers: [
    {
      provide: ConnectionRegistry,
      inject: [OPTIONS],
      useFactory: (o: ResolvedOptions) => new ConnectionRegistry(o.heartbeatMs),
    },
    {
      provide: TenantLimits,
      inject: [OPTIONS],
      useFactory: (o: ResolvedOptions) =>
        new TenantLimits(o.maxConnectionsPerTenant, o.maxSubscriptionsPerTenant),
    },
    {
      provide: SERVICES,
      inject: [
        OPTIONS,
        UpdateHub,
        Tenancy,
        Commands,
        GatewayMetrics,
        LOGGER,
        TenantLimits,
        STORE,
        TranscriptHub,
      ],
      useFactory: (
        opts: ResolvedOptions,
        hub: UpdateHub,
        tenancy: Tenancy,
        commands: Commands,
        metrics: GatewayMetrics,
        log: Logger,
        limits: TenantLimits,
        store: EventStore,
        transcripts: TranscriptHub,
      ): Services => ({
        opts,
        hub,
        store,
        transcripts,
        tenancy,
        commands,
        metrics,
        log,
        limits,
        ahpLog: new HostLog(store.redis, opts.prefix),
        ahpTranscripts: new TranscriptTail(transcripts, store, log),
        routes: new Routes(),
      }),
    },
    WsGateway,
    AhpGateway,
  ],
  exports: [ConnectionRegistry, SERVICES, TenantLimits, WsGateway, AhpGateway],
})
export class WebSocketModule {}
