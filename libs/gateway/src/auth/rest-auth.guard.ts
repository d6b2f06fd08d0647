import {
  Inject,
  Injectable,
  SetMetadata,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { IncomingMessage } from 'node:http';
import { WireFailure } from '../errors';
import { AuthError, Authenticator, allows, type Principal, type Scope } from './auth';
import { TenantRequestRate } from './request-rate';

const SCOPE_KEY = 'baton:scope';

/** The scope a route needs (`admin` holds every scope). */
export const RequiresScope = (scope: Scope) => SetMetadata(SCOPE_KEY, scope);

export type AuthedRequest = IncomingMessage & { principal: Principal };

/** REST authentication: a bearer token (header, or `?token=`) and the route's scope. */
@Injectable()
export class RestAuthGuard implements CanActivate {
  constructor(
    @Inject(Authenticator) private readonly auth: Authenticator,
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(TenantRequestRate) private readonly rate: TenantRequestRate,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<AuthedRequest>();
    try {
      req.principal = await this.auth.verify(Authenticator.tokenOf(req));
    } catch (err) {
      throw new WireFailure(
        'unauthorized',
        err instanceof AuthError ? err.message : 'authentication failed',
      );
    }
    // Per tenant, before anything is read or written: one token cannot flood Redis.
    const waitMs = this.rate.take(req.principal.tenant);
    if (waitMs > 0) {
      ctx
        .switchToHttp()
        .getResponse<{ setHeader(name: string, value: string): void }>()
        .setHeader('Retry-After', String(Math.ceil(waitMs / 1_000)));
      throw new WireFailure(
        'rate_limited',
        'too many requests for this tenant; retry after the Retry-After seconds',
      );
    }
    const scope = this.reflector.getAllAndOverride<Scope | undefined>(SCOPE_KEY, [
      ctx.getHandler(),
      ctx.getClass(),
    ]);
    if (scope && !allows(req.principal, scope)) {
      throw new WireFailure('forbidden', `the token's scope does not include ${scope}`);
    }
    return true;
  }
}
