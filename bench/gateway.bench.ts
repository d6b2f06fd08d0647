/**
 * The gateway (apps/gateway, in-process) against its own redis-server:
 *
 * - fan-out: updates delivered per second to 1,000 subscribers of one task (the owner's updates
 *   come from Redis through the gateway's tail), against a raw `ws` broadcast of the very same
 *   frames to 1,000 clients, in the same run, rounds interleaved. The clients live in a child
 *   process (bench/gateway-clients.ts), so the server side is what is compared.
 * - heap per idle connection: 2,000 connections, each subscribed to an idle task, against a bare
 *   `ws` server holding the same clients (both in this process, measured after a full GC).
 *
 * The admission round trip (prompt → decision) is measured end to end, with the gateway and the
 * projector in processes of their own, in bench/e2e.bench.ts.
 *
 * Run: npm run bench -- gateway
 */
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo, Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { compiledPath } from '@baton/config';
import { createInterface } from 'node:readline';
import { SCHEMA_VERSION, taskKey, type Update } from '@baton/protocol';
import { startRedis } from '@baton/redis-server';
import { EventStore, type Lease } from '@baton/store';
import type WebSocket from 'ws';
import { WebSocketServer } from 'ws';
import { startGateway } from '@baton/gateway';
import { heapAfterGc, median, type BenchResult } from './lib';

const SECRET = 'bench-secret-0123456789abcdefghijklmnop';
const IDLE_CONNECTIONS = 2_000;
const SUBSCRIBERS = 1_000;
const FANOUT_UPDATES = 200;
const ROUNDS = 3;

function token(tenant: string, scope: string): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const head = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ tenant, scope, exp: Math.floor(Date.now() / 1000) + 3600 })}`;
  return `${head}.${createHmac('sha256', SECRET).update(head).digest('base64url')}`;
}

/** The child process holding the clients, driven over stdin/stdout. */
function clientsProcess() {
  const child = spawn(
    process.execPath,
    [join(dirname(compiledPath(__filename)), 'gateway-clients.js')],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  const lines = createInterface({ input: child.stdout! });
  const queue: Record<string, unknown>[] = [];
  let wake: (() => void) | undefined;
  lines.on('line', (l) => {
    queue.push(JSON.parse(l) as Record<string, unknown>);
    wake?.();
  });
  const next = async (): Promise<Record<string, unknown>> => {
    while (queue.length === 0) await new Promise<void>((r) => (wake = r));
    const m = queue.shift()!;
    if (m.error) throw new Error(`bench clients: ${String(m.error)}`);
    return m;
  };
  return {
    send: (cmd: object) => child.stdin!.write(`${JSON.stringify(cmd)}\n`),
    next,
    close: async () => {
      child.stdin!.write(`${JSON.stringify({ close: true })}\n`);
      await once(child, 'exit');
    },
  };
}

async function fanout(redisUrl: string): Promise<BenchResult[]> {
  const prefix = 'fan';
  const taskId = 'fan-task';
  // Tasks are the tenant's: the gateway answers a subscribe only for a task its tenant wrote to.
  const key = taskKey('bench', taskId);
  const store = EventStore.connect({ url: redisUrl }, { shards: 1, prefix });
  const r = await store.leases.acquire(0, 'bench-owner', 600_000);
  if (!r.acquired) throw new Error('bench: lease');
  const lease: Lease = r.lease;
  await store.tenants.add('bench', taskId);
  const gateway = await startGateway({
    redisUrl,
    prefix,
    shards: 1,
    port: 0,
    jwtSecret: SECRET,
    logLevel: 'error',
    maxSubscriptions: 10,
  });
  const raw = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await once(raw, 'listening');
  const gwClients = clientsProcess();
  const rawClients = clientsProcess();
  const corkedServer = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await once(corkedServer, 'listening');
  const corkedClients = clientsProcess();
  const sockets = new Map<WebSocket, Socket>();
  corkedServer.on('connection', (ws, req) => sockets.set(ws, req.socket));
  let seq = 0;
  const makeUpdates = (): Update[] =>
    Array.from({ length: FANOUT_UPDATES }, (_, i) => ({
      v: SCHEMA_VERSION,
      taskId: key,
      seq: ++seq,
      entry: `${seq}-0`,
      last: true,
      type: 'session.activity',
      data: {
        sessionId: `s${i % 10}`,
        state: 'running',
        foregroundActivity: i % 2 === 0 ? 'generating' : 'background',
        activeSubagentCount: i % 3,
        supportsSteering: false,
        runningGeneration: 1 + (i % 5),
        admission: 'coarse',
        attention: null,
      },
    }));
  const wire = (u: Update) => `{"v":1,"type":"update","update":${JSON.stringify(u)}}`;
  try {
    gwClients.send({
      connect: `${gateway.url.replace('http', 'ws')}/ws`,
      n: SUBSCRIBERS,
      subscribe: taskId,
      token: token('bench', 'read'),
    });
    await gwClients.next();
    rawClients.send({
      connect: `ws://127.0.0.1:${(raw.address() as AddressInfo).port}`,
      n: SUBSCRIBERS,
      subscribe: null,
    });
    await rawClients.next();
    corkedClients.send({
      connect: `ws://127.0.0.1:${(corkedServer.address() as AddressInfo).port}`,
      n: SUBSCRIBERS,
      subscribe: null,
    });
    await corkedClients.next();
    const gwRates: number[] = [];
    const rawRates: number[] = [];
    const corkedRates: number[] = [];
    for (let round = 0; round < ROUNDS + 1; round++) {
      // Gateway: the owner publishes, the gateway tails Redis and fans out.
      const updates = makeUpdates();
      gwClients.send({ expect: FANOUT_UPDATES });
      await gwClients.next();
      let t0 = process.hrtime.bigint();
      for (let i = 0; i < updates.length; i += 50) {
        await store.publishUpdates(lease, key, updates.slice(i, i + 50));
      }
      await gwClients.next();
      const gw = (FANOUT_UPDATES * SUBSCRIBERS * 1e9) / Number(process.hrtime.bigint() - t0);
      // Raw ws: the same frames, sent to each client as fast as ws takes them.
      const frames = updates.map(wire);
      rawClients.send({ expect: FANOUT_UPDATES });
      await rawClients.next();
      t0 = process.hrtime.bigint();
      for (const f of frames) for (const c of raw.clients) c.send(f);
      await rawClients.next();
      const rw = (FANOUT_UPDATES * SUBSCRIBERS * 1e9) / Number(process.hrtime.bigint() - t0);
      // Raw ws with the gateway's write batching: the same frames, 50 per corked write.
      corkedClients.send({ expect: FANOUT_UPDATES });
      await corkedClients.next();
      t0 = process.hrtime.bigint();
      for (let i = 0; i < frames.length; i += 50) {
        for (const [c, socket] of sockets) {
          socket.cork();
          for (const f of frames.slice(i, i + 50)) c.send(f);
          socket.uncork();
        }
      }
      await corkedClients.next();
      const ck = (FANOUT_UPDATES * SUBSCRIBERS * 1e9) / Number(process.hrtime.bigint() - t0);
      if (round > 0) {
        gwRates.push(gw);
        rawRates.push(rw);
        corkedRates.push(ck);
      }
    }
    const g = median(gwRates);
    const w = median(rawRates);
    const k = median(corkedRates);
    return [
      {
        name: `raw ws broadcast of the same frames to ${SUBSCRIBERS.toLocaleString('en-US')} clients`,
        value: w,
        unit: 'updates/s',
      },
      {
        name: `gateway fan-out from Redis to ${SUBSCRIBERS.toLocaleString('en-US')} subscribers`,
        value: g,
        unit: 'updates/s',
        baseline: w,
        ratio: g / w,
        goal: 0.8,
      },
      {
        name: 'raw ws broadcast corked 50 frames per write, like the gateway’s batches (reference)',
        value: k,
        unit: 'updates/s',
      },
      {
        name: 'gateway fan-out vs that corked raw broadcast',
        value: g,
        unit: 'updates/s',
        baseline: k,
        ratio: g / k,
      },
    ];
  } finally {
    await gwClients.close();
    await rawClients.close();
    await corkedClients.close();
    raw.close();
    corkedServer.close();
    await gateway.stop();
    await store.close();
  }
}

