// Slow consumers at scale: sockets that stop reading and keep re-subscribing to a task with a ~1 MB
// view (10 queued prompts of 99,000 characters) must not blow up the gateway's memory, nor delay a
// client that reads. Real processes: redis-server, a projector (it writes the view), a gateway.
import { readFileSync } from 'node:fs';
import { chatUri } from '@baton/ahp';
import { taskKey } from '@baton/protocol';
import WebSocket from 'ws';
import {
  Client,
  FakeWorker,
  startStack,
  tokenFor,
  waitFor,
  type GatewayProc,
  type Stack,
} from '@baton/testing';

jest.setTimeout(300_000);

const TASK = 'bp-big';
const SESSION = 's1';
const CHANNEL = chatUri(TASK, SESSION);
const SLOW = 8;
/**
 * How long the slow sockets keep at it (30 s, as the security requirement states the attack;
 * shorter for a quick run).
 */
const ATTACK_MS = Number(process.env.SLOW_ATTACK_MS ?? 30_000);
const MB = 1024 * 1024;
/** The gateway's V8 old-space limit in this test (see startStack below). */
const GATEWAY_HEAP_MB = 160;
/** The most the attack may add to the gateway's RSS. */
const MAX_GROWTH_MB = 250;
/** A socket that has not drained two heartbeats after it fell behind is closed (4008). */
const HEARTBEAT_MS = 4_000;
const tok = tokenFor('bp');
/** The task below the gateway: the key of the tenant's task id. */
const KEY = taskKey('bp', TASK);

let stack: Stack;
let gw: GatewayProc;
let worker: FakeWorker;
let bumps = 0;

type Json = Record<string, unknown>;

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

beforeAll(async () => {
  stack = await startStack({
    gateways: 1,
    projectors: 1,
    shards: 2,
    // Short heartbeats: a socket that does not drain is closed (and redials) within the attack.
    gatewayEnv: {
      GATEWAY_HEARTBEAT_MS: String(HEARTBEAT_MS),
      // A small deployment's heap. What an attack can hold must stay live; its garbage is V8's to
      // collect, and how far V8 lets a heap grow before it does differs between versions: with no
      // limit, the same run peaks about +150 MB of RSS on Node 24 (+58 MB on Node 20) with under
      // 70 MB of it live. Within this limit the gateway keeps serving, which proves the bound.
      NODE_OPTIONS:
        `${process.env.GATEWAY_NODE_OPTIONS ?? ''} --max-old-space-size=${GATEWAY_HEAP_MB}`.trim(),
    },
  });
  gw = stack.gateways[0]!;
  worker = new FakeWorker(stack.store, KEY, SESSION);
  await worker.start();
  const c = await Client.connect(gw.wsUrl, tok);
  for (let i = 0; i <= 10; i++) {
    const r = await c.request({
      op: 'prompt',
      taskId: TASK,
      sessionId: SESSION,
      text: `prompt ${i} `.padEnd(99_000, 'x'),
      idempotencyKey: `big-${i}`,
    });
    expect(r.ok).toBe(true);
  }
  await c.close();
  await waitFor(
    async () =>
      (await stack.store.views.read(KEY))?.sessions[0]?.queue.entries.length === 10 || undefined,
    'ten queued prompts in the view',
    30_000,
  );
  const size = JSON.stringify(await stack.store.views.read(KEY)).length;
  expect(size).toBeGreaterThan(990_000);
});
afterAll(() => stack?.stop());

/** One update on the task (background work started); returns its work id. */
async function bump(): Promise<string> {
  const id = `bp-${++bumps}`;
  await worker.fact('background.started', {
    attested: false,
    work: { kind: 'shell', id, label: id, command: 'make', startedAt: '2026-12-01T00:00:00Z' },
  });
  return id;
}

/** A socket that subscribes every 50 ms and never reads; when it is closed, it dials again. */
class SlowSocket {
  stopped = false;
  subscribes = 0;
  private ws: WebSocket | undefined;
  private n = 0;
  private done: Promise<void> | undefined;

  constructor(private readonly path: '/ws' | '/ahp') {}

  start(): void {
    this.done = (async () => {
      while (!this.stopped) {
        await this.once();
        if (!this.stopped) await sleep(100);
      }
    })();
  }

  private subscribe(): string {
    const id = ++this.n;
    return this.path === '/ws'
      ? JSON.stringify({ v: 1, id: `s${id}`, op: 'subscribe', taskId: TASK })
      : JSON.stringify({ jsonrpc: '2.0', id, method: 'subscribe', params: { channel: CHANNEL } });
  }

