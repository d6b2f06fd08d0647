/**
 * The gateway (apps/gateway, in-process) against its own redis-server:
 *
 * - admission round trip: prompt sent on a WebSocket → its decision received, at 100 prompts/s
 *   spread over 1,000 sessions that each have a ready execution, with a real projector in the
 *   same process (the owner decides); p50 and p99.
 * - fan-out: updates delivered per second to 1,000 subscribers of one task (the owner's updates
 *   come from Redis through the gateway's tail), against a raw `ws` broadcast of the very same
 *   frames to 1,000 clients, in the same run, rounds interleaved. The clients live in a child
 *   process (bench/gateway-clients.ts), so the server side is what is compared.
 *
 * Run: npm run bench -- gateway
 */
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { SCHEMA_VERSION, type StreamEntry, type Update } from '@baton/protocol';
import { startRedis } from '@baton/redis-harness';
import { EventStore, type Lease } from '@baton/store';
import type WebSocket from 'ws';
import { WebSocketServer } from 'ws';
import { startGateway } from '../apps/gateway/src/gateway';
import { startProjector } from '../apps/projector/src/projector';
import { median, type BenchResult } from './lib';

const SECRET = 'bench-secret-0123456789abcdefghijklmnop';
const TASKS = 100;
const SESSIONS_PER_TASK = 10;
const RATE = 100;
const WARMUP = 100;
const PROMPTS = 1_500;
const CONNECTIONS = 10;
const SUBSCRIBERS = 1_000;
const FANOUT_UPDATES = 200;
const ROUNDS = 3;

function token(tenant: string, scope: string): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const head = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ tenant, scope, exp: Math.floor(Date.now() / 1000) + 3600 })}`;
  return `${head}.${createHmac('sha256', SECRET).update(head).digest('base64url')}`;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  const until = Date.now() + 120_000;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function admission(redisUrl: string): Promise<BenchResult[]> {
  const prefix = 'adm';
  const shards = 16;
  const store = EventStore.connect({ url: redisUrl }, { shards, prefix });
  const projector = await startProjector({ redisUrl, prefix, shards, logLevel: 'error' });
  const gateway = await startGateway({
    redisUrl,
    prefix,
    shards,
    port: 0,
    jwtSecret: SECRET,
    logLevel: 'error',
    maxMessagesPerSecond: 10_000,
  });
  try {
    await projector.ready();
    // 1,000 sessions, each with an execution ready to take a prompt.
    let seq = 0;
    for (let t = 0; t < TASKS; t++) {
      const taskId = `task-${t}`;
      const entries: StreamEntry[] = [];
      for (let s = 0; s < SESSIONS_PER_TASK; s++) {
        // A worker holds its execution's lease (renewed; here long enough for the run).
        await store.executions.renewLease(
          { taskId, sessionId: `s${s}`, executionId: `x-${t}-${s}` },
          600_000,
        );
        const base = {
          v: SCHEMA_VERSION,
          taskId,
          sessionId: `s${s}`,
          executionId: `x-${t}-${s}`,
          generation: 1,
        } as const;
        entries.push(
          {
            ...base,
            type: 'execution.started',
            writer: { role: 'worker', instance: 'bench-worker', seq: ++seq },
            data: { startedAt: new Date().toISOString() },
          },
          {
            ...base,
            type: 'capabilities.negotiated',
            writer: { role: 'worker', instance: 'bench-worker', seq: ++seq },
            data: {
              agent: { name: 'bench' },
              dialect: 'generic',
              promptQueueing: false,
              handoff: false,
              attestedKinds: [],
              unambiguousCompletionKinds: [],
            },
          },
        );
      }
      await store.append(taskId, entries);
    }
    await waitFor(async () => {
      const views = await Promise.all(
        Array.from({ length: TASKS }, (_, t) => store.views.read(`task-${t}`)),
      );
      return views.every((v) => v?.sessions.length === SESSIONS_PER_TASK);
    }, 'the projector to see every session');

    // This VM is shared: stalls of the server process (scheduling, GC) show in the tail; the
    // event-loop delay of the gateway + projector process is reported beside it.
    const loop = monitorEventLoopDelay({ resolution: 5 });
    loop.enable();
    const cpu0 = process.cpuUsage();
    const clients = clientsProcess();
    const sessions: [string, string][] = [];
    for (let x = 0; x < TASKS * SESSIONS_PER_TASK; x++) {
      sessions.push([`task-${Math.floor(x / SESSIONS_PER_TASK)}`, `s${x % SESSIONS_PER_TASK}`]);
    }
    clients.send({
      admit: {
        url: `${gateway.url.replace('http', 'ws')}/ws`,
        token: token('bench', 'read prompt'),
        connections: CONNECTIONS,
        rate: RATE,
        sessions,
        count: WARMUP + PROMPTS,
      },
    });
    const done = (await clients.next()) as { rtt: number[]; outcomes: Record<string, number> };
    await clients.close();
    const rtt = done.rtt.slice(WARMUP);
    loop.disable();
    const cpu = process.cpuUsage(cpu0);
    const outcomes = new Map(Object.entries(done.outcomes));
    rtt.sort((a, b) => a - b);
    const decided = [...outcomes.entries()].map(([o, n]) => `${n} ${o}`).join(', ');
    return [
      {
        name: `admission round trip p50 at ${RATE} prompts/s over 1,000 sessions (${decided})`,
        value: percentile(rtt, 50),
        unit: 'ms',
      },
      {
        name: 'admission round trip p99 (goal 15 ms; ratio = goal / value)',
        value: percentile(rtt, 99),
        unit: 'ms',
        baseline: 15,
        ratio: 15 / percentile(rtt, 99),
        goal: 1,
      },
      {
        name: 'admission round trip p90',
        value: percentile(rtt, 90),
        unit: 'ms',
      },
      {
        name: 'CPU of the gateway + projector process per prompt (decision, updates, view included)',
        value: (cpu.user + cpu.system) / 1e3 / (WARMUP + PROMPTS),
        unit: 'ms',
      },
      {
        name: 'event-loop delay of the gateway + projector process during the run: p99',
        value: loop.percentile(99) / 1e6,
        unit: 'ms',
      },
      {
        name: 'event-loop delay of the gateway + projector process during the run: max',
        value: loop.max / 1e6,
        unit: 'ms',
      },
    ];
  } finally {
    await gateway.stop();
    await projector.stop();
    await store.close();
  }
}

/** The child process holding the clients, driven over stdin/stdout. */
function clientsProcess() {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(__dirname, 'gateway-clients.ts')],
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
  const store = EventStore.connect({ url: redisUrl }, { shards: 1, prefix });
  const r = await store.leases.acquire(0, 'bench-owner', 600_000);
  if (!r.acquired) throw new Error('bench: lease');
  const lease: Lease = r.lease;
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
      taskId,
      seq: ++seq,
      type: 'session.activity',
      data: {
        sessionId: `s${i % 10}`,
        state: 'running',
        foregroundActivity: i % 2 === 0 ? 'generating' : 'background',
        activeSubagentCount: i % 3,
        supportsSteering: false,
        runningGeneration: 1 + (i % 5),
        admission: 'coarse',
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
        await store.publishUpdates(lease, taskId, updates.slice(i, i + 50));
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

export async function runGatewayBench(): Promise<BenchResult[]> {
  const server = await startRedis();
  try {
    return [...(await admission(server.url)), ...(await fanout(server.url))];
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
