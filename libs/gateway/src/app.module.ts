import { Module, type DynamicModule } from '@nestjs/common';
import { AuthModule } from './auth/auth.module';
import { CommandsModule } from './commands/commands.module';
import { ConfigModule } from './config.module';
import { HealthModule } from './health/health.module';
import type { Logger } from './logger';
import type { GatewayMetrics } from './metrics/metrics';
import type { ResolvedOptions } from './options';
import { PageModule } from './page/page.module';
import { RestModule } from './rest/rest.module';
import { StoreModule } from './store.module';
import { WebSocketModule } from './ws/ws.module';

/** The gateway: one module per capability, each in its own file beside what it provides. */
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
        WebSocketModule,
        RestModule,
        HealthModule,
        PageModule,
      ],
    };
  }
}
