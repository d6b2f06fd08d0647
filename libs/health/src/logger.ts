import { quietDuringOutages } from '@baton/store';
import pino, { type Logger } from 'pino';
import { traceLogFields } from './tracing';

export type { Logger };

/**
 * A service process's log: JSON lines on stdout, every line naming the role and the instance.
 * `sync` writes each line before the call returns, so that it is on record even if the process is
 * killed right after (the projector's lease changes).
 */
export function serviceLogger(
  role: string,
  instance: string,
  level: string,
  { sync = false }: { sync?: boolean } = {},
): Logger {
  const options = {
    level,
    base: { role, instance, pid: process.pid },
    hooks: { logMethod: quietDuringOutages },
    // Lines written under a traced prompt name its trace.
    mixin: traceLogFields,
  };
  return sync ? pino(options, pino.destination({ dest: 1, sync: true })) : pino(options);
}
