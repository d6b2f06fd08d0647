import { Inject, Injectable } from '@nestjs/common';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { AhpConnection } from '../ahp/ahp-connection';
import { AuthError, Authenticator, type Principal } from '../auth/auth';
import { SERVICES } from '../options';
import { ClientConnection, type Services } from './client-connection';
import { ConnectionRegistry, connectionOf, type Connection } from './connection';
import { TenantLimits } from './tenant-limits';

/**
 * What an /ahp connection opened without any token counts against (GATEWAY_MAX_CONNECTIONS_PER_TENANT
 * applies to all of them together) until it authenticates in-protocol. Never a tenant id (those
 * are slugs).
 */
export const UNAUTHENTICATED = '\u0000unauthenticated';

/** An /ahp connection before `authenticate`: no tenant, no scope. */
const anonymous = (): Principal => ({ tenant: UNAUTHENTICATED, scopes: new Set() });

/** Who an upgrade is for: a token's principal, or (on /ahp only) nobody yet. */
type Admission = { principal: Principal; anonymous: boolean };

interface Endpoint {
  /** Whether the protocol can authenticate after the upgrade (AHP's `authenticate`). */
  readonly inProtocolAuth: boolean;
  open(ws: WebSocket, req: IncomingMessage, a: Admission): Connection;
}

/**
 * The WebSocket endpoints, /ws (Baton's client protocol, libs/protocol wire.ts) and /ahp (Baton as
 * an AHP host, docs/ahp-channel.md), on a plain `ws` server attached to the HTTP server Nest
 * listens on: Nest keeps REST and dependency injection, a connection is one plain object (no
 * per-client stream pipeline). Every upgrade is authenticated before it becomes a connection — a
 * missing, bad or expired token is answered 401 with a one-line reason, a tenant over
 * GATEWAY_MAX_CONNECTIONS_PER_TENANT 429; frames above the hard cap close the connection (1009)
 * without being buffered; each frame goes to its connection as it came (text as a string, binary
 * as a Buffer) to be validated and answered.
 */
@Injectable()
export class WsEndpoints {
  private readonly wss: WebSocketServer;
  private readonly endpoints: ReadonlyMap<string, Endpoint>;
  /**
   * The tenant whose connection place each admitted TCP socket holds, given back when it closes.
   * With the listeners below, one function for every socket: a closure per connection would
   * keep its context for the connection's life (issue 20: an idle connection's heap).
   */
  private readonly places = new WeakMap<Duplex, string>();
  private readonly onSocketClose: (this: Duplex) => void;
  private readonly onMessage: (this: WebSocket, data: RawData, isBinary: boolean) => void;
  private readonly onClose: (this: WebSocket) => void;
  private readonly onError: (this: WebSocket, err: Error) => void;

