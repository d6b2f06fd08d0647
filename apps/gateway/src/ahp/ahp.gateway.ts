import { Inject } from '@nestjs/common';
import {
  ConnectedSocket,
  MessageBody,
  SubscribeMessage,
  WebSocketGateway,
} from '@nestjs/websockets';
import type { IncomingMessage } from 'node:http';
import type { WebSocket } from 'ws';
import { SERVICES } from '../options';
import type { Services } from '../ws/client-connection';
import { ConnectionRegistry } from '../ws/connection';
import { FramedGateway } from '../ws/framed-gateway';
import { principalOf } from '../ws/ws-adapter';
import { AhpConnection } from './ahp-connection';

/** /ahp: the AHP-compatible chat channel (JSON-RPC 2.0). */
@WebSocketGateway({ path: '/ahp' })
export class AhpGateway extends FramedGateway {
  constructor(
    @Inject(SERVICES) s: Services,
    @Inject(ConnectionRegistry) registry: ConnectionRegistry,
  ) {
    super(s, registry);
  }

  protected open(ws: WebSocket, req: IncomingMessage) {
    const p = principalOf(req);
    return p && new AhpConnection(ws, req.socket, p, this.s);
  }

  @SubscribeMessage('frame')
  onFrame(@ConnectedSocket() ws: WebSocket, @MessageBody() data: string | Buffer): void {
    this.frame(ws, data);
  }
}
