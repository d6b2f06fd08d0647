import { traceLogFields } from '@baton/health';
import { quietDuringOutages } from '@baton/store';
import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * JSON lines on stdout, every line naming the instance. Written synchronously: a lease change is
 * on record before anything is written under it, even if the process is killed right after.
 */
export function createLogger(instance: string, level: string): Logger {
  return pino(
    {
      level,
      base: { role: 'projector', instance, pid: process.pid },
      hooks: { logMethod: quietDuringOutages },
      // Lines written under a traced prompt name its trace.
      mixin: traceLogFields,
    },
    pino.destination({ dest: 1, sync: true }),
  );
}
