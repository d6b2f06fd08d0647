import { traceLogFields } from '@baton/health';
import { quietDuringOutages } from '@baton/store';
import type { LoggerService } from '@nestjs/common';
import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string, instance: string): Logger {
  return pino({
    level,
    base: { role: 'gateway', instance, pid: process.pid },
    hooks: { logMethod: quietDuringOutages },
    // Lines written under a traced prompt name its trace.
    mixin: traceLogFields,
  });
}

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
