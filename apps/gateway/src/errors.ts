import type { ErrorCode, WireError } from '@baton/protocol';
import { NotFoundError } from './tenancy';

/** A failure with the wire code it answers with. */
export class WireFailure extends Error {
  override readonly name = 'WireFailure';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly path?: string,
  ) {
    super(message);
  }
}

/** Errors that are the client's or the world's, and those that are ours (logged). */
export function toWireError(err: unknown): { error: WireError; internal: boolean } {
  if (err instanceof WireFailure) {
    return {
      error: { code: err.code, message: err.message, ...(err.path ? { path: err.path } : {}) },
      internal: false,
    };
  }
  if (err instanceof NotFoundError) {
    return { error: { code: 'not_found', message: err.message }, internal: false };
  }
  if (isRedisUnavailable(err)) {
    return {
      error: { code: 'unavailable', message: 'the store is unavailable; try again' },
      internal: true,
    };
  }
  return { error: { code: 'internal', message: 'internal error' }, internal: true };
}

function isRedisUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return (
    /Connection is closed|ECONNREFUSED|ECONNRESET|ETIMEDOUT|MaxRetriesPerRequest|Stream isn't writeable|LOADING|CLUSTERDOWN|TRYAGAIN/i.test(
      err.message,
    ) || err.name === 'MaxRetriesPerRequestError'
  );
}
