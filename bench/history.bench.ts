/**
 * The history query (apps/gateway History, libs/activity historyQuery) over one session's day:
 * 50,000 entries in the range (a recorded stream: executions, prompts and their decisions,
 * coalesced output, tools, subagents), against its own redis-server, with a checkpoint every
 * 2,000 entries (a day's 24 or so, as the owner keeps them) and the history spans between them
 * written as the owner writes them; the range starts at the first. Baseline: raw XRANGE pages +
 * JSON.parse of the same range, same run, interleaved, pages read one after the other. Goal: the
 * query answers within 200 ms. More rows tell the query's time apart: the same query where no
 * span was written (it folds the stream, and writes the spans back), the raw read with the next
 * page requested before this one is parsed (as the query reads the stream), and the history's
 * fold alone in memory.
 *
 * Run: npx tsx bench/history.bench.ts
 */
import {
  entryTime,
  fold,
  initialTaskState,
  snapshotOf,
  stateFromSnapshot,
  taskHistory,
  type TaskState,
} from '@baton/activity';
import { isDeepStrictEqual } from 'node:util';
import type { StreamEntry } from '@baton/protocol';
import { startRedis } from '@baton/redis-server';
import { EventStore } from '@baton/store';
import { History } from '@baton/gateway';
import { writeCheckpointAndSpan } from './checkpoints';
import { recordStream } from './fold.bench';
import { formatResults, median, type BenchResult } from './lib';

const BEFORE = 10_000;
const IN_RANGE = 50_000;
const PAGE = 1_000;
const ROUNDS = 7;
/** Entries between two checkpoints: about an hour of the day. */
const SPAN = 2_000;

