import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import type { EventStore } from '@baton/store';
import type { Logger } from '../logger';
import { GatewayMetrics } from '../metrics/metrics';
import { LOGGER, OPTIONS, STORE, type ResolvedOptions } from '../options';
import { Executions } from '../rest/executions';
import { UpdateHub } from '../updates/update-hub';
import { Commands } from './commands';

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
export class CommandsModule {}
