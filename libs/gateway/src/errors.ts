import type { ErrorCode, WireError } from '@baton/protocol';
import { isUnavailableError } from '@baton/store';
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
  // The world's, not a bug: the store's availability is logged once per outage where it is
  // watched (logAvailability), not once per failed request.
  if (isUnavailableError(err)) {
    return {
      error: { code: 'unavailable', message: 'the store is unavailable; try again' },
      internal: false,
    };
  }
  return { error: { code: 'internal', message: 'internal error' }, internal: true };
}
