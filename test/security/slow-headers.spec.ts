// A client that opens a connection and never finishes its request's headers — a half-open
// WebSocket upgrade, or any HTTP request — holds a socket before any token or tenant limit is
// checked. The gateway answers it 408 and closes it after GATEWAY_HEADERS_TIMEOUT_MS.
import { connect } from 'node:net';
import { startRedis, type RedisServer } from '@baton/redis-server';
import { spawnGateway, waitFor, type GatewayProc } from '@baton/testing';

jest.setTimeout(60_000);

let redis: RedisServer;
let gw: GatewayProc;

beforeAll(async () => {
  redis = await startRedis();
  gw = await spawnGateway({ REDIS_URL: redis.url, GATEWAY_HEADERS_TIMEOUT_MS: '1000' });
});
afterAll(async () => {
  await gw?.stop();
  await redis?.stop();
});

/** Sends `head` and never the blank line that ends it; what the gateway answered, once closed. */
function halfOpen(head: string): { answer: () => string; closed: () => boolean } {
  const { port } = new URL(gw.url);
  let answer = '';
  let closed = false;
  const socket = connect(Number(port), '127.0.0.1', () => socket.write(head));
  socket.on('data', (d: Buffer) => (answer += d.toString()));
  socket.on('error', () => undefined);
  socket.on('close', () => (closed = true));
  return { answer: () => answer, closed: () => closed };
}

it('closes a half-open upgrade and a request whose headers never end, with 408', async () => {
  const upgrade = halfOpen(
    'GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n',
  );
  const request = halfOpen('GET /healthz HTTP/1.1\r\nHost: x\r\n');
  // Bounded well below Node's own 60-90 s.
  await waitFor(() => upgrade.closed() && request.closed(), 'both closed', 20_000);
  expect(upgrade.answer()).toMatch(/^HTTP\/1\.1 408/);
  expect(request.answer()).toMatch(/^HTTP\/1\.1 408/);
  // The gateway still serves.
  expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
});
