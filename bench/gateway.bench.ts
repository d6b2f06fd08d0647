/**
 * The gateway (apps/gateway, in-process) against its own redis-server:
 *
 * - fan-out: updates delivered per second to 1,000 subscribers of one task (the owner's updates
 *   come from Redis through the gateway's tail), against a raw `ws` broadcast of the very same
 *   frames to 1,000 clients, in the same run, rounds interleaved. The clients live in a child
 *   process (bench/gateway-clients.ts), so the server side is what is compared.
 * - transcript fan-out: transcript events delivered per second to 10 watchers of one session,
 *   against a raw `ws` broadcast of the same messages to 10 clients, rounds interleaved.
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
import { taskKey, type Update } from '@baton/protocol';
import { activityUpdate } from './activity-update';
import { startRedis } from '@baton/redis-server';
import { EventStore, type Lease, type Publication, type TranscriptWrite } from '@baton/store';
import type WebSocket from 'ws';
import { WebSocketServer } from 'ws';
import { startGateway } from '@baton/gateway';
import { heapAfterGc, median, runAsScript, type BenchResult } from './lib';
import { recordUnits } from './units';
import { spawnGateway as spawnGatewayProc, token as benchToken, type Proc } from './procs';

const SECRET = 'bench-secret-0123456789abcdefghijklmnop';
const IDLE_CONNECTIONS = 2_000;
const SUBSCRIBERS = 1_000;
const FANOUT_UPDATES = 200;
const ROUNDS = 3;
const WATCHERS = 10;
const TRANSCRIPT_DELTAS = 5_000;
const TRANSCRIPT_WINDOW = 50;

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

type Clients = ReturnType<typeof clientsProcess>;

/** A quiet gateway on a free port over `redisUrl` and `prefix`, trusting the bench's tokens. */
const startBenchGateway = (
  redisUrl: string,
  prefix: string,
  shards: number,
  limits: Partial<Parameters<typeof startGateway>[0]> = {},
) =>
  startGateway({
    redisUrl,
    prefix,
    shards,
    port: 0,
    jwtSecret: SECRET,
    logLevel: 'error',
    ...limits,
  });

/** `row` measured against `baseline`, in the same unit, with their ratio. */
const against = (
  row: { name: string; value: number; unit: string },
  baseline: number,
): BenchResult => ({ ...row, baseline, ratio: row.value / baseline });

