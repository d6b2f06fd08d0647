// A WebSocket upgrade's request target is the client's to choose: one that is no URL at all
// (`http://[`, an absolute form the HTTP parser lets through) is refused 400, and must never
// bring the gateway down: one such request used to end the process, before any token was asked.
import { connect } from 'node:net';
import { startRedis, type RedisServer } from '@baton/redis-server';
import { spawnGateway, waitFor, type GatewayProc } from '@baton/testing';

jest.setTimeout(60_000);

let redis: RedisServer;
let gw: GatewayProc;

beforeAll(async () => {
  redis = await startRedis();
  gw = await spawnGateway({ REDIS_URL: redis.url });
});
afterAll(async () => {
  await gw?.stop();
  await redis?.stop();
});

/** Sends a whole request for `target` (an upgrade, or not); what the gateway answered, once closed. */
async function send(target: string, upgrade: boolean): Promise<string> {
  const { port } = new URL(gw.url);
  let answer = '';
  let closed = false;
  const headers = upgrade
    ? 'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n' +
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n'
    : 'Connection: close\r\n';
  const socket = connect(Number(port), '127.0.0.1', () =>
    socket.write(`GET ${target} HTTP/1.1\r\nHost: x\r\n${headers}\r\n`),
  );
  socket.on('data', (d: Buffer) => (answer += d.toString()));
  socket.on('error', () => undefined);
  socket.on('close', () => (closed = true));
  await waitFor(() => closed, `the answer to ${target}`, 20_000);
  return answer;
}

it.each(['http://[', 'http://:99999/ws', '//[/ws'])(
  'refuses an upgrade or a request to %s with 4xx and keeps serving',
  async (target) => {
    expect(await send(target, true)).toMatch(/^HTTP\/1\.1 400 /);
    expect(await send(target, false)).toMatch(/^HTTP\/1\.1 4\d\d /);
    expect(gw.proc.exitCode).toBeNull();
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
  },
);