  private once(): Promise<void> {
    return new Promise((resolve) => {
      const ws = new WebSocket(`${gw.wsUrl}${this.path}`, {
        headers: { authorization: `Bearer ${tok}` },
      });
      this.ws = ws;
      let timer: NodeJS.Timeout | undefined;
      ws.on('open', () => {
        if (this.path === '/ahp') {
          ws.send(
            JSON.stringify({
              jsonrpc: '2.0',
              id: 0,
              method: 'initialize',
              params: { protocolVersions: ['1.0.0'], clientId: 'slow' },
            }),
          );
        }
        // Stop reading: what the gateway sends stays in its buffers (and the kernel's).
        (ws as unknown as { _socket: { pause(): void } })._socket.pause();
        timer = setInterval(() => {
          if (ws.readyState !== WebSocket.OPEN) return;
          ws.send(this.subscribe());
          this.subscribes++;
        }, 50);
      });
      ws.on('error', () => undefined);
      ws.on('close', () => {
        clearInterval(timer);
        resolve();
      });
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.ws?.terminate();
    await this.done;
  }
}

interface Watch {
  /** Waits until the reading client has the update about work `id`. */
  got(id: string): Promise<void>;
  check(): void;
  close(): Promise<void>;
}

async function watchWs(): Promise<Watch> {
  const c = await Client.connect(gw.wsUrl, tok);
  const r = await c.request({ op: 'subscribe', taskId: TASK });
  const from = (r.result as Json).seq as number;
  return {
    got: async (id) => {
      await c.next(
        (m) =>
          m.type === 'update' &&
          ((m.update as Json).data as { work?: { id?: string } }).work?.id === id,
        `the update about ${id}`,
        0,
        120_000,
      );
    },
    check: () => {
      // Every update once, in order, and never told to resync.
      const seqs = c.updates(TASK).map((u) => u.seq as number);
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => from + 1 + i));
      expect(c.messages.filter((m) => m.type === 'snapshot')).toHaveLength(1);
      expect(c.closed).toBeUndefined();
    },
    close: () => c.close(),
  };
}

async function watchAhp(): Promise<Watch> {
  const c = await Client.connect(gw.wsUrl, tok, '/ahp');
  const init = await c.rpc('initialize', {
    protocolVersions: ['1.0.0'],
    clientId: 'reader',
    initialSubscriptions: [CHANNEL],
  });
  expect(init.result).toBeDefined();
  const from = (init.result as { serverSeq: number }).serverSeq;
  const actions = () =>
    c.messages.filter((m) => m.method === 'action').map((m) => m.params as Json);
  return {
    got: async (id) => {
      await c.next(
        (m) => m.method === 'action' && JSON.stringify(m.params).includes(`"${id}"`),
        `the action about ${id}`,
        0,
        120_000,
      );
    },
    check: () => {
      // The host's serverSeq (every connection takes numbers from it): strictly growing.
      const seqs = actions().map((a) => a.serverSeq as number);
      expect(seqs[0]).toBeGreaterThan(from);
      expect(seqs.every((q, i) => i === 0 || q > seqs[i - 1]!)).toBe(true);
      expect(c.closed).toBeUndefined();
    },
    close: () => c.close(),
  };
}

