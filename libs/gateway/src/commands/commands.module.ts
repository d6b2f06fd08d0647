import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import type { EventStore } from '@baton/store';
import type { Logger } from '../logger';
import { GatewayMetrics } from '../metrics/metrics';
import { LOGGER, OPTIONS, STORE, type ResolvedOptions } from '../options';
import { Executions } from '../rest/executions';
import { UpdateHub } from '../updates/update-hub';
import { CommandWriter } from './command-writer';
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
      provide: CommandWriter,
      inject: [STORE, OPTIONS],
      useFactory: (store: EventStore, o: ResolvedOptions) =>
        new CommandWriter(store, o.writerInstance, o.storeTimeoutMs, {
          bytes: o.maxStoredBytesPerTenant,
          windowMs: o.storedWindowMs,
        }),
    },
    {
      provide: Executions,
      inject: [STORE, OPTIONS, CommandWriter, LOGGER],
      useFactory: (store: EventStore, o: ResolvedOptions, writer: CommandWriter, log: Logger) =>
        new Executions(store, o.prefix, o.profiles, writer, log),
    },
    {
      provide: Commands,
      inject: [CommandWriter, STORE, UpdateHub, OPTIONS, GatewayMetrics, Executions, LOGGER],
      useFactory: (
        writer: CommandWriter,
        store: EventStore,
        hub: UpdateHub,
        o: ResolvedOptions,
        m: GatewayMetrics,
        executions: Executions,
        log: Logger,
      ) => new Commands(writer, store, hub, o.admissionWaitMs, m, executions, log),
    },
    ExecutionsShutdown,
  ],
  exports: [Commands, Executions],
})
export class CommandsModule {}