async function idleConnections(redisUrl: string): Promise<BenchResult[]> {
  const prefix = 'idle';
  const gateway = await startGateway({
    redisUrl,
    prefix,
    shards: 16,
    port: 0,
    jwtSecret: SECRET,
    logLevel: 'error',
    // One tenant holds every connection here.
    maxConnectionsPerTenant: IDLE_CONNECTIONS * 2,
    maxSubscriptionsPerTenant: IDLE_CONNECTIONS * 2,
  });
  // Each connection's task is one the tenant has (its view stays empty: nothing happens on it).
  const tenants = EventStore.connect({ url: redisUrl }, { shards: 16, prefix });
  for (let i = 0; i < IDLE_CONNECTIONS; i += 500)
    await tenants.tenants.add('bench', `idle-task-${i / 500}`);
  await tenants.close();
  const raw = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await once(raw, 'listening');
  // Per connection = the median of the heap growth of four batches of 500, each over 500: a
  // one-off allocation of the process (a buffer or table growing once) lands in one batch and
  // does not count (it made the figure swing between 3.6 and 5.3 KB run to run).
  const BATCH = 500;
  const per = async (
    connect: (c: ReturnType<typeof clientsProcess>, i: number) => Promise<void>,
  ) => {
    const c = clientsProcess();
    const steps: number[] = [];
    let last = await heapAfterGc();
    for (let i = 0; i < IDLE_CONNECTIONS; i += BATCH) {
      await connect(c, i);
      const now = await heapAfterGc();
      steps.push((now - last) / BATCH);
      last = now;
    }
    await c.close();
    return median(steps);
  };
  try {
    const rawPer = await per(async (c) => {
      c.send({
        connect: `ws://127.0.0.1:${(raw.address() as AddressInfo).port}`,
        n: BATCH,
        subscribe: null,
      });
      await c.next();
    });
    const gwPer = await per(async (c, i) => {
      // Each 500 connections watch a task of the tenant's that never changes.
      c.send({
        connect: `${gateway.url.replace('http', 'ws')}/ws`,
        n: BATCH,
        subscribe: `idle-task-${i / BATCH}`,
        token: token('bench', 'read'),
      });
      await c.next();
    });
    const hasGc = typeof (globalThis as { gc?: unknown }).gc === 'function';
    return [
      {
        name: `bare ws server: heap per idle connection (${IDLE_CONNECTIONS.toLocaleString('en-US')} connections)${hasGc ? '' : ' (run with --expose-gc)'}`,
        value: rawPer,
        unit: 'B',
      },
      {
        name: 'gateway: heap per idle connection subscribed to an idle task',
        value: gwPer,
        unit: 'B',
        baseline: rawPer,
        ratio: gwPer / rawPer,
        atMost: 4_096,
      },
    ];
  } finally {
    raw.close();
    await gateway.stop();
  }
}

export async function runGatewayBench(): Promise<BenchResult[]> {
  const server = await startRedis();
  try {
    return [...(await fanout(server.url)), ...(await idleConnections(server.url))];
  } finally {
    await server.stop();
  }
}

if (require.main === module) {
  void runGatewayBench().then(
    (r) => {
      console.log(r);
      process.exit(0);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