/** The gateway's heap and off-heap memory, from its /metrics (to see where RSS goes). */
async function heapOf(): Promise<string> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const get = (name: string) =>
    Number(new RegExp(`^baton_gateway_${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN) / MB;
  return (
    `rss ${get('process_resident_memory_bytes').toFixed(0)} MB, heap used ${get('nodejs_heap_size_used_bytes').toFixed(0)} MB of ` +
    `${get('nodejs_heap_size_total_bytes').toFixed(0)}, external ` +
    `${get('nodejs_external_memory_bytes').toFixed(0)} MB`
  );
}

/** Subscribes on a fresh connection; true when the reply with the ~1 MB view came as text. */
async function snapshotIsText(path: '/ws' | '/ahp'): Promise<boolean> {
  const ws = new WebSocket(`${gw.wsUrl}${path}`, { headers: { authorization: `Bearer ${tok}` } });
  await new Promise((r) => ws.once('open', r));
  const text = new Promise<boolean>((resolve) => {
    ws.on('message', (data: Buffer, isBinary) => {
      if (data.length > 990_000) resolve(!isBinary && JSON.parse(data.toString()) !== undefined);
    });
  });
  ws.send(
    path === '/ws'
      ? JSON.stringify({ v: 1, id: 'r', op: 'subscribe', taskId: TASK })
      : JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersions: ['1.0.0'], clientId: 'r', initialSubscriptions: [CHANNEL] },
        }),
  );
  const ok = await text;
  ws.terminate();
  return ok;
}

/** How many connections the gateway has closed as slow consumers (4008). */
async function slowCloses(): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  return Number(/^baton_gateway_errors_total\{code="slow_consumer"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

/** Bumps the task every 100 ms and measures how long each bump takes to reach the reader. */
async function measure(w: Watch, ms: number, sample: () => void): Promise<number[]> {
  const lat: number[] = [];
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const t0 = performance.now();
    const id = await bump();
    await w.got(id);
    lat.push(performance.now() - t0);
    sample();
    await sleep(100);
  }
  return lat;
}

for (const path of ['/ws', '/ahp'] as const) {
  it(`${path}: ${SLOW} sockets that stop reading and re-subscribe cannot grow the gateway's memory, nor slow a reader`, async () => {
    const pid = gw.proc.pid!;
    const w = path === '/ws' ? await watchWs() : await watchAhp();
    // Warm-up: readers subscribe and read (the view is built, the code paths are hot).
    for (let i = 0; i < 6; i++) {
      const r = path === '/ws' ? await watchWs() : await watchAhp();
      await r.close();
    }
    await measure(w, 2_000, () => undefined);
    // Baseline of the same run: memory and the reader's delay before any slow socket.
    const base: number[] = [];
    const baseLat = await measure(w, 4_000, () => base.push(rssBytes(pid)));
    const baseRss = median(base);
    const heapBefore = process.env.SLOW_DEBUG ? await heapOf() : '';
    const closedBefore = await slowCloses();

    const slow = Array.from({ length: SLOW }, () => new SlowSocket(path));
    for (const s of slow) s.start();
    let peak = 0;
    let heapAtPeak = '';
    let maxScrape = 0;
    let looking = false;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssBytes(pid));
      // With SLOW_DEBUG, where the memory is (V8 heap or not) when the gateway's RSS is highest.
      if (!process.env.SLOW_DEBUG || looking) return;
      looking = true;
      void heapOf().then((h) => {
        looking = false;
        const r = Number(/^rss (\d+)/.exec(h)?.[1]);
        if (r > maxScrape) {
          maxScrape = r;
          heapAtPeak = h;
        }
      });
    }, 200);
    let attackLat: number[];
    try {
      attackLat = await measure(w, ATTACK_MS, () => (peak = Math.max(peak, rssBytes(pid))));
    } finally {
      clearInterval(sampler);
      await Promise.all(slow.map((s) => s.stop()));
    }
    const grew = (peak - baseRss) / MB;
    const closed = (await slowCloses()) - closedBefore;
    const subscribes = slow.reduce((n, s) => n + s.subscribes, 0);
    console.log(
      `${path}: RSS baseline ${(baseRss / MB).toFixed(0)} MB, peak ${(peak / MB).toFixed(0)} MB ` +
        `(+${grew.toFixed(0)} MB); reader delay p50 ${median(baseLat).toFixed(1)} ms before, ` +
        `${median(attackLat).toFixed(1)} ms during (max ${Math.max(...attackLat).toFixed(0)} ms); ` +
        `${subscribes} subscribes, ${closed} closed as slow consumers` +
        (process.env.SLOW_DEBUG ? `; ${heapBefore} -> ${heapAtPeak}` : ''),
    );
    // Unbounded, this attack grew the gateway by ~490 MB in 30 s (every re-subscribe read back a
    // page of whole-queue updates). Bounded, what remains is garbage awaiting V8: +25–60 MB on
    // Node 20, +50–170 MB on Node 24 (its heap grows further before a major collection, and the
    // /ahp run starts from the /ws run's heap).
    expect(grew).toBeLessThanOrEqual(MAX_GROWTH_MB);
    // The slow sockets were closed (4008) for not draining, again after each redial.
    if (ATTACK_MS > HEARTBEAT_MS * 3) expect(closed).toBeGreaterThanOrEqual(SLOW);
    // The reader kept getting its updates: every one, in order, promptly compared with before.
    w.check();
    expect(median(attackLat)).toBeLessThanOrEqual(median(baseLat) * 10 + 250);
    // The gateway still serves: a new reader gets the ~1 MB view, as a text message.
    expect(await snapshotIsText(path)).toBe(true);
    await w.close();
  });
}

it('a socket that does not drain is closed with 4008 and a reason (seen by a client that reads again)', async () => {
  const c = await Client.connect(gw.wsUrl, tok);
  const before = await slowCloses();
  const socket = (c.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
  socket.pause();
  const t = setInterval(() => c.send({ v: 1, id: 'again', op: 'subscribe', taskId: TASK }), 50);
  try {
    await waitFor(async () => (await slowCloses()) > before, 'the gateway to close it', 60_000);
  } finally {
    clearInterval(t);
  }
  // The socket is destroyed a second after the close frame, read or not: read it before then.
  socket.resume();
  await waitFor(() => c.closed, 'the close frame');
  expect(c.closed).toEqual({
    code: 4008,
    reason: expect.stringMatching(/^slow consumer: /) as string,
  });
  // It had been told it was behind: its later subscribes were refused, not answered with views.
  const refused = c.messages.filter(
    (m) => m.type === 'reply' && (m.error as { code?: string } | undefined)?.code === 'unavailable',
  );
  expect(refused.length).toBeGreaterThan(0);
});
