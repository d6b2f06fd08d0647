import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { ErrorCode, WireError } from '@baton/protocol';
import { toWireError } from '../errors';
import type { Logger } from '../logger';

export const STATUS_OF: Record<ErrorCode, number> = {
  invalid_message: 400,
  message_too_large: 413,
  prompt_too_long: 400,
  rate_limited: 429,
  too_many_subscriptions: 429,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  unavailable: 503,
  internal: 500,
};

/** Nest's HttpException, by shape: the platform adapter may come from another copy of @nestjs/common. */
interface HttpExceptionLike {
  getStatus(): number;
  getResponse(): unknown;
  message: string;
}

function isHttpException(err: unknown): err is HttpExceptionLike {
  return (
    err instanceof Error &&
    typeof (err as Partial<HttpExceptionLike>).getStatus === 'function' &&
    typeof (err as Partial<HttpExceptionLike>).getResponse === 'function'
  );
}

function fromHttp(e: HttpExceptionLike): WireError {
  const status = e.getStatus();
  const code: ErrorCode =
    status === 404
      ? 'not_found'
      : status === 413
        ? 'message_too_large'
        : status === 401
          ? 'unauthorized'
          : status === 403
            ? 'forbidden'
            : status === 409
              ? 'conflict'
              : status < 500
                ? 'invalid_message'
                : 'internal';
  const body = e.getResponse();
  const message =
    typeof body === 'object' && body && 'message' in body
      ? String((body as { message: unknown }).message)
      : e.message;
  return { code, message };
}

/** The part of express's response the REST layer uses (express ships no types here). */
export interface HttpResponse {
  status(code: number): HttpResponse;
  json(body: unknown): void;
  setHeader(name: string, value: string): void;
  type(t: string): HttpResponse;
  send(body: string): void;
}

/** Every REST error is `{ error: { code, message, path? } }` with the status of its code. */
@Catch()
export class HttpErrors implements ExceptionFilter {
  constructor(private readonly log: Logger) {}

  catch(err: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<HttpResponse>();
    let error: WireError;
    if (isHttpException(err)) error = fromHttp(err);
    else {
      const w = toWireError(err);
      if (w.internal) this.log.error({ err }, 'request failed');
      error = w.error;
    }
    const status = STATUS_OF[error.code];
    if (status === 401) res.setHeader('WWW-Authenticate', 'Bearer');
    res.status(status).json({ error });
  }
}
