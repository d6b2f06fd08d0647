import { AHP_ERRORS, type JsonRpcId } from '@baton/ahp';
import type { ErrorCode } from '@baton/protocol';
import type { z } from 'zod';
import { allows, type Principal } from '../auth/auth';

/** JSON-RPC 2.0 as the AHP host speaks it: its errors, params checking, ids. */
/** A JSON-RPC error, with Baton's wire error code in `data.code`. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export const CODE_OF: Partial<Record<ErrorCode, number>> = {
  invalid_message: AHP_ERRORS.InvalidParams,
  message_too_large: AHP_ERRORS.MessageTooLarge,
  rate_limited: AHP_ERRORS.RateLimited,
  too_many_subscriptions: AHP_ERRORS.TooManySubscriptions,
  unauthorized: AHP_ERRORS.AuthRequired,
  forbidden: AHP_ERRORS.PermissionDenied,
  not_found: AHP_ERRORS.NotFound,
  unavailable: AHP_ERRORS.Unavailable,
  internal: AHP_ERRORS.InternalError,
};

/**
 * The protected resource an AHP client authenticates for (`authenticate { resource, token }`) when
 * it could not put a token on the upgrade: Baton's gateway, with a Baton client token.
 */
export const AUTH_RESOURCE = 'urn:baton:gateway';
/** Its protected resource metadata (RFC 9728's shape, as AHP carries it). */
export const PROTECTED_RESOURCE = {
  resource: AUTH_RESOURCE,
  resource_name: 'Baton',
  bearer_methods_supported: ['header'],
};
export const notFound = (channel: string) =>
  new RpcError(AHP_ERRORS.NotFound, `channel not found: ${channel.slice(0, 200)}`, {
    code: 'not_found',
  });

export function params<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const i = r.error.issues[0]!;
  const path = ['params', ...i.path.map(String)].join('.');
  throw new RpcError(AHP_ERRORS.InvalidParams, `${path}: ${i.message}`, {
    code: 'invalid_message',
    path,
  });
}

export function rpcIdOf(v: unknown): JsonRpcId | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  return answerableId((v as { id?: unknown }).id);
}

/**
 * The id an answer carries: the request's, whenever it is one JSON-RPC allows (a string or a
 * number), even one Baton then refuses (longer than 200 characters, not an integer), so that
 * the client can match the error to its request. Null only when there is no such id.
 */
export function answerableId(id: unknown): JsonRpcId | null {
  if (typeof id === 'string') return id;
  if (typeof id === 'number' && Number.isFinite(id)) return id;
  return null;
}
/** Large values serialized once and shared by every message that carries them (a prompt's text). */
export const shared = (key: string) => key === 'message';

export function authRequired(): RpcError {
  return new RpcError(
    AHP_ERRORS.AuthRequired,
    `authenticate first: authenticate { resource: "${AUTH_RESOURCE}", token } with a Baton client token`,
    { code: 'unauthorized', resource: AUTH_RESOURCE },
  );
}

export function requireRead(p: Principal): void {
  if (!allows(p, 'read')) {
    throw new RpcError(AHP_ERRORS.PermissionDenied, "the token's scope does not include read", {
      code: 'forbidden',
    });
  }
}
