/**
 * Soak: memory bounded by what is active, not by everything ever seen. One in-process projector
 * and one in-process gateway against their own redis-server; short tasks come and go (each: an
 * execution starts, negotiates, reports its ACP session and ends — four facts, one append), at
 * most WINDOW tasks in flight; once a task is published a client subscribes to it over /ws, reads
 * its view over REST and unsubscribes.
 * The heap after a full GC is read once 1,000 tasks have been folded, published and put away,
 * and again after 100,000 more. Eviction bounds are short so the run fits its budget: a task is
 * snapshotted 100 ms after its last entry and put away 500 ms after it, the gateway's
 * cached view and tenancy 500 ms after their last use (defaults: 30 s, 10 min, 10 min); what is measured is that nothing per task stays once it is put away.
 *
 * Run alone: node --expose-gc dist/bench/soak.bench.js
 */
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import WebSocket from 'ws';
import { fold, initialTaskState } from '@baton/activity';
import { startGateway } from '@baton/gateway';
import { SCHEMA_VERSION, taskKey, type StreamEntry } from '@baton/protocol';
import { startRedis } from '@baton/redis-server';
import { EventStore, connectRedis } from '@baton/store';
import { startProjector, type ProjectorHandle } from '@baton/projector';
import { heapAfterGc, runAsScript, type SuiteOutput } from './lib';

const SHARDS = 8;
const FIRST = 1_000;
const MORE = Number(process.env.SOAK_TASKS ?? 100_000);
/**
 * The 100,000 stop here if they take longer, so the suite keeps its budget on a loaded machine
 * (each task costs the owner ~15 Redis commands today; the row names how many went through).
 */
const MAX_SECONDS = Number(process.env.SOAK_SECONDS ?? 45);
/** Tasks appended and not yet seen published (their view written) at once. */
const WINDOW = 500;
/** SOAK_NO_EVICT=1: the same run with nothing put away (the before of an A/B). */
const EVICT_IDLE_MS = process.env.SOAK_NO_EVICT === '1' ? 0 : 500;
const TENANT = 'soak';
const SECRET = 'soak-secret-0123456789abcdefghijklmnop';

function token(): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const head = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ tenant: TENANT, scope: 'read', exp: Math.floor(Date.now() / 1000) + 3600 })}`;
  return `${head}.${createHmac('sha256', SECRET).update(head).digest('base64url')}`;
}

/** A client of the gateway: one WebSocket (requests by id) and REST reads. */
class Client {
  private n = 0;
  private readonly waiting = new Map<string, (m: { ok: boolean; error?: unknown }) => void>();
  private constructor(
    private readonly ws: WebSocket,
    private readonly url: string,
  ) {
    ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString()) as { type: string; id?: string; ok: boolean };
      if (m.type !== 'reply' || m.id === undefined) return;
      this.waiting.get(m.id)?.(m);
      this.waiting.delete(m.id);
    });
  }
  static async open(url: string): Promise<Client> {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/ws`, {
      headers: { authorization: `Bearer ${token()}` },
    });
    await once(ws, 'open');
    return new Client(ws, url);
  }
  private request(op: string, taskId: string): Promise<void> {
    const id = `r${++this.n}`;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, (m) =>
        m.ok ? resolve() : reject(new Error(`bench: ${op} ${JSON.stringify(m.error)}`)),
      );
      this.ws.send(JSON.stringify({ v: 1, id, op, taskId }));
    });
  }
  /** What a page does with a task it shows for a moment: subscribe, read its view, unsubscribe. */
  async glance(taskId: string): Promise<void> {
    await this.request('subscribe', taskId);
    const r = await fetch(`${this.url}/v1/tasks/${taskId}`, {
      headers: { authorization: `Bearer ${token()}` },
    });
    if (!r.ok) throw new Error(`bench: GET view ${r.status}`);
    await r.json();
    await this.request('unsubscribe', taskId);
  }
  close(): void {
    this.ws.close();
  }
}

const CAPS = {
  agent: { name: 'soak-agent' },
  dialect: 'generic',
  promptQueueing: false,
  handoff: false,
  attestedKinds: [],
  unambiguousCompletionKinds: [],
} as const;

function shortTask(taskId: string): StreamEntry[] {
  const x = { taskId, sessionId: 's1', executionId: `${taskId}-x1`, generation: 1 };
  const writer = (seq: number) => ({ role: 'worker' as const, instance: 'soak', seq });
  return [
    { type: 'execution.started', data: { startedAt: '2026-12-02T00:00:00Z' } },
    { type: 'capabilities.negotiated', data: CAPS },
    {
      type: 'agent.session',
      data: { acpSessionId: `${taskId}-acp`, loadable: true, loaded: false },
    },
    { type: 'execution.ended', data: { reason: 'completed' } },
  ].map((e, i) => ({ v: SCHEMA_VERSION, ...x, writer: writer(i + 1), ...e }) as StreamEntry);
}

