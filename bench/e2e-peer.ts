// Child process of bench/e2e.bench.ts: one node of the peer, what a user would pick instead of
// Baton to push live updates to many clients across several Node processes — socket.io 4 with
// @socket.io/redis-streams-adapter, both with their defaults. Each client names its task in the
// handshake (?task=) and the node puts it in that task's room; whatever any node (or the load's
// producer, bench/e2e-load.ts) emits to a room reaches its clients on every node through the
// adapter's one Redis stream.
//
// argv[2] is JSON {redisUrl}. Prints {url}; exits when stdin ends.
import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createAdapter } from '@socket.io/redis-streams-adapter';
import { Redis } from 'ioredis';
import { Server } from 'socket.io';

const cfg = JSON.parse(process.argv[2]!) as { redisUrl: string };

async function main() {
  const http = createServer();
  const io = new Server(http, {
    adapter: createAdapter(new Redis(cfg.redisUrl)),
    // The clients speak WebSocket only, like Baton's and the raw pipeline's.
    transports: ['websocket'],
  });
  io.on('connection', (socket) => {
    const task = socket.handshake.query.task;
    if (typeof task === 'string') void socket.join(task);
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  process.stdout.write(
    `${JSON.stringify({ url: `http://127.0.0.1:${(http.address() as AddressInfo).port}` })}\n`,
  );
}

process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
void main().catch((err: unknown) => {
  process.stdout.write(`${JSON.stringify({ error: String(err) })}\n`);
  process.exit(1);
});
