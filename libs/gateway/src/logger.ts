import type { Logger } from '@baton/health';
import type { LoggerService } from '@nestjs/common';

export type { Logger };

/** Nest's own messages go to the same structured log, at debug for its routine chatter. */
export class NestPinoLogger implements LoggerService {
  constructor(private readonly out: Logger) {}
  log(message: unknown, context?: string) {
    this.out.debug({ context }, String(message));
  }
  error(message: unknown, trace?: string, context?: string) {
    this.out.error({ context, trace }, String(message));
  }
  warn(message: unknown, context?: string) {
    this.out.warn({ context }, String(message));
  }
  debug(message: unknown, context?: string) {
    this.out.debug({ context }, String(message));
  }
  verbose(message: unknown, context?: string) {
    this.out.trace({ context }, String(message));
  }
}
