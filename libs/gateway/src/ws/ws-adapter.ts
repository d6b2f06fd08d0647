import type { WebSocketAdapter, WsMessageHandler } from '@nestjs/common';
import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type Server as WsServer } from 'ws';
import { AuthError, Authenticator, type Principal } from '../auth/auth';
import type { Services } from './client-connection';
import {
  GatewaySocket,
  type Connection,
  type ConnectionRegistry,
  type SocketEvents,
} from './connection';
import type { TenantLimits } from './tenant-limits';

/**
 * What an /ahp connection opened without any token counts against (GATEWAY_MAX_CONNECTIONS_PER_TENANT
 * applies to all of them together) until it authenticates in-protocol. Never a tenant id (those
 * are slugs).
 */
export const UNAUTHENTICATED = '\u0000unauthenticated';

/** No scope, one set for every connection that has none. */
const NO_SCOPES: ReadonlySet<never> = new Set();
/** An /ahp connection before `authenticate`: no tenant, no scope. */
const anonymous = (): Principal => ({ tenant: UNAUTHENTICATED, scopes: NO_SCOPES });

/** Who an upgrade is for: a token's principal, or (on /ahp only) nobody yet. */
export type Admission = { principal: Principal; anonymous: boolean };

/** What a gateway class (ws.gateway.ts, ahp.gateway.ts) gives the adapter for its path. */
export interface ConnectionFactory {
  readonly path: string;
  /** Whether the protocol can authenticate after the upgrade (AHP's `authenticate`). */
  readonly inProtocolAuth: boolean;
  /** The lean connection of an admitted socket. */
  open(ws: GatewaySocket, socket: Socket, a: Admission): Connection;
}

/** A gateway's server, as Nest holds it: its path and what makes its connections. */
export interface Endpoint {
  readonly path: string;
  readonly factory: ConnectionFactory;
}

export type Route = (data: unknown) => unknown;

/**
 * Every gateway's message handlers, by path and message, as Nest built them (guards, pipes and
 * filters applied): one per process, reached by each connection through its Services.
 */
export class Routes {
  private readonly byPath = new Map<string, ReadonlyMap<string, Route>>();

  set(path: string, handlers: readonly WsMessageHandler[]): void {
    this.byPath.set(path, new Map(handlers.map((h) => [h.message as string, h.callback as Route])));
  }

  get(path: string, message: string): Route | undefined {
    return this.byPath.get(path)?.get(message);
  }
}

/**
 * Nest's WebSocket adapter for the gateways of /ws (Baton's client protocol, libs/protocol
 * wire.ts) and /ahp (Baton as an AHP host, docs/ahp-channel.md), over the `ws` package on the HTTP
 * server Nest listens on. Every upgrade is authenticated before it becomes a connection — a
 * missing, bad or expired token is answered 401 with a one-line reason, a tenant over
 * GATEWAY_MAX_CONNECTIONS_PER_TENANT 429; frames above the hard cap close the connection (1009)
 * without being buffered; each frame goes to its connection as it came (text as a string, binary
 * as a Buffer), which decodes it and hands it to its gateway's handler for it.
 *
 * A connection is one plain object: Nest binds a gateway's handlers once, to the gateway's
 * server (bindClientConnect), not once per socket, so an idle connection costs no bound
 * handlers, subjects or closures; the connection reaches them through {@link Routes}, and its
 * own lifecycle (heartbeats, close) is the registry's, not Nest's connect / disconnect events.
 */
