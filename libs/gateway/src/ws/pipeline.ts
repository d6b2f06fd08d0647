import {
  Catch,
  Injectable,
  SetMetadata,
  type ArgumentsHost,
  type CanActivate,
  type ExecutionContext,
  type PipeTransform,
  type WsExceptionFilter,
} from '@nestjs/common';
import { allows, type Scope } from '../auth/auth';
import { WireFailure, toWireError } from '../errors';
import type { WsRequest } from './client-connection';
import { parseMessage } from './frames';

/**
 * How Nest handles a /ws message (ws.gateway.ts): the guard checks the token's scope for the
 * handler's op, the pipe validates the message (zod, libs/protocol wire.ts), the filter answers
 * what fails with Baton's wire error — the same answers a client always had.
 */

const SCOPE = 'baton:scope';

/** The scope a /ws handler's token needs (none: any connection may send it). */
export const RequiresScope = (scope: Scope) => SetMetadata(SCOPE, scope);

@Injectable()
export class ScopeGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const scope = Reflect.getMetadata(SCOPE, context.getHandler()) as Scope | undefined;
    if (scope === undefined) return true;
    const req = context.switchToWs().getData<WsRequest>();
    if (!allows(req.conn.principal, scope)) {
      throw new WireFailure('forbidden', `the token's scope does not include ${scope}`);
    }
    return true;
  }
}

/**
 * A message that failed validation and was answered by the pipe, at once: its error goes out
 * before the answer of any message sent after it (a handler's comes later).
 */
class Answered extends Error {}

/** Validates the message of a {@link WsRequest} (and counts it, by op or as invalid). */
@Injectable()
export class ClientMessagePipe implements PipeTransform<WsRequest, WsRequest> {
  transform(req: WsRequest): WsRequest {
    if (req.limited) return req;
    const parsed = parseMessage(req.raw);
    const metrics = req.conn.s.metrics;
    if (!parsed.ok) {
      metrics.messages.inc({ endpoint: 'ws', type: 'invalid' });
      req.conn.fail(parsed.id, parsed.error);
      throw new Answered();
    }
    metrics.messages.inc({ endpoint: 'ws', type: parsed.message.op });
    req.msg = parsed.message;
    return req;
  }
}

/** Whatever a /ws handler throws is the client's answer: a wire error under its request id. */
@Catch()
export class WireErrors implements WsExceptionFilter {
  catch(err: unknown, host: ArgumentsHost): void {
    if (err instanceof Answered) return;
    const req = host.switchToWs().getData<WsRequest>();
    const { error, internal } = toWireError(err);
    if (internal) req.conn.s.log.error({ err, op: req.msg?.op }, 'request failed');
    req.conn.fail(req.id, error);
  }
}
