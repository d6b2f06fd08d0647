/**
 * Projector benchmarks, against a redis-server of its own:
 *
 * - takeover of 100 tasks x 1,000 entries: entries/s of a new instance from start to caught up,
 *   against raw XREAD + JSON.parse of the same streams in the same run, interleaved;
 * - takeover replay of one 100,000-entry task (10 sessions) from zero: a new projector instance
 *   from start to caught up (lease, snapshot read, readTask pages with an envelope check, fold, nothing left to
 *   publish since a first owner published it all), against raw XREAD + JSON.parse of the same
 *   stream in the same run, interleaved;
 * - the same takeover from a snapshot (the stream trimmed behind it, as the owner leaves it);
 * - heap held per idle session by a projector that owns 5,000 idle sessions.
 *
 * Run alone: node --expose-gc --import tsx bench/projector.bench.ts
 */
import type { StreamEntry } from '@baton/protocol';
import { startRedis } from '@baton/redis-server';
import { EventStore, connectRedis, type RedisClient } from '@baton/store';
import { startProjector } from '@baton/projector';
import { recordStream } from './fold.bench';
import { median, runAsScript, versus, type BenchResult } from './lib';

const ENTRIES = 100_000;
const RUNS = 3;
const IDLE_TASKS = 500;
const SESSIONS = 10;

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

function ms(t0: bigint): number {
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/** Appends recorded streams as their writers would (batches, in order), with live execution leases. */
async function load(store: EventStore, streams: StreamEntry[][]): Promise<number> {
  let n = 0;
  await Promise.all(
    streams.map(async (stream) => {
      const executions = new Map<string, string>();
      for (const e of stream) if ('executionId' in e) executions.set(e.executionId, e.sessionId);
      for (const [executionId, sessionId] of executions) {
        await store.executions.renewLease(
          { taskId: stream[0]!.taskId, sessionId, executionId },
          3_600_000,
        );
      }
      for (let i = 0; i < stream.length; i += 1_000) {
        const batch = stream.slice(i, i + 1_000);
        await store.append(batch[0]!.taskId, batch);
        n += batch.length;
      }
    }),
  );
  return n;
}

/** Time from starting a projector to it having caught up with everything it owns. */
async function takeover(
  url: string,
  prefix: string,
  shards: number,
  periods: { snapshotDelay?: number } = {},
) {
  const t0 = process.hrtime.bigint();
  const p = await startProjector({
    redisUrl: url,
    prefix,
    shards,
    logLevel: 'silent',
    snapshotEntries: 10_000_000,
    periods: { snapshotDelay: 86_400_000, ...periods },
  });
  await p.ready();
  const elapsed = ms(t0);
  return { p, elapsed };
}

/**
 * RUNS takeovers of `prefix` by a fresh projector, each after a full collection: their ms. With
 * `readRaw`, each is preceded by it (interleaved, so both see the same machine state): its ms.
 */
async function takeovers(
  url: string,
  prefix: string,
  shards: number,
  readRaw?: () => Promise<number>,
): Promise<{ zero: number[]; raw: number[] }> {
  const zero: number[] = [];
  const raw: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    if (readRaw) {
      gc();
      raw.push(await readRaw());
    }
    gc();
    const z = await takeover(url, prefix, shards);
    zero.push(z.elapsed);
    await z.p.stop();
  }
  return { zero, raw };
}

async function rawRead(client: RedisClient, key: string): Promise<{ n: number; elapsed: number }> {
  const t0 = process.hrtime.bigint();
  let after = '0-0';
  let n = 0;
  for (;;) {
    const res = (await client.xread('COUNT', 1_000, 'STREAMS', key, after)) as
      [string, [string, string[]][]][] | null;
    const entries = res?.[0]?.[1] ?? [];
    if (entries.length === 0) break;
    for (const [, fields] of entries) {
      const e = JSON.parse(fields[1]!) as StreamEntry;
      if (e.v !== 1) throw new Error('bench: bad entry');
      n += 1;
    }
    after = entries[entries.length - 1]![0];
  }
  return { n, elapsed: ms(t0) };
}