export async function runHistoryBench(): Promise<BenchResult[]> {
  const server = await startRedis();
  const store = EventStore.connect({ url: server.url }, { shards: 1, prefix: 'hb' });
  try {
    const stream = recordStream(1, 1, BEFORE + IN_RANGE)[0]!;
    const taskId = stream[0]!.taskId;
    const { lease } = (await store.leases.acquire(0, 'bench', 600_000)) as {
      lease: Parameters<typeof store.snapshots.write>[0];
    };
    let snapId = '';
    let startState: TaskState = initialTaskState(taskId);
    let state: TaskState = initialTaskState(taskId);
    let spans = 0;
    let checkpoints = 0;
    for (let i = 0; i < stream.length; i += 500) {
      const batch = stream.slice(i, i + 500);
      const ids = await store.append(taskId, batch);
      for (const e of batch) state = fold(state, e).state;
      if (i + 500 === BEFORE) [snapId, startState] = [ids.at(-1)!, state];
      // A checkpoint where the range starts, then every SPAN entries, with the span before it.
      if (i + 500 >= BEFORE && (i + 500 - BEFORE) % SPAN === 0) {
        const written = await writeCheckpointAndSpan(store, lease, taskId, ids.at(-1)!, state);
        checkpoints++;
        // The span from the stream's start is kept too, but the range starts after it.
        if (written?.kept && written.span!.from !== '0-0') spans++;
      }
    }
    // The range starts just after the snapshot: everything in it is folded, nothing before.
    const since = Number(snapId.split('-')[0]) + 1;
    const history = new History(store, { maxEntries: 1_000_000, maxItems: 100_000 });

    const raw = async () => {
      let after = snapId;
      let n = 0;
      for (;;) {
        const page = (await store.redis.xrange(
          store.keys.taskStream(taskId),
          `(${after}`,
          '+',
          'COUNT',
          PAGE,
        )) as [string, string[]][];
        if (page.length === 0) break;
        for (const [, fields] of page) {
          JSON.parse(fields[fields.indexOf('e') + 1]!) as StreamEntry;
          n++;
        }
        after = page[page.length - 1]![0];
      }
      return n;
    };
    // The raw read as the query reads: page N+1 is requested before page N is parsed.
    const rawAhead = async () => {
      const xrange = (after: string) =>
        store.redis.xrange(
          store.keys.taskStream(taskId),
          `(${after}`,
          '+',
          'COUNT',
          PAGE,
        ) as Promise<[string, string[]][]>;
      let n = 0;
      let ahead: Promise<[string, string[]][]> | undefined = xrange(snapId);
      while (ahead) {
        const page: [string, string[]][] = await ahead;
        ahead = page.length === PAGE ? xrange(page[page.length - 1]![0]) : undefined;
        for (const [, fields] of page) {
          JSON.parse(fields[fields.indexOf('e') + 1]!) as StreamEntry;
          n++;
        }
      }
      return n;
    };
    // The fold alone: the same entries, read and parsed beforehand.
    const parsed: { id: string; entry: StreamEntry }[] = [];
    for await (const page of store.readTaskPages(taskId, snapId)) parsed.push(...page.items);
    const start = stateFromSnapshot(snapshotOf(startState), taskId)!;
    const until = Date.now() + 60_000;
    const times = {
      raw: [] as number[],
      ahead: [] as number[],
      query: [] as number[],
      refold: [] as number[],
    };
    const spansKey = store.keys.historySpans(taskId);
    const stored = await store.redis.hgetallBuffer(spansKey);
    const memory = async (key: string) =>
      Number(await store.redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
    const spansBytes = await memory(spansKey);
    const streamBytes = await memory(store.keys.taskStream(taskId));
    const foldTimes: number[] = [];
    let folded = 0;
    for (let r = 0; r < ROUNDS; r++) {
      let t0 = performance.now();
      await raw();
      times.raw.push(performance.now() - t0);
      t0 = performance.now();
      const h = await history.query(taskId, 'bench', { since, until });
      times.query.push(performance.now() - t0);
      folded = h.entries;
      // No span written (a deployment older than them): the query folds the stream, and
      // writes the spans back. Its answer is the same.
      await store.redis.del(spansKey);
      t0 = performance.now();
      const refolded = await history.query(taskId, 'bench', { since, until });
      times.refold.push(performance.now() - t0);
      if (!isDeepStrictEqual(refolded, h)) throw new Error('the spans and the stream disagree');
      await store.redis.del(spansKey);
      await store.redis.hset(spansKey, stored);
      t0 = performance.now();
      await rawAhead();
      times.ahead.push(performance.now() - t0);
      t0 = performance.now();
      taskHistory(taskId, parsed, { from: since, to: until, maxItems: 100_000 }, start);
      foldTimes.push(performance.now() - t0);
    }
    const q = median(times.query);
    const rf = median(times.refold);
    const b = median(times.raw);
    const a = median(times.ahead);
    const f = median(foldTimes);
    const n = folded.toLocaleString('en-US');
    if (parsed.length !== folded || entryTime(parsed[0]!.id) < since) {
      throw new Error(`the fold alone saw ${parsed.length} entries, the query ${folded}`);
    }
    return [
      {
        name: `history query, ${n} entries from a checkpoint, through ${spans} stored spans (ms)`,
        value: q,
        unit: 'ms',
        baseline: b,
        ratio: q / b,
        atMost: 200,
      },
      {
        name: `the same query with no span stored: folds the ${n} entries, writes the spans back (ms)`,
        value: rf,
        unit: 'ms',
        baseline: b,
        ratio: rf / b,
      },
      {
        name: `Redis memory of the stored spans, against the task stream's (${checkpoints} checkpoints and the span from the stream's start, 60,011 entries) (KB)`,
        value: spansBytes / 1024,
        unit: 'KB',
        baseline: streamBytes / 1024,
        ratio: spansBytes / streamBytes,
      },
      {
        name: 'raw XRANGE pages + JSON.parse with the next page requested before this one is parsed, as the query reads (ms)',
        value: a,
        unit: 'ms',
        baseline: b,
        ratio: a / b,
      },
      {
        name: `the history's fold alone, in memory: ${n} entries already parsed (ms)`,
        value: f,
        unit: 'ms',
      },
    ];
  } finally {
    await store.close();
    await server.stop();
  }
}

if (require.main === module) {
  void runHistoryBench().then((r) => console.log(formatResults(r)));
}
