/**
 * Event store throughput against raw Redis on the same payloads, in the same run, against a
 * redis-server of its own (no persistence, so Redis is not the bottleneck being measured):
 *
 * - append: store.append (zod validation + idempotent Lua) and store.appendFenced (validation +
 *   fenced expected-version Lua) vs raw pipelined XADD of JSON.stringify(entry);
 * - catch-up read: store.readTask (XRANGE pages + JSON.parse + envelope check) vs raw XRANGE
 *   pages + JSON.parse of the same streams.
 *
 * Run: npx tsx bench/store.bench.ts
 */
import type { StreamEntry } from '@baton/protocol';
import { startRedis } from '@baton/redis-server';
import { EventStore, connectRedis, type Lease, type RedisClient } from '@baton/store';
import { formatResults, type BenchResult } from './lib';

const TASKS = 100;
const PER_TASK = 500;
const BATCH = 100;
const PAGE = 1_000;
const ROUNDS = 3;
const TOTAL = TASKS * PER_TASK;

function entry(taskId: string, seq: number): StreamEntry {
  return {
    v: 1,
    type: 'tool.started',
    taskId,
    sessionId: `${taskId}-session-0001`,
    executionId: `${taskId}-execution-0001`,
    generation: 1,
    writer: { role: 'worker', instance: 'bench-worker-0001', seq },
    data: {
      toolCallId: `toolu_${String(seq).padStart(12, '0')}`,
      ownership: 'foreground',
      status: 'in_progress',
      title: 'Run the test suite of the package under edit',
      toolKind: 'execute',
    },
  };
}

/** Per task, its entries in batches, in order. */
function workload(): { taskId: string; batches: StreamEntry[][] }[] {
  let seq = 0;
  return Array.from({ length: TASKS }, (_, t) => {
    const taskId = `bench-task-${t}`;
    const entries = Array.from({ length: PER_TASK }, () => entry(taskId, ++seq));
    const batches: StreamEntry[][] = [];
    for (let i = 0; i < entries.length; i += BATCH) batches.push(entries.slice(i, i + BATCH));
    return { taskId, batches };
  });
}

/** Redis server CPU seconds (user + sys) so far, from INFO cpu. */
async function redisCpu(client: RedisClient): Promise<number> {
  const info = await client.info('cpu');
  const get = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return get('used_cpu_user') + get('used_cpu_sys');
}

/** Elapsed ns of `fn`, added to `acc[name]`. */
async function timed<K extends string>(acc: Record<K, number>, name: K, fn: () => Promise<void>) {
  const t0 = process.hrtime.bigint();
  await fn();
  acc[name] += Number(process.hrtime.bigint() - t0);
}

type AppendVariant = 'raw' | 'idem' | 'fenced';
type ReadVariant = 'raw' | 'store';

/**
 * The machine is shared and noisy, so the variants are interleaved task by task (in rotating
 * order) and their times summed: drift in background load hits all of them alike. Each round
 * starts from an empty Redis.
 */
