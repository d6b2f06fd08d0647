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
import { anonymousOf, principalOf, UNAUTHENTICATED } from '../ws/ws-adapter';
import { Authenticator, type Principal } from '../auth/auth';
import { AhpConnection } from './ahp-connection';

/** An /ahp connection before `authenticate`: no tenant, no scope. */
const anonymous = (): Principal => ({ tenant: UNAUTHENTICATED, scopes: new Set() });

/** /ahp: Baton as an AHP host (JSON-RPC 2.0; docs/ahp-channel.md). */
@WebSocketGateway({ path: '/ahp' })
export class AhpGateway extends FramedGateway {
  constructor(
    @Inject(SERVICES) s: Services,
    @Inject(ConnectionRegistry) registry: ConnectionRegistry,
    @Inject(Authenticator) private readonly auth: Authenticator,
  ) {
    super(s, registry);
  }

  protected open(ws: WebSocket, req: IncomingMessage) {
    const p = principalOf(req);
    if (p) return new AhpConnection(ws, req.socket, p, this.s, this.auth, false);
    // No token on the upgrade: AHP's `authenticate` gives the connection its principal.
    if (anonymousOf(req)) {
      return new AhpConnection(ws, req.socket, anonymous(), this.s, this.auth, true);
    }
    return undefined;
  }

  @SubscribeMessage('frame')
  onFrame(@ConnectedSocket() ws: WebSocket, @MessageBody() data: string | Buffer): void {
    this.frame(ws, data);
  }
}
