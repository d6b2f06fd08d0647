import type { INestApplicationContext } from '@nestjs/common';
import { WsAdapter } from '@nestjs/platform-ws';
import type { IncomingMessage } from 'node:http';
import { AuthError, Authenticator, type Principal } from '../auth/auth';
import type { TenantLimits } from './tenant-limits';

const PRINCIPAL = Symbol('baton.principal');
const ANONYMOUS = Symbol('baton.anonymous');

/**
 * What an /ahp connection opened without any token counts against (GATEWAY_MAX_CONNECTIONS_PER_TENANT
 * applies to all of them together) until it authenticates in-protocol. Never a tenant id (those
 * are slugs).
 */
export const UNAUTHENTICATED = '\u0000unauthenticated';

/** True when the upgrade carried no token at all and the endpoint takes in-protocol authentication. */
export function anonymousOf(req: IncomingMessage): boolean {
  return (req as IncomingMessage & { [ANONYMOUS]?: boolean })[ANONYMOUS] === true;
}

/** The paths whose protocol can authenticate after the upgrade (AHP's `authenticate`). */
const IN_PROTOCOL_AUTH = new Set(['/ahp']);

function hasNoToken(req: IncomingMessage): boolean {
  if (req.headers.authorization !== undefined) return false;
  return !new URL(req.url ?? '/', 'http://x').searchParams.has('token');
}

/** The principal the upgrade authenticated, attached to the request the connection came with. */
export function principalOf(req: IncomingMessage): Principal | undefined {
  return (req as IncomingMessage & { [PRINCIPAL]?: Principal })[PRINCIPAL];
}

type VerifyCallback = (
  ok: boolean,
  code?: number,
  message?: string,
  headers?: Record<string, string>,
) => void;

/**
 * The ws platform adapter with Baton's per-process settings: every frame goes to the gateway's
 * one `frame` handler as it came (text as a string, binary as a Buffer) so that each one can be
 * validated and answered; frames above the hard cap close the connection (1009) without being
 * buffered; and the upgrade is authenticated — a missing, bad or expired token never becomes a
 * connection, it is answered 401 with a one-line reason. A tenant that already holds
 * GATEWAY_MAX_CONNECTIONS_PER_TENANT connections on this gateway is answered 429.
 */
export class BatonWsAdapter extends WsAdapter {
  constructor(
    app: INestApplicationContext,
    private readonly auth: Authenticator,
    private readonly hardMaxMessageBytes: number,
    private readonly onRefused: (code: 'unauthorized' | 'too_many_connections') => void,
    private readonly limits?: TenantLimits,
  ) {
    super(app, { messageParser: (data) => ({ event: 'frame', data }) });
  }

  override create(port: number, options: Record<string, unknown> & { path?: string } = {}) {
    return super.create(port, {
      ...options,
      maxPayload: this.hardMaxMessageBytes,
      verifyClient: (info: { req: IncomingMessage }, cb: VerifyCallback) => {
        if (options.path && IN_PROTOCOL_AUTH.has(options.path) && hasNoToken(info.req)) {
          // No token at all: the client authenticates in-protocol; until then it can do nothing
          // that reads or writes a tenant's state (libs/gateway/src/ahp).
          const release = this.limits ? this.limits.openConnection(UNAUTHENTICATED) : () => {};
          if (!release) {
            this.onRefused('too_many_connections');
            cb(false, 429, 'too many unauthenticated connections on this gateway', {
              'Retry-After': '1',
            });
            return;
          }
          if (info.req.socket.destroyed) release();
          else info.req.socket.once('close', release);
          (info.req as IncomingMessage & { [ANONYMOUS]?: boolean })[ANONYMOUS] = true;
          cb(true);
          return;
        }
        this.auth.verify(Authenticator.tokenOf(info.req)).then(
          (principal) => {
            // The tenant's place is held for as long as the TCP socket lives (it is the
            // upgraded connection's), so a handshake that fails later gives it back too.
            const release = this.limits ? this.limits.openConnection(principal.tenant) : () => {};
            if (!release) {
              this.onRefused('too_many_connections');
              const max = this.limits!.maxConnections;
              cb(
                false,
                429,
                `the tenant holds ${max} connections on this gateway ` +
                  '(GATEWAY_MAX_CONNECTIONS_PER_TENANT); close one first',
                { 'Retry-After': '1' },
              );
              return;
            }
            if (info.req.socket.destroyed) release();
            else info.req.socket.once('close', release);
            (info.req as IncomingMessage & { [PRINCIPAL]?: Principal })[PRINCIPAL] = principal;
            cb(true);
          },
          (err: unknown) => {
            const reason = err instanceof AuthError ? err.message : 'authentication failed';
            this.onRefused('unauthorized');
            cb(false, 401, reason, {
              'WWW-Authenticate': `Bearer error="invalid_token", error_description="${reason}"`,
            });
          },
        );
      },
    });
  }
}
