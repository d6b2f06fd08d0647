import {
  HttpCode,
  Inject,
  Injectable,
  Res,
  UseGuards,
  applyDecorators,
  createParamDecorator,
  type ExecutionContext,
  type PipeTransform,
} from '@nestjs/common';
import { ClientId } from '@baton/protocol';
import type { Principal, Scope } from '../auth/auth';
import { RequiresScope, RestAuthGuard, type AuthedRequest } from '../auth/rest-auth.guard';
import { Tenancy } from '../tenancy';
import { parse } from './body';

/** A route for a token holding `scope` (`admin` holds every scope). */
export const Scoped = (scope: Scope) =>
  applyDecorators(UseGuards(RestAuthGuard), RequiresScope(scope));

/** A command route: `scope`, and 200 unless the handler says otherwise (202 pending, 409 refused). */
export const CommandRoute = (scope: Scope) => applyDecorators(Scoped(scope), HttpCode(200));

/** The response, for a handler that sets its status (202 pending, 409 refused); Nest sends the rest. */
export const Reply = () => Res({ passthrough: true });

const request = (ctx: ExecutionContext) =>
  ctx.switchToHttp().getRequest<AuthedRequest & { params: Record<string, string | undefined> }>();

/** Who called: the principal of the request's token (the guard verified it). */
export const Caller = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): Principal => request(ctx).principal,
);

/** The caller's tenant and the task of the path, by the client's id. */
export interface TenantTask {
  tenant: string;
  taskId: string;
}

const TaskOfPath = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): { tenant: string; taskId: unknown } => {
    const req = request(ctx);
    return { tenant: req.principal.tenant, taskId: req.params.taskId };
  },
);

/**
 * The path's task id is checked as every path parameter is (PathIds), in a pipe like theirs: when
 * several parameters are bad, the request is refused for the same one as any other route's.
 */
const checked = (t: { tenant: string; taskId: unknown }): TenantTask => ({
  tenant: t.tenant,
  taskId: parse(ClientId, t.taskId, 'taskId'),
});

@Injectable()
class TenantTaskPipe implements PipeTransform {
  transform(t: { tenant: string; taskId: unknown }): TenantTask {
    return checked(t);
  }
}

/**
 * The key of the path's task, which the caller's tenant has: a task it never wrote to (another
 * tenant's of that id included) is a 404 `task <id> not found`, exactly like an absent one.
 */
@Injectable()
class KnownTaskKeyPipe implements PipeTransform {
  constructor(@Inject(Tenancy) private readonly tenancy: Tenancy) {}
  transform(t: { tenant: string; taskId: unknown }): Promise<string> {
    const { tenant, taskId } = checked(t);
    return this.tenancy.existing(tenant, taskId);
  }
}

/** The key of the caller's task of the path, looked up: a task it does not have is a 404. */
export const TaskKey = () => TaskOfPath(undefined, KnownTaskKeyPipe);

/**
 * The caller's task of the path, not looked up: for a write, which records it among the tenant's
 * tasks (Tenancy.write) in the handler, once every parameter of the request is valid.
 */
export const TaskOfTenant = () => TaskOfPath(undefined, TenantTaskPipe);
