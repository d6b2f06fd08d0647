import type { OnGatewayConnection, OnGatewayDisconnect } from '@nestjs/websockets';
import type { IncomingMessage } from 'node:http';
import type { WebSocket } from 'ws';
import type { Services } from './client-connection';
import type { Connection, ConnectionRegistry } from './connection';

export type Framed = Connection & {
  handleFrame(data: string | Buffer): void;
  internalError(): void;
};

/** Shared by both endpoints: connection bookkeeping around a per-endpoint handler. */
export abstract class FramedGateway implements OnGatewayConnection, OnGatewayDisconnect {
  private readonly conns = new WeakMap<WebSocket, Framed>();

  constructor(
    protected readonly s: Services,
    private readonly registry: ConnectionRegistry,
  ) {}

  protected abstract open(ws: WebSocket, req: IncomingMessage): Framed | undefined;

  handleConnection(ws: WebSocket, req: IncomingMessage): void {
    const c = this.open(ws, req);
    if (!c) {
      ws.close(1008, 'unauthorized');
      return;
    }
    this.conns.set(ws, c);
    this.registry.add(c);
  }

  handleDisconnect(ws: WebSocket): void {
    const c = this.conns.get(ws);
    if (!c) return;
    c.dispose();
    this.registry.remove(c);
  }

  frame(ws: WebSocket, data: string | Buffer): void {
    const c = this.conns.get(ws);
    if (!c) return;
    try {
      c.handleFrame(data);
    } catch (err) {
      // A bug of ours must not cost the client its answer: it gets an internal error.
      this.s.log.error({ err, endpoint: c.endpoint }, 'frame handling failed');
      c.internalError();
    }
  }
}
