import {
  Catch,
  Inject,
  UseFilters,
  type ArgumentsHost,
  type WsExceptionFilter,
} from '@nestjs/common';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import { Authenticator } from '../auth/auth';
import { SERVICES } from '../options';
import type { Services } from '../ws/client-connection';
import type { Admission, ConnectionFactory } from '../ws/ws-adapter';
import { AhpConnection, type AhpFrame } from './ahp-connection';

/** A bug of ours must not cost the client its answer: it gets JSON-RPC's internal error. */
@Catch()
export class AhpInternalErrors implements WsExceptionFilter {
  catch(err: unknown, host: ArgumentsHost): void {
    const { conn } = host.switchToWs().getData<AhpFrame>();
    conn.s.log.error({ err, endpoint: 'ahp' }, 'frame handling failed');
    conn.internalError();
  }
}

/**
 * /ahp, Baton as an AHP host (docs/ahp-channel.md). AHP is JSON-RPC 2.0: one router takes every
 * frame (`rpc`), and the connection's transport answers it by method (ahp-connection.ts), with
 * JSON-RPC's own errors; what escapes is the filter's internal error.
 */
@WebSocketGateway({ path: '/ahp' })
@UseFilters(AhpInternalErrors)
export class AhpGateway implements ConnectionFactory {
  readonly path = '/ahp';
  readonly inProtocolAuth = true;

  constructor(
    @Inject(SERVICES) private readonly s: Services,
    @Inject(Authenticator) private readonly auth: Authenticator,
  ) {}

  open(ws: WebSocket, socket: Socket, a: Admission): AhpConnection {
    return new AhpConnection(ws, socket, a.principal, this.s, this.auth, a.anonymous);
  }

  @SubscribeMessage('rpc')
  rpc(@MessageBody() frame: AhpFrame): void {
    frame.conn.handleRpc(frame.data);
  }
}
