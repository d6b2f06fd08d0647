/**
 * The part of the WebSocket API the client uses: the browser's global `WebSocket` and the `ws`
 * package both provide it (`onopen`/`onmessage`/`onclose`/`onerror`, text `data` for text frames).
 */
export interface WebSocketLike {
  readonly readyState: number;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: { message?: string; error?: unknown }) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  /** `ws` only: drop the TCP connection without a closing handshake. */
  terminate?(): void;
}

/**
 * A WebSocket constructor. The second argument is the subprotocols for a browser and may be an
 * options object (with `headers`) for `ws`.
 */
export type WebSocketConstructor = new (url: string, protocols?: unknown) => WebSocketLike;

export const OPEN = 1;

/**
 * In a browser, the global WebSocket. In Node, the `ws` package: it sends the token as a bearer
 * header (Node's global WebSocket, from 22 on, cannot: the token would travel in the URL, where
 * proxies log it) and shows why an upgrade was refused (401 → `unauthorized`, not retried). `ws`
 * is loaded lazily so a browser bundle never executes it (its `browser` entry is a stub).
 */
export async function defaultWebSocket(): Promise<{ ctor: WebSocketConstructor; isWs: boolean }> {
  const global = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  const inNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string';
  if (global && !inNode) return { ctor: global, isWs: false };
  const mod = (await import('ws').catch(() => null)) as {
    default?: WebSocketConstructor & { Server?: unknown };
    WebSocket?: WebSocketConstructor;
    WebSocketServer?: unknown;
  } | null;
  // The real package has a server; a bundle for browsers gets its stub, which only throws.
  const real = mod && (mod.WebSocketServer ?? mod.default?.Server) !== undefined;
  const ctor = real ? (mod.WebSocket ?? mod.default) : undefined;
  if (ctor) return { ctor, isWs: true };
  if (global) return { ctor: global, isWs: false };
  throw new Error('no WebSocket: pass options.WebSocket');
}
