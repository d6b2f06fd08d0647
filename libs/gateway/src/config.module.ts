import { Global, Module, type DynamicModule } from '@nestjs/common';
import type { Logger } from './logger';
import { GatewayMetrics } from './metrics/metrics';
import { LOGGER, OPTIONS, type ResolvedOptions } from './options';

/** Settings, log and metrics: everything else is built from these. */
@Global()
@Module({})
export class ConfigModule {
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