export async function runProjectorBench(): Promise<BenchResult[]> {
  const server = await startRedis();
  const client = connectRedis({ url: server.url });
  try {
    // Throughput: 100 tasks x 1,000 entries (10 sessions each), as a first owner left them.
    const many = recordStream(100, SESSIONS, ENTRIES);
    const manyStore = new EventStore(client, { prefix: 'many', shards: 8 });
    const manyTotal = await load(manyStore, many);
    const manyFirst = await takeover(server.url, 'many', 8);
    await manyFirst.p.stop();
    const { zero: manyZero, raw: manyRaw } = await takeovers(server.url, 'many', 8, async () => {
      let n = 0;
      const t0 = process.hrtime.bigint();
      for (const st of many)
        n += (await rawRead(client, manyStore.keys.taskStream(st[0]!.taskId))).n;
      if (n !== manyTotal) throw new Error(`bench: read ${n} of ${manyTotal}`);
      return ms(t0);
    });

    // One task of 100,000 entries, as a first owner left it: every update published.
    const stream = recordStream(1, SESSIONS, ENTRIES)[0]!;
    const store = new EventStore(client, { prefix: 'one', shards: 1 });
    const total = await load(store, [stream]);
    const first = await takeover(server.url, 'one', 1);
    await first.p.stop();

    const { zero, raw } = await takeovers(server.url, 'one', 1, async () => {
      const r = await rawRead(client, store.keys.taskStream(stream[0]!.taskId));
      if (r.n !== total) throw new Error(`bench: read ${r.n} of ${total}`);
      return r.elapsed;
    });

    // The owner snapshots a quiet task after snapshotDelay and trims the stream behind it.
    const s = await takeover(server.url, 'one', 1, { snapshotDelay: 100 });
    const lastId = await store.lastId(stream[0]!.taskId);
    for (let i = 0; (await store.snapshots.read(stream[0]!.taskId))?.id !== lastId; i++) {
      if (i > 600) throw new Error('bench: no snapshot');
      await new Promise((r) => setTimeout(r, 50));
    }
    await s.p.stop();
    const fromSnapshot = (await takeovers(server.url, 'one', 1)).zero;

    // Heap per idle session: a projector holding 5,000 idle sessions, against one holding none.
    const idleStreams = recordStream(IDLE_TASKS, SESSIONS, IDLE_TASKS * SESSIONS * 16);
    await load(new EventStore(client, { prefix: 'idle', shards: 8 }), idleStreams);
    const warm = await takeover(server.url, 'idle', 8);
    await warm.p.stop();
    gc();
    const loaded = await takeover(server.url, 'idle', 8);
    gc();
    const withSessions = process.memoryUsage().heapUsed;
    await loaded.p.stop();
    const empty = await takeover(server.url, 'empty', 8);
    gc();
    const without = process.memoryUsage().heapUsed;
    await empty.p.stop();
    const perSession = (withSessions - without) / (IDLE_TASKS * SESSIONS);
    const hasGc = typeof (globalThis as { gc?: unknown }).gc === 'function';

    const zeroMs = median(zero);
    const snapMs = median(fromSnapshot);
    const rawMs = median(raw);
    const rate = (total * 1_000) / zeroMs;
    const rawRate = (total * 1_000) / rawMs;
    const manyRate = (manyTotal * 1_000) / median(manyZero);
    const manyRawRate = (manyTotal * 1_000) / median(manyRaw);
    return [
      versus(
        `projector takeover of 100 tasks x 1,000 entries (XRANGE pages + envelope check + fold + views), vs raw XREAD + JSON.parse of the same streams`,
        manyRate,
        'entries/s',
        manyRawRate,
        { goal: 0.7 },
      ),
      versus(
        `projector catch-up of one ${total.toLocaleString('en-US')}-entry task (XRANGE pages + envelope check + fold, takeover included), vs raw XREAD + JSON.parse`,
        rate,
        'entries/s',
        rawRate,
      ),
      {
        name: `takeover replay of a ${total.toLocaleString('en-US')}-entry task from zero (goal 1,500 ms; ratio = goal / value)`,
        value: zeroMs,
        unit: 'ms',
        baseline: 1_500,
        ratio: 1_500 / zeroMs,
        goal: 1,
      },
      {
        name: `takeover replay of the same task from its snapshot (goal 50 ms; ratio = goal / value)`,
        value: snapMs,
        unit: 'ms',
        baseline: 50,
        ratio: 50 / snapMs,
        goal: 1,
      },
      {
        name: `projector heap per idle session, ${(IDLE_TASKS * SESSIONS).toLocaleString('en-US')} sessions${hasGc ? '' : ' (run with --expose-gc for an exact figure)'} (goal 2,048 B; ratio = goal / value)`,
        value: perSession,
        unit: 'B',
        baseline: 2_048,
        ratio: 2_048 / perSession,
        goal: 1,
      },
    ];
  } finally {
    client.disconnect();
    await server.stop();
  }
}

if (require.main === module) runAsScript(runProjectorBench);
