import pino, { type Logger, type LoggerOptions } from 'pino';
import { traceLogFields } from './tracing';

export type { Logger };

export interface ServiceLoggerOptions {
  /**
   * Each line is written before the call returns, so that it is on record even if the process is
   * killed right after (the projector's lease changes).
   */
  sync?: boolean;
  /**
   * pino's hook on every record: the services pass the store's `quietDuringOutages`. Passed in,
   * not imported: the apps load this lib to start tracing before anything loads ioredis (the
   * tracing instrumentation patches it as it is required), and the store loads ioredis.
   */
  logMethod?: NonNullable<LoggerOptions['hooks']>['logMethod'];
}

/** A service process's log: JSON lines on stdout, every line naming the role and the instance. */
export function serviceLogger(
  role: string,
  instance: string,
  level: string,
  { sync = false, logMethod }: ServiceLoggerOptions = {},
): Logger {
  const options: LoggerOptions = {
    level,
    base: { role, instance, pid: process.pid },
    ...(logMethod ? { hooks: { logMethod } } : {}),
    // Lines written under a traced prompt name its trace.
    mixin: traceLogFields,
  };
  return sync ? pino(options, pino.destination({ dest: 1, sync: true })) : pino(options);
}