export async function runStoreBench(): Promise<BenchResult[]> {
  const server = await startRedis();
  const client: RedisClient = connectRedis({ url: server.url });
  const work = workload();
  const appendNs: Record<AppendVariant, number> = { raw: 0, idem: 0, fenced: 0 };
  const readNs: Record<ReadVariant, number> = { raw: 0, store: 0 };
  const cpu: Record<AppendVariant, number> = { raw: 0, idem: 0, fenced: 0 };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      await client.flushall();
      const rawKeys = new EventStore(client, { prefix: 'raw' }).keys;
      const idem = new EventStore(client, { prefix: 'idem' });
      const fenced = new EventStore(client, { prefix: 'fenced' });
      const leases = new Map<number, Lease>();
      for (let s = 0; s < fenced.keys.shards; s++) {
        const r = await fenced.leases.acquire(s, 'bench', 600_000);
        if (r.acquired) leases.set(s, r.lease);
      }
      const append: Record<AppendVariant, (t: (typeof work)[number]) => Promise<void>> = {
        raw: async ({ taskId, batches }) => {
          const key = rawKeys.taskStream(taskId);
          for (const batch of batches) {
            const p = client.pipeline();
            for (const e of batch) p.xadd(key, '*', 'e', JSON.stringify(e));
            await p.exec();
          }
        },
        idem: async ({ taskId, batches }) => {
          for (const batch of batches) await idem.append(taskId, batch);
        },
        fenced: async ({ taskId, batches }) => {
          const lease = leases.get(fenced.shardOf(taskId))!;
          let last = '0-0';
          for (const batch of batches) {
            const ids = await fenced.appendFenced(lease, taskId, last, batch);
            last = ids[ids.length - 1]!;
          }
        },
      };
      const variants: AppendVariant[] = ['raw', 'idem', 'fenced'];
      for (const [t, task] of work.entries()) {
        for (let k = 0; k < variants.length; k++) {
          const v = variants[(t + k) % variants.length]!;
          const before = await redisCpu(client);
          await timed(appendNs, v, () => append[v](task));
          cpu[v] += (await redisCpu(client)) - before;
        }
      }

      let seen: Record<ReadVariant, number> = { raw: 0, store: 0 };
      const read: Record<ReadVariant, (taskId: string) => Promise<void>> = {
        raw: async (taskId) => {
          const key = idem.keys.taskStream(taskId);
          let start = '-';
          for (;;) {
            const page = (await client.xrange(key, start, '+', 'COUNT', PAGE)) as [
              string,
              string[],
            ][];
            if (page.length === 0) break;
            for (const [, fields] of page) {
              const v = JSON.parse(fields[1]!) as StreamEntry;
              if (v.taskId !== taskId) throw new Error('bench: wrong task');
            }
            seen.raw += page.length;
            start = `(${page[page.length - 1]![0]}`;
          }
        },
        store: async (taskId) => {
          let after = '0-0';
          for (;;) {
            const page = await idem.readTask(taskId, after, PAGE);
            if (page.items.length === 0) break;
            seen.store += page.items.length;
            after = page.lastId;
          }
        },
      };
      // Catch-up of the same streams (those the idempotent store wrote).
      for (const [t, { taskId }] of work.entries()) {
        const order: ReadVariant[] = t % 2 === 0 ? ['raw', 'store'] : ['store', 'raw'];
        for (const v of order) await timed(readNs, v, () => read[v](taskId));
      }
      if (seen.raw !== TOTAL || seen.store !== TOTAL) {
        throw new Error(`bench: read ${seen.raw} raw and ${seen.store} stored of ${TOTAL}`);
      }
      seen = { raw: 0, store: 0 };
    }
  } finally {
    client.disconnect();
    await server.stop();
  }
  const n = TOTAL * ROUNDS;
  const perSec = (ns: number) => (n * 1e9) / ns;
  const cpuUs = (v: AppendVariant) => (cpu[v] * 1e6) / n;
  const raw = perSec(appendNs.raw);
  const rawRead = perSec(readNs.raw);
  const result = (name: string, value: number, unit: string, baseline?: number, goal?: number) => ({
    name,
    value,
    unit,
    ...(baseline === undefined ? {} : { baseline, ratio: value / baseline }),
    ...(goal === undefined ? {} : { goal }),
  });
  return [
    result('raw pipelined XADD (JSON.stringify)', raw, 'entries/s'),
    result(
      'store.append (validated, idempotent Lua)',
      perSec(appendNs.idem),
      'entries/s',
      raw,
      0.5,
    ),
    result(
      'store.appendFenced (validated, fenced Lua)',
      perSec(appendNs.fenced),
      'entries/s',
      raw,
      0.5,
    ),
    result('Redis CPU per entry: raw XADD', cpuUs('raw'), 'µs'),
    result('Redis CPU per entry: idempotent Lua', cpuUs('idem'), 'µs', cpuUs('raw')),
    result('Redis CPU per entry: fenced Lua', cpuUs('fenced'), 'µs', cpuUs('raw')),
    result('raw XRANGE + JSON.parse', rawRead, 'entries/s'),
    result(
      'store.readTask (XRANGE + JSON.parse + envelope check)',
      perSec(readNs.store),
      'entries/s',
      rawRead,
      0.8,
    ),
  ];
}

if (require.main === module) {
  runStoreBench().then(
    (results) => {
      console.log(
        `event store: ${TASKS} tasks x ${PER_TASK} entries, batches of ${BATCH}, one writer/reader, pages of ${PAGE}, ${ROUNDS} rounds, variants interleaved per task`,
      );
      console.log(formatResults(results));
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