/** A counter's or gauge's value, summed over its labels. */
async function metric(h: ProjectorHandle, name: string): Promise<number> {
  const m = h.registry.getSingleMetric(name);
  return m ? (await m.get()).values.reduce((sum, v) => sum + v.value, 0) : 0;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs tasks `from`..`to` - 1 through the projector, WINDOW at a time, until each is published;
 * the client glances at each once it is.
 */
async function run(
  store: EventStore,
  client: Client,
  from: number,
  to: number,
  deadline = Infinity,
): Promise<number> {
  // A task is through once its view is at the seq the fold of its four facts ends at (the view is
  // written with the updates it reflects: its version is the last published seq).
  const x = taskKey(TENANT, 'x');
  const done = shortTask(x).reduce((st, e) => fold(st, e).state, initialTaskState(x)).seq;
  let next = from;
  const inFlight = new Set<string>();
  const views = async () => {
    const ids = [...inFlight];
    const seqs = await Promise.all(
      ids.map((id) => store.redis.hget(store.keys.updateSeqs(store.shardOf(id)), id)),
    );
    const through = ids.filter((_, i) => seqs[i] !== null && Number(seqs[i]) >= done);
    await Promise.all(through.map((key) => client.glance(key.slice(TENANT.length + 1))));
    for (const key of through) inFlight.delete(key);
  };
  while (next < to || inFlight.size > 0) {
    if (performance.now() > deadline) to = next;
    const batch: Promise<unknown>[] = [];
    while (next < to && inFlight.size < WINDOW) {
      const id = `task-${next++}`;
      const key = taskKey(TENANT, id);
      inFlight.add(key);
      // As a gateway records a task among its tenant's before the first write to it.
      batch.push(store.tenants.add(TENANT, id).then(() => store.append(key, shortTask(key))));
    }
    await Promise.all(batch);
    await sleep(20);
    await views();
  }
  return next - from;
}

async function settled(p: ProjectorHandle): Promise<void> {
  if (EVICT_IDLE_MS === 0) return;
  for (let i = 0; p.heldTasks().length > 0; i++) {
    if (i > 600) throw new Error(`bench: ${p.heldTasks().length} tasks never put away`);
    await sleep(50);
  }
}

export async function runSoakBench(): Promise<SuiteOutput> {
  const server = await startRedis();
  const client = connectRedis({ url: server.url });
  const store = new EventStore(client, { prefix: 'soak', shards: SHARDS });
  const projectorOptions = {
    redisUrl: server.url,
    prefix: 'soak',
    shards: SHARDS,
    logLevel: 'silent',
    periods: { snapshotDelay: 100, evictIdle: EVICT_IDLE_MS, retention: 0 },
  } as const;
  const p = await startProjector(projectorOptions);
  const gateway = await startGateway({
    redisUrl: server.url,
    prefix: 'soak',
    shards: SHARDS,
    port: 0,
    jwtSecret: SECRET,
    logLevel: 'error',
    cacheIdleMs: EVICT_IDLE_MS,
    maxSubscriptions: WINDOW,
    maxSubscriptionsPerTenant: WINDOW,
    maxMessagesPerSecond: 1_000_000,
    maxRequestsPerSecond: 1_000_000,
  });
  const page = await Client.open(gateway.url);
  try {
    await p.ready();
    const t0 = performance.now();
    await run(store, page, 0, FIRST);
    await settled(p);
    const after1k = await heapAfterGc();
    const t1 = performance.now();
    const more = await run(store, page, FIRST, FIRST + MORE, t1 + MAX_SECONDS * 1_000);
    const t2 = performance.now();
    const peakHeld = await metric(p, 'baton_projector_tasks_held');
    await settled(p);
    const after100k = await heapAfterGc();
    const evicted = await metric(p, 'baton_projector_tasks_evicted_total');
    // A new owner after all that: it loads what is active (nothing, here) and replays the notes
    // its predecessor had not handled, not every task the shards have seen.
    await p.stop();
    const tk0 = performance.now();
    const next = await startProjector(projectorOptions);
    await next.ready();
    const takeoverMs = performance.now() - tk0;
    const takeoverLoaded = await metric(next, 'baton_projector_tasks_loaded_total');
    await next.stop();
    const hasGc = typeof (globalThis as { gc?: unknown }).gc === 'function';
    const mb = (b: number) => b / 2 ** 20;
    const rate = (more * 1_000) / (t2 - t1);
    const n = more.toLocaleString('en-US');
    return {
      results: [
        {
          name: `projector + gateway heap after a full GC, 1,000 short tasks folded, published, glanced at (subscribe, REST view, unsubscribe) and put away${hasGc ? '' : ' (run with --expose-gc)'}`,
          value: mb(after1k),
          unit: 'MB',
        },
        {
          name: `the same after ${n} more${more < MORE ? ` (of ${MORE.toLocaleString('en-US')}: stopped at ${MAX_SECONDS} s)` : ''} (ratio = after 1,000 / after ${n}; goal ≥ 90%: memory bounded by what is active)`,
          value: mb(after100k),
          unit: 'MB',
          baseline: mb(after1k),
          ratio: after1k / after100k,
          goal: 0.9,
        },
        {
          name: `short tasks through one projector and one gateway (4 facts each, ${WINDOW} in flight)`,
          value: rate,
          unit: 'tasks/s',
        },
        {
          name: `then a new projector takes the ${SHARDS} shards over: tasks it loads (of the ${(FIRST + more).toLocaleString('en-US')} the shards have seen, all put away)`,
          value: takeoverLoaded,
          unit: 'tasks',
        },
        { name: 'the same: takeover to ready()', value: takeoverMs, unit: 'ms' },
      ],
      details: `Tasks loaded ${(await metric(p, 'baton_projector_tasks_loaded_total')).toLocaleString('en-US')}, put away ${evicted.toLocaleString('en-US')}, held at the end of the ${n} ${peakHeld.toLocaleString('en-US')} (bound: those quiet for less than ${EVICT_IDLE_MS} ms), held after settling ${p.heldTasks().length}; first 1,000 took ${((t1 - t0) / 1e3).toFixed(1)} s.`,
    };
  } finally {
    page.close();
    await gateway.stop();
    await p.stop();
    client.disconnect();
    await server.stop();
  }
}

if (require.main === module) runAsScript(runSoakBench);