  constructor(
    @Inject(SERVICES) private readonly s: Services,
    @Inject(ConnectionRegistry) private readonly registry: ConnectionRegistry,
    @Inject(Authenticator) private readonly auth: Authenticator,
    @Inject(TenantLimits) private readonly limits: TenantLimits,
  ) {
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: s.opts.hardMaxMessageBytes,
      // Connections live in the registry (heartbeats, shutdown); ws need not track them twice.
      clientTracking: false,
    });
    const { places } = this;
    this.onSocketClose = function (this: Duplex) {
      const tenant = places.get(this);
      if (tenant === undefined) return;
      places.delete(this);
      limits.closeConnection(tenant);
    };
    this.onMessage = function (this: WebSocket, data: RawData, isBinary: boolean) {
      const c = connectionOf(this);
      if (!c) return;
      const frame = isBinary ? toBuffer(data) : toBuffer(data).toString('utf8');
      try {
        c.handleFrame(frame);
      } catch (err) {
        // A bug of ours must not cost the client its answer: it gets an internal error.
        s.log.error({ err, endpoint: c.endpoint }, 'frame handling failed');
        c.internalError();
      }
    };
    this.onClose = function (this: WebSocket) {
      const c = connectionOf(this);
      if (!c) return;
      c.dispose();
      registry.remove(c);
    };
    this.onError = function (this: WebSocket, err: Error) {
      s.log.debug({ err, endpoint: connectionOf(this)?.endpoint }, 'socket error');
    };
    this.endpoints = new Map<string, Endpoint>([
      [
        '/ws',
        {
          inProtocolAuth: false,
          open: (ws, req, a) => new ClientConnection(ws, req.socket, a.principal, s),
        },
      ],
      [
        '/ahp',
        {
          inProtocolAuth: true,
          open: (ws, req, a) =>
            new AhpConnection(ws, req.socket, a.principal, s, auth, a.anonymous),
        },
      ],
    ]);
  }

  /** Takes the upgrades of `server` (the HTTP server Nest listens on). */
  attach(server: Server): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      void this.upgrade(req, socket, head);
    });
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    // A function of the module, not a closure here: a closure would share this call's context
    // and keep the upgrade request (headers and all, ~1 KB) for as long as the socket lives.
    socket.on('error', destroyOnError);
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const endpoint = this.endpoints.get(path);
    if (!endpoint) {
      refuse(socket, 404, `no WebSocket endpoint at ${path}; there are /ws and /ahp`);
      return;
    }
    const admission = await this.admit(req, socket, endpoint);
    if (!admission || socket.destroyed) return;
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      // ws handles the socket's errors from here on.
      socket.off('error', destroyOnError);
      this.connect(ws, req, endpoint, admission);
    });
  }

  /** Authenticates the upgrade and holds the tenant's place for as long as its socket lives. */
  private async admit(
    req: IncomingMessage,
    socket: Duplex,
    endpoint: Endpoint,
  ): Promise<Admission | undefined> {
    let admission: Admission;
    if (endpoint.inProtocolAuth && hasNoToken(req)) {
      // No token at all: the client authenticates in-protocol; until then it can do nothing that
      // reads or writes a tenant's state (libs/gateway/src/ahp).
      admission = { principal: anonymous(), anonymous: true };
    } else {
      try {
        admission = {
          principal: await this.auth.verify(Authenticator.tokenOf(req)),
          anonymous: false,
        };
      } catch (err) {
        const reason = err instanceof AuthError ? err.message : 'authentication failed';
        this.s.metrics.errors.inc({ code: 'unauthorized' });
        refuse(socket, 401, reason, {
          'WWW-Authenticate': `Bearer error="invalid_token", error_description="${reason}"`,
        });
        return undefined;
      }
    }
    const tenant = admission.principal.tenant;
    if (!this.limits.openConnection(tenant)) {
      this.s.metrics.errors.inc({ code: 'too_many_connections' });
      const reason = admission.anonymous
        ? 'too many unauthenticated connections on this gateway'
        : `the tenant holds ${this.limits.maxConnections} connections on this gateway ` +
          '(GATEWAY_MAX_CONNECTIONS_PER_TENANT); close one first';
      refuse(socket, 429, reason, { 'Retry-After': '1' });
      return undefined;
    }
    // The place is the TCP socket's, so a handshake that fails later gives it back too.
    if (socket.destroyed) {
      this.limits.closeConnection(tenant);
    } else {
      this.places.set(socket, tenant);
      socket.on('close', this.onSocketClose);
    }
    return admission;
  }

  private connect(ws: WebSocket, req: IncomingMessage, endpoint: Endpoint, a: Admission): void {
    const c = endpoint.open(ws, req, a);
    this.registry.add(c);
    ws.on('message', this.onMessage);
    ws.on('close', this.onClose); // once: ws emits it once
    ws.on('error', this.onError);
  }

  close(): void {
    this.wss.close();
  }
}

function destroyOnError(this: Duplex): void {
  this.destroy();
}

function hasNoToken(req: IncomingMessage): boolean {
  if (req.headers.authorization !== undefined) return false;
  return !new URL(req.url ?? '/', 'http://x').searchParams.has('token');
}

const toBuffer = (data: RawData): Buffer =>
  Buffer.isBuffer(data)
    ? data
    : Array.isArray(data)
      ? Buffer.concat(data)
      : Buffer.from(data as ArrayBuffer);

const STATUS_TEXT: Record<number, string> = {
  401: 'Unauthorized',
  404: 'Not Found',
  429: 'Too Many Requests',
};

/** Answers an upgrade with an HTTP error and a one-line reason, then closes the socket. */
function refuse(
  socket: Duplex,
  status: number,
  reason: string,
  headers: Record<string, string> = {},
): void {
  if (socket.destroyed) return;
  const body = Buffer.from(reason);
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}`,
    'Connection: close',
    'Content-Type: text/plain; charset=utf-8',
    `Content-Length: ${body.byteLength}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.end(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), body]));
}
