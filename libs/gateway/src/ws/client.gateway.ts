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
import { ClientConnection, type Services } from './client-connection';
import { ConnectionRegistry } from './connection';
import { FramedGateway } from './framed-gateway';
import { principalOf } from './ws-adapter';

/** /ws: Baton's client protocol (libs/protocol wire.ts). */
@WebSocketGateway({ path: '/ws' })
export class ClientGateway extends FramedGateway {
  constructor(
    @Inject(SERVICES) s: Services,
    @Inject(ConnectionRegistry) registry: ConnectionRegistry,
  ) {
    super(s, registry);
  }

  protected open(ws: WebSocket, req: IncomingMessage) {
    const p = principalOf(req);
    return p && new ClientConnection(ws, req.socket, p, this.s);
  }

  @SubscribeMessage('frame')
  onFrame(@ConnectedSocket() ws: WebSocket, @MessageBody() data: string | Buffer): void {
    this.frame(ws, data);
  }
}