export class BatonWsAdapter implements WebSocketAdapter<Endpoint, Endpoint> {
  private readonly wss: WsServer<typeof GatewaySocket>;
  private readonly endpoints = new Map<string, Endpoint>();
  private attached = false;
  private readonly onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Nothing an upgrade brings may end the process: a failure of ours is logged and the
    // socket closed (an unhandled rejection would stop the gateway for every client).
    this.upgrade(req, socket, head).catch((err: unknown) => {
      this.s.log.error({ err }, 'WebSocket upgrade failed');
      this.s.metrics.errors.inc({ code: 'internal' });
      this.releasePlace(socket);
      socket.destroy();
    });
  };
  /**
   * The tenant whose connection place each admitted TCP socket holds until its handshake is done
   * (its WebSocket holds it then, and gives it back at its close), given back if the socket closes
   * first, through the socket events below: a listener on the socket's `close` for the
   * connection's life, its third after Nest's and ws's, would grow Node's listener array by ~150
   * bytes. One function serves every socket: a closure per connection would keep its context for
   * the connection's life. Both would weigh on an idle connection's heap.
   */
  private readonly places = new WeakMap<Duplex, string>();
  private readonly releasePlace: (socket: Duplex) => void;
  private readonly onSocketClose: (this: Duplex) => void;
  private readonly events: SocketEvents;

  constructor(
    private readonly http: Server,
    private readonly s: Services,
    private readonly registry: ConnectionRegistry,
    private readonly auth: Authenticator,
    private readonly limits: TenantLimits,
    private readonly factories: readonly ConnectionFactory[],
  ) {
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: s.opts.hardMaxMessageBytes,
      // Connections live in the registry (heartbeats, shutdown); ws need not track them twice.
      clientTracking: false,
      WebSocket: GatewaySocket,
    });
    const { places } = this;
    const releasePlace = (this.releasePlace = (socket: Duplex) => {
      const tenant = places.get(socket);
      if (tenant === undefined) return;
      places.delete(socket);
      limits.closeConnection(tenant);
    });
    this.onSocketClose = function (this: Duplex) {
      releasePlace(this);
    };
    this.events = {
      message(c: Connection, data: RawData, isBinary: boolean) {
        const frame = isBinary ? toBuffer(data) : toBuffer(data).toString('utf8');
        try {
          c.handleFrame(frame);
        } catch (err) {
          // A bug of ours must not cost the client its answer: it gets an internal error.
          s.log.error({ err, endpoint: c.endpoint }, 'frame handling failed');
          c.internalError();
        }
      },
      close(c: Connection, ws: GatewaySocket) {
        c.dispose();
        registry.remove(c);
        const tenant = ws.place;
        ws.place = undefined;
        if (tenant !== undefined) limits.closeConnection(tenant);
      },
      error(c: Connection, err: Error) {
        s.log.debug({ err, endpoint: c.endpoint }, 'socket error');
      },
    };
  }

  /** A gateway's server: its path (shared with the HTTP server, whose upgrades it takes). */
  create(_port: number, options?: { path?: string }): Endpoint {
    const path = options?.path ?? '/';
    const factory = this.factories.find((f) => f.path === path);
    if (!factory) throw new Error(`no connection factory for the WebSocket gateway at ${path}`);
    const endpoint: Endpoint = { path, factory };
    this.endpoints.set(path, endpoint);
    if (!this.attached) {
      this.attached = true;
      this.http.on('upgrade', this.onUpgrade);
    }
    return endpoint;
  }

  /** Nest's handlers are bound once, to the gateway's server (see the class). */
  bindClientConnect(server: Endpoint, callback: (client: Endpoint) => void): void {
    callback(server);
  }

  /** The gateway's handlers, once (the client is its server): shared by all its connections. */
  bindMessageHandlers(client: Endpoint, handlers: WsMessageHandler[]): void {
    this.s.routes.set(client.path, handlers);
  }

  close(server: Endpoint): void {
    this.endpoints.delete(server.path);
  }

  dispose(): void {
    this.http.off('upgrade', this.onUpgrade);
    this.wss.close();
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    // A function of the module, not a closure here: a closure would share this call's context
    // and keep the upgrade request (headers and all, ~1 KB) for as long as the socket lives.
    socket.on('error', destroyOnError);
    // The request target is the client's: one that is no URL is refused, as HTTP would.
    const target = targetOf(req);
    if (!target) {
      refuse(socket, 400, 'the request target is not a URL path');
      return;
    }
    const path = target.pathname;
    const endpoint = this.endpoints.get(path)?.factory;
    if (!endpoint) {
      refuse(socket, 404, `no WebSocket endpoint at ${path}; there are /ws and /ahp`);
      return;
    }
    const admission = await this.admit(req, target, socket, endpoint);
    if (!admission) return;
    if (socket.destroyed) {
      this.releasePlace(socket);
      return;
    }
    let connected = false;
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      // ws handles the socket's errors from here on.
      socket.off('error', destroyOnError);
      connected = true;
      try {
        this.connect(ws, req, endpoint, admission);
      } catch (err) {
        // A connection that could not be set up is closed, its place given back at once.
        this.s.log.error({ err, path }, 'WebSocket connection setup failed');
        this.s.metrics.errors.inc({ code: 'internal' });
        this.releasePlace(socket);
        // Without its events, the socket has no error listener: a frame the client sends while it
        // closes must not raise one nobody hears.
        ws.on('error', () => undefined);
        ws.close(1011, 'internal error');
      }
    });
    // ws completes a handshake at once (there is no verifyClient), and the WebSocket then holds
    // the place. A refused handshake destroyed the socket; were one ever completed later, the
    // socket's close would give the place back unless the WebSocket had taken it.
    if (connected) return;
    if (socket.destroyed) this.releasePlace(socket);
    else socket.on('close', this.onSocketClose);
  }

  /** Authenticates the upgrade and holds the tenant's place for as long as its socket lives. */
  private async admit(
    req: IncomingMessage,
    target: URL,
    socket: Duplex,
    endpoint: ConnectionFactory,
  ): Promise<Admission | undefined> {
    let admission: Admission;
    if (endpoint.inProtocolAuth && hasNoToken(req, target)) {
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
    this.places.set(socket, tenant);
    return admission;
  }

  private connect(
    ws: GatewaySocket,
    req: IncomingMessage,
    endpoint: ConnectionFactory,
    a: Admission,
  ): void {
    const c = endpoint.open(ws, req.socket, a);
    this.registry.add(c);
    // The place moves to the WebSocket, which gives it back at its close.
    ws.place = this.places.get(req.socket);
    this.places.delete(req.socket);
    ws.events = this.events;
    ws.connection = c;
  }
}

function destroyOnError(this: Duplex): void {
  this.destroy();
}

function hasNoToken(req: IncomingMessage, target: URL): boolean {
  if (req.headers.authorization !== undefined) return false;
  return !target.searchParams.has('token');
}

/** The upgrade's request target as a URL, or undefined when it is not one. */
function targetOf(req: IncomingMessage): URL | undefined {
  try {
    return new URL(req.url ?? '/', 'http://x');
  } catch {
    return undefined;
  }
}

const toBuffer = (data: RawData): Buffer =>
  Buffer.isBuffer(data)
    ? data
    : Array.isArray(data)
      ? Buffer.concat(data)
      : Buffer.from(data as ArrayBuffer);

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
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
