import {
  Global,
  Inject,
  Injectable,
  Module,
  type DynamicModule,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { EventStore, logAvailability, redisTargetFromUrl } from '@baton/store';
import { AhpGateway } from './ahp/ahp.gateway';
import { Authenticator } from './auth/auth';
import { RestAuthGuard } from './auth/rest-auth.guard';
import { Commands } from './commands/commands';
import { HealthController } from './health/health.controller';
import { History } from './history/history';
import type { Logger } from './logger';
import { GatewayMetrics } from './metrics/metrics';
import { LOGGER, OPTIONS, SERVICES, STORE, type ResolvedOptions } from './options';
import { PageModule } from './page/page.module';
import { Executions } from './rest/executions';
import { BoardController } from './rest/board.controller';
import { TasksController } from './rest/tasks.controller';
import { Tenancy } from './tenancy';
import { HostLog } from './ahp/host-log';
import { UpdateHub } from './updates/update-hub';
import type { Services } from './ws/client-connection';
import { ClientGateway } from './ws/client.gateway';
import { ConnectionRegistry } from './ws/connection';
import { TenantLimits } from './ws/tenant-limits';

/** Settings, log and metrics: everything else is built from these. */
@Global()
@Module({})
class ConfigModule {
  static forRoot(opts: ResolvedOptions, log: Logger, metrics: GatewayMetrics): DynamicModule {
    return {
      module: ConfigModule,
      providers: [
        { provide: OPTIONS, useValue: opts },
        { provide: LOGGER, useValue: log },
        { provide: GatewayMetrics, useValue: metrics },
      ],
      exports: [OPTIONS, LOGGER, GatewayMetrics],
    };
  }
}

@Injectable()
class StoreShutdown implements OnApplicationShutdown {
  constructor(
    @Inject(STORE) private readonly store: EventStore,
    @Inject(UpdateHub) private readonly hub: UpdateHub,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.hub.stop();
    await this.store.close();
  }
}

/** Redis: the event store, the one update tail of the process, tenancy. */
@Global()
@Module({
  providers: [
    {
      provide: STORE,
      inject: [OPTIONS, LOGGER],
      useFactory: (o: ResolvedOptions, log: Logger) =>
        EventStore.connect(
          redisTargetFromUrl(o.redisUrl),
          {
            shards: o.shards,
            prefix: o.prefix,
            // WAIT within the request's bound, with room left for the reply.
            ackReplicas: o.ackReplicas,
            ackTimeoutMs: Math.floor(o.storeTimeoutMs / 2),
            ...o.store,
          },
          {
            connectionName: `baton-${o.writerInstance}`,
            commandTimeoutMs: o.storeTimeoutMs,
            onAvailability: logAvailability(log),
          },
        ),
    },
    {
      provide: UpdateHub,
      inject: [STORE, LOGGER, OPTIONS],
      // The tail starts before the server listens: every update after this point reaches it.
      useFactory: async (store: EventStore, log: Logger, o: ResolvedOptions) => {
        const hub = new UpdateHub(store, log, o.viewCacheBytes);
        await hub.start();
        return hub;
      },
    },
    { provide: Tenancy, inject: [STORE], useFactory: (store: EventStore) => new Tenancy(store) },
    StoreShutdown,
  ],
  exports: [STORE, UpdateHub, Tenancy],
})
class StoreModule {}

/** Bearer tokens (HS256 JWT) for the WebSocket upgrades and REST. */
@Global()
@Module({
  providers: [
    {
      provide: Authenticator,
      inject: [OPTIONS],
      useFactory: (o: ResolvedOptions) => new Authenticator(o.jwtSecret, o.jwtIssuer),
    },
    RestAuthGuard,
  ],
  exports: [Authenticator, RestAuthGuard],
})
class AuthModule {}

@Injectable()
class ExecutionsShutdown implements OnApplicationShutdown {
  constructor(@Inject(Executions) private readonly executions: Executions) {}
  async onApplicationShutdown(): Promise<void> {
    await this.executions.close();
  }
}

/** Prompts, queue and session commands, and agent executions. */
@Module({
  providers: [
    {
      provide: Commands,
      inject: [STORE, UpdateHub, OPTIONS, GatewayMetrics],
      useFactory: (store: EventStore, hub: UpdateHub, o: ResolvedOptions, m: GatewayMetrics) =>
        new Commands(store, hub, o.writerInstance, o.admissionWaitMs, m, o.storeTimeoutMs),
    },
    {
      provide: Executions,
      inject: [STORE, OPTIONS, Commands, LOGGER],
      useFactory: (store: EventStore, o: ResolvedOptions, commands: Commands, log: Logger) =>
        new Executions(store, o.prefix, o.profiles, commands, log),
    },
    ExecutionsShutdown,
  ],
  exports: [Commands, Executions],
})
class CommandsModule {}

/** What both WebSocket endpoints share: the connection registry and the services they use. */
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
        Executions,
        GatewayMetrics,
        LOGGER,
        TenantLimits,
        STORE,
      ],
      useFactory: (
        opts: ResolvedOptions,
        hub: UpdateHub,
        tenancy: Tenancy,
        commands: Commands,
        executions: Executions,
        metrics: GatewayMetrics,
        log: Logger,
        limits: TenantLimits,
        store: EventStore,
      ): Services => ({
        opts,
        hub,
        tenancy,
        commands,
        executions,
        metrics,
        log,
        limits,
        ahpLog: new HostLog(store.redis, opts.prefix),
      }),
    },
  ],
  exports: [ConnectionRegistry, SERVICES, TenantLimits],
})
class ConnectionsModule {}

/** /ws: subscriptions, prompts and queue operations over Baton's own protocol. */
@Module({ imports: [ConnectionsModule], providers: [ClientGateway] })
class ClientWsModule {}

/** /ahp: the AHP-compatible chat channel. */
@Module({ imports: [ConnectionsModule], providers: [AhpGateway] })
class AhpModule {}

/** REST read models and commands. */
@Module({
  imports: [CommandsModule],
  controllers: [TasksController, BoardController],
  providers: [{ provide: History, inject: [STORE], useFactory: (s: EventStore) => new History(s) }],
})
class RestModule {}

/** /healthz, /readyz, /metrics, /openapi.json. */
@Module({ controllers: [HealthController] })
class HealthModule {}

@Module({})
export class AppModule {
  static forRoot(opts: ResolvedOptions, log: Logger, metrics: GatewayMetrics): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(opts, log, metrics),
        StoreModule,
        AuthModule,
        CommandsModule,
        ConnectionsModule,
        ClientWsModule,
        AhpModule,
        RestModule,
        HealthModule,
        PageModule,
      ],
    };
  }
}
