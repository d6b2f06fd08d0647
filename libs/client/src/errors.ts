import type { WireError } from '@baton/protocol';

/** Codes the server sends (wire ErrorCode) plus what only the client can observe. */
export type BatonErrorCode =
  | WireError['code']
  /** The connection dropped before the reply came (the request may or may not have been done). */
  | 'disconnected'
  /** No reply within the request timeout. */
  | 'timeout'
  /** The client was closed. */
  | 'closed'
  /** The server sent something that does not match the protocol. */
  | 'protocol'
  /** A transcript reader without `onGap` lost events to the transcript's retention. */
  | 'transcript_gap';

export class BatonError extends Error {
  constructor(
    readonly code: BatonErrorCode,
    message: string,
    /** The offending field, as a dotted path, when the server named one. */
    readonly path?: string,
  ) {
    super(path ? `${code}: ${message} (at ${path})` : `${code}: ${message}`);
    this.name = 'BatonError';
  }

  static fromWire(e: WireError): BatonError {
    return new BatonError(e.code, e.message, e.path);
  }
}