/** Connects `n` clients, subscribed to nothing, to a raw ws server: a baseline's receivers. */
async function connectToRaw(clients: Clients, server: WebSocketServer, n: number): Promise<void> {
  clients.send({
    connect: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`,
    n,
    subscribe: null,
  });
  await clients.next();
}

/**
 * Messages delivered per second: each of the `n` clients expects `count` messages, `send` sends
 * them, and the clock runs until every client has them all.
 */
async function deliveryRate(
  clients: Clients,
  count: number,
  n: number,
  send: () => unknown,
): Promise<number> {
  clients.send({ expect: count });
  await clients.next();
  const t0 = process.hrtime.bigint();
  await send();
  await clients.next();
  return (count * n * 1e9) / Number(process.hrtime.bigint() - t0);
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
  const gateway = await startBenchGateway(redisUrl, prefix, 1, {
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
    Array.from({ length: FANOUT_UPDATES }, (_, i) =>
      activityUpdate(key, ++seq, {
        sessionId: `s${i % 10}`,
        foregroundActivity: i % 2 === 0 ? 'generating' : 'background',
        activeSubagentCount: i % 3,
        runningGeneration: 1 + (i % 5),
      }),
    );
  const wire = (u: Update) => `{"v":1,"type":"update","update":${JSON.stringify(u)}}`;
  try {
    gwClients.send({
      connect: `${gateway.url.replace('http', 'ws')}/ws`,
      n: SUBSCRIBERS,
      subscribe: taskId,
      token: token('bench', 'read'),
    });
    await gwClients.next();
    await connectToRaw(rawClients, raw, SUBSCRIBERS);
    await connectToRaw(corkedClients, corkedServer, SUBSCRIBERS);
    const gwRates: number[] = [];
    const rawRates: number[] = [];
    const corkedRates: number[] = [];
    for (let round = 0; round < ROUNDS + 1; round++) {
      // Gateway: the owner publishes, the gateway tails Redis and fans out.
      const updates = makeUpdates();
      const gw = await deliveryRate(gwClients, FANOUT_UPDATES, SUBSCRIBERS, async () => {
        for (let i = 0; i < updates.length; i += 50) {
          await store.publishUpdates(lease, key, updates.slice(i, i + 50));
        }
      });
      // Raw ws: the same frames, sent to each client as fast as ws takes them.
      const frames = updates.map(wire);
      const rw = await deliveryRate(rawClients, FANOUT_UPDATES, SUBSCRIBERS, () => {
        for (const f of frames) for (const c of raw.clients) c.send(f);
      });
      // Raw ws with the gateway's write batching: the same frames, 50 per corked write.
      const ck = await deliveryRate(corkedClients, FANOUT_UPDATES, SUBSCRIBERS, () => {
        for (let i = 0; i < frames.length; i += 50) {
          for (const [c, socket] of sockets) {
            socket.cork();
            for (const f of frames.slice(i, i + 50)) c.send(f);
            socket.uncork();
          }
        }
      });
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
        ...against(
          {
            name: `gateway fan-out from Redis to ${SUBSCRIBERS.toLocaleString('en-US')} subscribers`,
            value: g,
            unit: 'updates/s',
          },
          w,
        ),
        goal: 0.8,
      },
      {
        name: 'raw ws broadcast corked 50 frames per write, like the gateway’s batches (reference)',
        value: k,
        unit: 'updates/s',
      },
      against(
        { name: 'gateway fan-out vs that corked raw broadcast', value: g, unit: 'updates/s' },
        k,
      ),
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

/**
 * Transcript deltas: a worker appends a turn's streamed text to the task's transcript in windows
 * (as it does every 75 ms), the gateway's hub reads the stream once and sends each of
 * {@link WATCHERS} subscribers of the session its events. Baseline: a raw `ws` broadcast of the
 * very messages the gateway sends (one per window, the same JSON), to as many clients.
 */
async function transcriptFanout(redisUrl: string): Promise<BenchResult[]> {
  const prefix = 'tfan';
  const taskId = 'tfan-task';
  const key = taskKey('bench', taskId);
  const store = EventStore.connect({ url: redisUrl }, { shards: 1, prefix });
  await store.tenants.add('bench', taskId);
  const streamKey = store.keys.transcript(key);
  const gateway = await startBenchGateway(redisUrl, prefix, 1);
  const raw = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await once(raw, 'listening');
  const gwClients = clientsProcess();
  const rawClients = clientsProcess();
  let n = 0;
  const windows = (): TranscriptWrite[][] =>
    Array.from({ length: TRANSCRIPT_DELTAS / TRANSCRIPT_WINDOW }, () =>
      Array.from({ length: TRANSCRIPT_WINDOW }, () => ({
        sessionId: 's1',
        executionId: 'x1',
        event: {
          type: 'text' as const,
          turn: 'p1',
          phase: 'turn' as const,
          item: 'm1',
          role: 'agent' as const,
          delta: ` token${n++ % 97} and`,
        },
      })),
    );
  // The gateway's message for one window, with ids as the stream gives them.
  const message = (w: TranscriptWrite[], ms: number) => {
    const events = w.map((e, i) => ({
      id: `${ms}-${i}`,
      executionId: e.executionId,
      event: e.event,
    }));
    return JSON.stringify({
      v: 1,
      type: 'transcript',
      taskId,
      sessionId: 's1',
      events,
      cursor: events[events.length - 1]!.id,
    });
  };
  try {
    gwClients.send({
      connect: `${gateway.url.replace('http', 'ws')}/ws`,
      n: WATCHERS,
      subscribe: taskId,
      transcript: 's1',
      token: token('bench', 'read'),
    });
    await gwClients.next();
    await connectToRaw(rawClients, raw, WATCHERS);
    const gwRates: number[] = [];
    const rawRates: number[] = [];
    for (let round = 0; round < ROUNDS + 1; round++) {
      const ws = windows();
      // The worker is another process: its append (validation, script) is not this one's cost.
      // The stream gets the entries its script writes, one round trip per window.
      const gw = await deliveryRate(gwClients, TRANSCRIPT_DELTAS, WATCHERS, async () => {
        for (const w of ws) {
          const p = store.redis.pipeline();
          for (const e of w)
            p.xadd(
              streamKey,
              '*',
              's',
              e.sessionId,
              'x',
              e.executionId,
              'e',
              JSON.stringify(e.event),
            );
          await p.exec();
        }
      });
      const frames = ws.map((w, i) => message(w, 1_800_000_000_000 + round * 1_000 + i));
      const rw = await deliveryRate(rawClients, TRANSCRIPT_DELTAS, WATCHERS, () => {
        for (const f of frames) for (const c of raw.clients) c.send(f);
      });
      if (round > 0) {
        gwRates.push(gw);
        rawRates.push(rw);
      }
    }
    const g = median(gwRates);
    const w = median(rawRates);
    const what = `${TRANSCRIPT_DELTAS.toLocaleString('en-US')} text deltas in windows of ${TRANSCRIPT_WINDOW}`;
    return [
      {
        name: `raw ws broadcast of the same transcript messages to ${WATCHERS} clients (${what})`,
        value: w,
        unit: 'events/s',
      },
      against(
        {
          name: `gateway fan-out of transcript deltas from Redis to ${WATCHERS} watchers of a session`,
          value: g,
          unit: 'events/s',
        },
        w,
      ),
    ];
  } finally {
    await gwClients.close();
    await rawClients.close();
    raw.close();
    await gateway.stop();
    await store.close();
  }
}

async function idleConnections(redisUrl: string): Promise<BenchResult[]> {
  const prefix = 'idle';
  const gateway = await startBenchGateway(redisUrl, prefix, 16, {
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
        ...against(
          {
            name: 'gateway: heap per idle connection subscribed to an idle task',
            value: gwPer,
            unit: 'B',
          },
          rawPer,
        ),
        atMost: 4_096,
      },
    ];
  } finally {
    raw.close();
    await gateway.stop();
  }
}

const SCALE_SHARDS = 8;
const SCALE_TASKS_PER_SHARD = 4;
const SCALE_WATCHERS_PER_TASK = 4;
/** How the owner's updates of a tick reach Redis (see publishTick in scaleOut). */
type PublishMode = 'per-shard' | 'per-update';
/**
 * The loads, in updates per second the owner publishes over every task: a light load, where what
 * a gateway pays whatever it serves (its process, a blocking read and a wake-up every 10 ms tick)
 * is much of its cost, and a load that keeps one gateway serving everyone busy, the load one
 * scales out for, where the goal (within 20% of one gateway's cost ÷ G) is judged. Both published
 * as a projector publishes (a shard's updates of a turn in one call); the busy load once more with
 * every update its own call, the worst case of wake-ups (not judged).
 */
const SCALE_LOADS: readonly { rate: number; mode: PublishMode; judged: boolean }[] = [
  { rate: 800, mode: 'per-shard', judged: false },
  { rate: 3_200, mode: 'per-shard', judged: true },
  { rate: 3_200, mode: 'per-update', judged: false },
];
const SCALE_WINDOW_MS = 6_000;
/**
 * Load before the window: a new process compiles its hot code (V8's optimizing compiler, on
 * threads of its own that /proc counts) for seconds after it starts; a gateway that has served
 * for days does not, and each extra gateway would be charged its own start-up.
 */
const SCALE_WARMUP_MS = 5_000;

/** A counter of a gateway's /metrics. */
async function gatewayMetric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.split(' ')[1]);
}

/**
 * Scale-out: G gateway processes, each serving the watchers of a disjoint share of the shards
 * (watchers routed by shard), while the owner publishes at a fixed rate over every task. A
 * gateway that reads only what it serves costs 1/G of one gateway serving everyone (plus its
 * fixed cost); one that read every shard would cost about as much as that one.
 */
async function scaleOut(redisUrl: string): Promise<BenchResult[]> {
  const prefix = 'scale';
  const d = { redisUrl, prefix, shards: SCALE_SHARDS };
  const store = EventStore.connect({ url: redisUrl }, { shards: SCALE_SHARDS, prefix });
  const leases: Lease[] = [];
  for (let s = 0; s < SCALE_SHARDS; s++) {
    const r = await store.leases.acquire(s, 'bench-owner', 600_000);
    if (!r.acquired) throw new Error('bench: lease');
    leases.push(r.lease);
  }
  const byShard: string[][] = Array.from({ length: SCALE_SHARDS }, () => []);
  for (let i = 0; byShard.some((t) => t.length < SCALE_TASKS_PER_SHARD); i++) {
    const id = `scale-${i}`;
    const list = byShard[store.shardOf(taskKey('bench', id))]!;
    if (list.length < SCALE_TASKS_PER_SHARD) list.push(id);
  }
  const tasks = byShard.flat();
  for (const t of tasks) await store.tenants.add('bench', t);
  // One task per shard that nothing is published to: a gateway watching only these reads every
  // shard's updates and delivers none of them, which is what a gateway pays for an update it
  // reads for no watcher of its own (the capacity model's charge when watchers are not routed).
  const quiet: string[] = Array.from({ length: SCALE_SHARDS }, () => '');
  for (let i = 0; quiet.some((t) => t === ''); i++) {
    const id = `scale-quiet-${i}`;
    const s = store.shardOf(taskKey('bench', id));
    if (quiet[s] === '') quiet[s] = id;
  }
  for (const t of quiet) await store.tenants.add('bench', t);
  const seqs = new Map<string, number>();
  /**
   * A task's next step as a projector publishes it: its update, and the view at that update (a
   * gateway starts each subscription from the stored view, then follows the updates after it).
   */
  const nextStep = (taskId: string): Publication => {
    const key = taskKey('bench', taskId);
    const seq = (seqs.get(key) ?? 0) + 1;
    seqs.set(key, seq);
    const fill = {
      sessionId: `s${seq % 4}`,
      foregroundActivity: seq % 2 === 0 ? ('generating' as const) : ('background' as const),
      activeSubagentCount: seq % 3,
      runningGeneration: seq,
    };
    return {
      taskId: key,
      updates: [activityUpdate(key, seq, fill)],
      view: {
        taskId: key,
        seq,
        status: 'active',
        activity: {
          foregroundActivity: fill.foregroundActivity,
          activeSubagentCount: fill.activeSubagentCount,
        },
        sessions: [],
      },
    };
  };
  /**
   * One tick's steps of `taskIds` (each once). `per-shard`: as a projector publishes them, one
   * fenced call per shard (its publications of a turn, joined); `per-update`: each its own call,
   * so every update can wake a gateway's read alone (the worst case of arrivals).
   */
  const publishTick = async (taskIds: readonly string[], mode: PublishMode) => {
    const perShard = new Map<number, Publication[][]>();
    for (const t of taskIds) {
      const step = nextStep(t);
      const shard = store.shardOf(step.taskId);
      const calls = perShard.get(shard) ?? [];
      if (mode === 'per-update' || calls.length === 0) calls.push([step]);
      else calls[0]!.push(step);
      perShard.set(shard, calls);
    }
    await Promise.all(
      [...perShard].flatMap(([shard, calls]) =>
        calls.map(async (steps) => {
          for (const r of await store.publishMany(leases[shard]!, steps))
            if (r instanceof Error) throw r;
        }),
      ),
    );
  };
  /** Publishes at `rate` for `ms`, round-robin over the tasks, in ticks of 10 ms. */
  const load = async (rate: number, ms: number, mode: PublishMode) => {
    const perTick = Math.round(rate / 100);
    if (perTick > tasks.length) throw new Error('bench: a task twice in one tick');
    let next = 0;
    const end = performance.now() + ms;
    for (let tick = performance.now(); tick < end; tick += 10) {
      await publishTick(
        Array.from({ length: perTick }, () => tasks[next++ % tasks.length]!),
        mode,
      );
      const wait = tick + 10 - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    return next;
  };
  /**
   * G gateways, the watchers of shard s on gateway s mod G; or (`readsOnly`) one gateway with one
   * watcher of each shard's quiet task.
   */
  const run = async (g: number, rate: number, mode: PublishMode, readsOnly = false) => {
    const gateways: { proc: Proc; url: string }[] = [];
    for (let i = 0; i < g; i++) gateways.push(await spawnGatewayProc(d, `scale-gw-${g}-${i}`));
    const clients = clientsProcess();
    try {
      const tok = benchToken('bench', 'read');
      for (let s = 0; s < SCALE_SHARDS; s++) {
        const gw = gateways[s % g]!;
        for (const t of readsOnly ? [quiet[s]!] : byShard[s]!) {
          clients.send({
            connect: `${gw.url.replace('http', 'ws')}/ws`,
            n: readsOnly ? 1 : SCALE_WATCHERS_PER_TASK,
            subscribe: t,
            token: tok,
          });
          await clients.next();
        }
      }
      await load(rate, SCALE_WARMUP_MS, mode);
      // The scrape before the CPU is read: a window holds the gateways' work on updates only.
      const dec0 = await Promise.all(
        gateways.map((x) => gatewayMetric(x.url, 'baton_gateway_updates_decoded_total')),
      );
      const reads0 = await Promise.all(
        gateways.map((x) => gatewayMetric(x.url, 'baton_gateway_update_tail_reads_total')),
      );
      const cpu0 = gateways.map((x) => x.proc.cpu());
      const t0 = performance.now();
      const published = await load(rate, SCALE_WINDOW_MS, mode);
      // What is published is fanned out before the window closes.
      await new Promise((r) => setTimeout(r, 300));
      const cpu1 = gateways.map((x) => x.proc.cpu());
      const secs = (performance.now() - t0) / 1e3;
      const cpu = gateways.map((x, i) => ((cpu1[i]! - cpu0[i]!) * 1e3) / secs);
      const decoded = await Promise.all(
        gateways.map(
          async (x, i) =>
            (await gatewayMetric(x.url, 'baton_gateway_updates_decoded_total')) - dec0[i]!,
        ),
      );
      const reads = await Promise.all(
        gateways.map(
          async (x, i) =>
            ((await gatewayMetric(x.url, 'baton_gateway_update_tail_reads_total')) - reads0[i]!) /
            secs,
        ),
      );
      return { cpu, decoded, published, secs, reads };
    } finally {
      await clients.close();
      await Promise.all(gateways.map((x) => x.proc.stop()));
    }
  };
  try {
    const rows: BenchResult[] = [];
    for (const { rate, mode, judged } of SCALE_LOADS) {
      const at = `scale-out at ${rate.toLocaleString('en-US')} updates/s${mode === 'per-update' ? ', each update its own call' : ''}`;
      const one = await run(1, rate, mode);
      rows.push({
        name: `${at}: 1 gateway serving every watcher (${tasks.length} tasks on ${SCALE_SHARDS} shards × ${SCALE_WATCHERS_PER_TASK} watchers): its CPU (reads/s ${one.reads[0]!.toFixed(0)})`,
        value: one.cpu[0]!,
        unit: 'ms/s',
      });
      for (const g of [2, 4]) {
        const r = await run(g, rate, mode);
        const ideal = one.cpu[0]! / g;
        const busiest = Math.max(...r.cpu);
        rows.push({
          name: `${at}: ${g} gateways, each serving a disjoint 1/${g} of the watchers (by shard): CPU of the busiest (${r.cpu.map((c) => c.toFixed(0)).join(', ')} ms/s; reads/s ${r.reads.map((n) => n.toFixed(0)).join(', ')}) vs ideal (1 gateway's ÷ ${g})`,
          value: busiest,
          unit: 'ms/s',
          baseline: ideal,
          ratio: busiest / ideal,
          ...(judged ? { atMost: ideal * 1.2 } : {}),
        });
        const share = r.published / g;
        rows.push({
          name: `${at}: ${g} gateways: updates decoded by the busiest (${r.decoded.join(', ')}) vs 1/${g} of those published (${r.published})`,
          value: Math.max(...r.decoded),
          unit: 'updates',
          baseline: share,
          ratio: Math.max(...r.decoded) / share,
          atMost: share * 1.2,
        });
      }
    }
    const reads = await run(1, SCALE_LOADS[0]!.rate, 'per-shard', true);
    const readUs = (reads.cpu[0]! * 1e3 * reads.secs) / reads.decoded[0]!;
    rows.push({
      name: `scale-out: 1 gateway reading every shard for one idle watcher each (${reads.decoded[0]} updates decoded, none delivered): CPU per update read for no watcher of its own`,
      value: readUs,
      unit: 'µs',
    });
    recordUnits('gateway', { gatewayCpuPerUpdateReadUs: readUs });
    return rows;
  } finally {
    await store.close();
  }
}

export async function runGatewayBench(): Promise<BenchResult[]> {
  const server = await startRedis();
  try {
    return [
      ...(await fanout(server.url)),
      ...(await transcriptFanout(server.url)),
      ...(await idleConnections(server.url)),
      ...(await scaleOut(server.url)),
    ];
  } finally {
    await server.stop();
  }
}

if (require.main === module) runAsScript(runGatewayBench);
