import { traceLogFields } from '@baton/health';
import { quietDuringOutages } from '@baton/store';
import pino, { type Logger } from 'pino';

export type { Logger };

/** JSON lines on stdout, every line naming the instance. */
export function createLogger(instance: string, level: string): Logger {
  return pino({
    level,
    base: { role: 'worker', instance, pid: process.pid },
    hooks: { logMethod: quietDuringOutages },
    // Lines written under a traced prompt name its trace.
    mixin: traceLogFields,
  });
}
