/**
 * Soak: memory bounded by what is active, not by everything ever seen. One in-process projector
 * against its own redis-server; short tasks come and go (each: an execution starts, negotiates,
 * reports its ACP session and ends — four facts, one append), at most WINDOW tasks in flight.
 * The heap after a full GC is read once 1,000 tasks have been folded, published and put away,
 * and again after 100,000 more. Eviction bounds are short so the run fits its budget: a task is
 * snapshotted 100 ms after its last entry and put away 500 ms after it (defaults: 30 s and
 * 10 min); what is measured is that nothing per task stays once it is put away.
 *
 * Run alone: node --expose-gc dist/bench/soak.bench.js
 */
import { fold, initialTaskState } from '@baton/activity';
import { SCHEMA_VERSION, type StreamEntry } from '@baton/protocol';
import { startRedis } from '@baton/redis-server';
import { EventStore, connectRedis } from '@baton/store';
import { startProjector, type ProjectorHandle } from '@baton/projector';
import { formatResults, type SuiteOutput } from './lib';

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
const EVICT_IDLE_MS = 500;

const CAPS = {
  agent: { name: 'soak-agent' },
  dialect: 'generic',
  promptQueueing: false,
  handoff: false,
  attestedKinds: [],
  unambiguousCompletionKinds: [],
} as const;

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  // Twice: what the first collection frees can hold more (weak maps, finalizers).
  g?.();
  g?.();
}

function heap(): number {
  gc();
  return process.memoryUsage().heapUsed;
}

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

async function metric(h: ProjectorHandle, name: string): Promise<number> {
  const text = await h.registry.metrics();
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm')))
    sum += Number(m[1]);
  return sum;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs tasks `from`..`to` - 1 through the projector, WINDOW at a time, until each is published. */
async function run(
  store: EventStore,
  from: number,
  to: number,
  deadline = Infinity,
): Promise<number> {
  // A task is through once its view is at the seq the fold of its four facts ends at.
  const done = shortTask('x').reduce((st, e) => fold(st, e).state, initialTaskState('x')).seq;
  let next = from;
  const inFlight = new Set<string>();
  const views = async () => {
    const ids = [...inFlight];
    const seqs = await Promise.all(
      ids.map((id) => store.redis.hget(store.keys.viewSeqs(store.shardOf(id)), id)),
    );
    ids.forEach((id, i) => {
      if (seqs[i] !== null && Number(seqs[i]) >= done) inFlight.delete(id);
    });
  };
  while (next < to || inFlight.size > 0) {
    if (performance.now() > deadline) to = next;
    const batch: Promise<unknown>[] = [];
    while (next < to && inFlight.size < WINDOW) {
      const id = `soak-${next++}`;
      inFlight.add(id);
      batch.push(store.append(id, shortTask(id)));
    }
    await Promise.all(batch);
    await sleep(20);
    await views();
  }
  return next - from;
}

async function settled(p: ProjectorHandle): Promise<void> {
  for (let i = 0; p.heldTasks().length > 0; i++) {
    if (i > 600) throw new Error(`bench: ${p.heldTasks().length} tasks never put away`);
    await sleep(50);
  }
}

export async function runSoakBench(): Promise<SuiteOutput> {
  const server = await startRedis();
  const client = connectRedis({ url: server.url });
  const store = new EventStore(client, { prefix: 'soak', shards: SHARDS });
  const p = await startProjector({
    redisUrl: server.url,
    prefix: 'soak',
    shards: SHARDS,
    logLevel: 'silent',
    snapshotMs: 100,
    evictIdleMs: EVICT_IDLE_MS,
    retentionMs: 0,
  });
  try {
    await p.ready();
    const t0 = performance.now();
    await run(store, 0, FIRST);
    await settled(p);
    const after1k = heap();
    const t1 = performance.now();
    const more = await run(store, FIRST, FIRST + MORE, t1 + MAX_SECONDS * 1_000);
    const t2 = performance.now();
    const peakHeld = await metric(p, 'baton_projector_tasks_held');
    await settled(p);
    const after100k = heap();
    const evicted = await metric(p, 'baton_projector_tasks_evicted_total');
    const hasGc = typeof (globalThis as { gc?: unknown }).gc === 'function';
    const mb = (b: number) => b / 2 ** 20;
    const rate = (more * 1_000) / (t2 - t1);
    const n = more.toLocaleString('en-US');
    return {
      results: [
        {
          name: `projector heap after a full GC, 1,000 short tasks folded, published and put away${hasGc ? '' : ' (run with --expose-gc)'}`,
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
          name: `short tasks through one projector (4 facts each, ${WINDOW} in flight; fold, publish, view, snapshot, put away)`,
          value: rate,
          unit: 'tasks/s',
        },
      ],
      details: `Tasks loaded ${(await metric(p, 'baton_projector_tasks_loaded_total')).toLocaleString('en-US')}, put away ${evicted.toLocaleString('en-US')}, held at the end of the ${n} ${peakHeld.toLocaleString('en-US')} (bound: those quiet for less than ${EVICT_IDLE_MS} ms), held after settling ${p.heldTasks().length}; first 1,000 took ${((t1 - t0) / 1e3).toFixed(1)} s.`,
    };
  } finally {
    await p.stop();
    client.disconnect();
    await server.stop();
  }
}

if (require.main === module) {
  runSoakBench().then(
    (out) => {
      const r = Array.isArray(out) ? { results: out, details: '' } : out;
      console.log(formatResults(r.results));
      if (r.details) console.log(r.details);
      process.exit(0);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
