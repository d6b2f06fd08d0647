/**
 * Facts per second one worker turns a replay into, at full speed (speed 0), against raw pipelined
 * XADD of the same facts to the same redis-server, in the same run:
 *
 * - a real worker (startWorker, in-process) consumes the executions queue; each execution is a
 *   real replay agent process playing a recording of one long turn in which the agent reports
 *   tool calls and their updates (one fact per frame: tool.started / tool.updated);
 * - the worker's rate is measured on the stream itself: facts between the execution's
 *   `capabilities.negotiated` and its `turn.ended`, over the time between their stream ids (Redis
 *   stamps ids with its clock), so agent start-up and polling are not counted;
 * - the baseline is XADD of exactly those facts (their JSON), pipelined 100 at a time.
 *
 * The replay agent, the worker and Redis share the machine's cores: the figure is what one worker
 * host sustains end to end, agent included.
 *
 * Run: npx tsx bench/worker.bench.ts
 */
import { enqueueExecution, executionQueue } from '@baton/jobs';
import { startRedis } from '@baton/redis-server';
import { EventStore, connectRedis, type RedisClient } from '@baton/store';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startWorker } from '@baton/worker';
import { formatResults, heapAfterGc, median, type BenchResult } from './lib';
import { recordUnits } from './units';

const FRAMES = 20_000;
/** Distinct tool calls in a recording. */
const TOOLS = 100;
const ROUNDS = 3;
/** Executions at once in the concurrent variant (the default WORKER_CONCURRENCY). */
const CONCURRENT = 4;
const PREFIX = 'wbench';
/** Executions held at once for the memory per execution (agents idle after their turn). */
const HELD = 16;

/**
 * One prompt; then `frames` tool frames over TOOLS tool calls: each starts once, then reports
 * progress. A long turn has many updates per tool call; the number of distinct calls is bounded
 * because the dialects' state grows with it (see the note in BENCHMARKS.md).
 */
function recording(frames: number): string {
  const t = '2026-11-10T10:00:00.000Z';
  const lines: unknown[] = [
    { direction: 'client->agent', at: t, message: { jsonrpc: '2.0', id: 0, method: 'initialize' } },
    {
      direction: 'agent->client',
      at: t,
      message: {
        jsonrpc: '2.0',
        id: 0,
        result: { protocolVersion: 1, agentInfo: { name: 'bench-agent', version: '1.0.0' } },
      },
    },
    {
      direction: 'client->agent',
      at: t,
      message: { jsonrpc: '2.0', id: 1, method: 'session/new' },
    },
    {
      direction: 'agent->client',
      at: t,
      message: { jsonrpc: '2.0', id: 1, result: { sessionId: 's' } },
    },
    {
      direction: 'client->agent',
      at: t,
      message: { jsonrpc: '2.0', id: 2, method: 'session/prompt' },
    },
  ];
  for (let i = 0; i < frames; i++) {
    const id = `tool_${i % TOOLS}`;
    const update =
      i < TOOLS
        ? {
            sessionUpdate: 'tool_call',
            toolCallId: id,
            title: 'Run the test suite of the package under edit',
            kind: 'execute',
            status: 'in_progress',
          }
        : {
            sessionUpdate: 'tool_call_update',
            toolCallId: id,
            status: i >= frames - TOOLS ? 'completed' : 'in_progress',
          };
    lines.push({
      direction: 'agent->client',
      at: t,
      message: { jsonrpc: '2.0', method: 'session/update', params: { sessionId: 's', update } },
    });
  }
  lines.push({
    direction: 'agent->client',
    at: t,
    message: { jsonrpc: '2.0', id: 2, result: { stopReason: 'end_turn' } },
  });
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

type XEntry = [string, string[]];

const msOf = (id: string) => Number(id.slice(0, id.indexOf('-')));

/** The facts of a finished execution: those of the turn, and the time between their ids. */
async function turnFacts(client: RedisClient, key: string) {
  const all: XEntry[] = [];
  let start = '-';
  for (;;) {
    const page = (await client.xrange(key, start, '+', 'COUNT', 10_000)) as XEntry[];
    if (page.length === 0) break;
    all.push(...page);
    start = `(${page[page.length - 1]![0]}`;
  }
  const typeOf = (e: XEntry) => (JSON.parse(e[1][1]!) as { type: string }).type;
  const from = all.findIndex((e) => typeOf(e) === 'capabilities.negotiated');
  const to = all.findIndex((e) => typeOf(e) === 'turn.ended');
  const turn = all.slice(from + 1, to + 1);
  return {
    json: turn.map((e) => e[1][1]!),
    ms: Math.max(1, msOf(all[to]![0]) - msOf(all[from]![0])),
  };
}

export async function runWorkerBench(): Promise<BenchResult[]> {
  const server = await startRedis();
  const client = connectRedis({ url: server.url }, { maxRetriesPerRequest: null });
  const store = new EventStore(client, { prefix: PREFIX, shards: 8 });
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-'));
  writeFileSync(join(dir, 'tools.jsonl'), recording(FRAMES));
  writeFileSync(join(dir, 'tools-quarter.jsonl'), recording(FRAMES / CONCURRENT));
  writeFileSync(join(dir, 'tools-short.jsonl'), recording(TOOLS));
  const worker = await startWorker({
    redisUrl: server.url,
    prefix: PREFIX,
    shards: 8,
    concurrency: CONCURRENT,
    recordingsDir: dir,
    logLevel: 'error',
  });
  const queue = executionQueue(client, PREFIX);
  const single: number[] = [];
  const concurrent: number[] = [];
  const raw: number[] = [];
  let n = 0;

  /** Starts executions of `file`, delivers their prompt, waits for their turns' ends. */
  const play = async (file: string, count: number, hold = false) => {
    const lease = await store.leases.acquire(0, 'bench-owner', 600_000);
    if (!lease.acquired) throw new Error('bench: shard 0 is held');
    const refs: { taskId: string; sessionId: string; executionId: string }[] = [];
    for (let i = 0; i < count; i++) {
      // Every task in shard 0, so one lease lets the bench write their inboxes.
      let taskId = '';
      do taskId = `bench/bench-${++n}`;
      while (store.shardOf(taskId) !== 0);
      const ref = { taskId, sessionId: `${taskId}-s`, executionId: `${taskId}-x` };
      refs.push(ref);
      await store.tenants.add('bench', taskId.slice('bench/'.length));
      await enqueueExecution(queue, {
        v: 1,
        ...ref,
        tenant: 'bench',
        profile: 'replay',
        recording: file,
        speed: 0,
      });
      await store.inbox.append(lease.lease, taskId, ref.executionId, [
        {
          v: 1,
          ...ref,
          type: 'prompt.deliver',
          data: {
            promptId: 'p1',
            admissionGeneration: 1,
            mode: 'turn',
            origin: 'human',
            text: 'go',
          },
        },
      ]);
    }
    const stop = async () => {
      for (const ref of refs) {
        await store.inbox.append(lease.lease, ref.taskId, ref.executionId, [
          { v: 1, ...ref, type: 'execution.stop', data: { reason: 'operator' } },
        ]);
      }
      await store.leases.release(lease.lease);
    };
    for (const ref of refs) {
      const key = store.keys.taskStream(ref.taskId);
      for (;;) {
        const last = (await client.xrevrange(key, '+', '-', 'COUNT', 1)) as XEntry[];
        if (last[0] && last[0][1][1]!.includes('"turn.ended"')) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      if (!hold) {
        await store.inbox.append(lease.lease, ref.taskId, ref.executionId, [
          { v: 1, ...ref, type: 'execution.stop', data: { reason: 'operator' } },
        ]);
      }
    }
    if (!hold) await store.leases.release(lease.lease);
    return Object.assign(refs, { stop });
  };
  const cpuPerFact: number[] = [];
  const itemsPerTurn: number[] = [];
  let bytesPerExecution = NaN;

  try {
    for (let round = 0; round < ROUNDS; round++) {
      // One execution at full speed.
      const c0 = process.cpuUsage();
      const [one] = await play('tools', 1);
      const c1 = process.cpuUsage(c0);
      const t = await turnFacts(client, store.keys.taskStream(one!.taskId));
      single.push((t.json.length * 1000) / t.ms);
      // The worker writes the transcript beside the facts: the row counts only with both.
      const items = Number(await client.xlen(store.keys.transcript(one!.taskId)));
      if (items === 0) throw new Error('bench: the worker wrote no transcript items');
      itemsPerTurn.push(items);
      // This process is the worker (the agent is a child): its CPU per fact, polling included.
      cpuPerFact.push((c1.user + c1.system) / t.json.length);

      // The same facts, raw.
      const key = `raw:${round}`;
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < t.json.length; i += 100) {
        const p = client.pipeline();
        for (const j of t.json.slice(i, i + 100)) p.xadd(key, '*', 'e', j);
        await p.exec();
      }
      raw.push((t.json.length * 1e9) / Number(process.hrtime.bigint() - t0));

      // Four executions at once, a quarter of the frames each: the worker's total rate.
      const four = await play('tools-quarter', CONCURRENT);
      const turns = await Promise.all(
        four.map((r) => turnFacts(client, store.keys.taskStream(r.taskId))),
      );
      const facts = turns.reduce((s, x) => s + x.json.length, 0);
      // Wall time from the first negotiation to the last turn end, across the four streams.
      const spans = await Promise.all(
        four.map(async (r) => {
          const key4 = store.keys.taskStream(r.taskId);
          const all = (await client.xrange(key4, '-', '+')) as XEntry[];
          const ids = all.map((e) => e[0]);
          const neg = all.findIndex((e) => e[1][1]!.includes('"capabilities.negotiated"'));
          const end = all.findIndex((e) => e[1][1]!.includes('"turn.ended"'));
          return [msOf(ids[neg]!), msOf(ids[end]!)] as const;
        }),
      );
      const ms = Math.max(...spans.map((s) => s[1])) - Math.min(...spans.map((s) => s[0]));
      concurrent.push((facts * 1000) / Math.max(1, ms));
      await client.del(key);
    }
    // Memory per execution: HELD executions idle after one short turn (their agents alive,
    // waiting for the next prompt), against the same worker once they are stopped. One queue
    // slot per execution, so the worker runs with HELD slots.
    await worker.stop();
    const held = await startWorker({
      redisUrl: server.url,
      prefix: PREFIX,
      shards: 8,
      concurrency: HELD,
      recordingsDir: dir,
      logLevel: 'error',
    });
    try {
      const refs = await play('tools-short', HELD, true);
      const holding = await heapAfterGc();
      await refs.stop();
      for (const ref of refs) {
        const key = store.keys.taskStream(ref.taskId);
        for (let i = 0; ; i++) {
          const last = (await client.xrevrange(key, '+', '-', 'COUNT', 1)) as XEntry[];
          if (last[0] && last[0][1][1]!.includes('"execution.ended"')) break;
          if (i > 1_500) throw new Error('bench: an execution did not end');
          await new Promise((r) => setTimeout(r, 20));
        }
      }
      const after = await heapAfterGc();
      // Against the same worker once they ended, not before they started: what the first worker
      // left behind was still being freed then (the difference came out negative), and whatever
      // the worker keeps after its executions end (caches) is not theirs.
      bytesPerExecution = (holding - after) / HELD;
    } finally {
      await held.stop();
    }
  } finally {
    await worker.stop();
    await queue.close();
    await store.close();
    client.disconnect();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const rawRate = median(raw);
  recordUnits('worker', {
    workerCpuPerFactUs: median(cpuPerFact),
    workerBytesPerExecution: bytesPerExecution,
  });
  return [
    { name: 'raw pipelined XADD of the same facts', value: rawRate, unit: 'facts/s' },
    {
      name: `worker: 1 replay at speed 0 (agent → facts in the stream, and ${Math.round(median(itemsPerTurn)).toLocaleString('en-US')} transcript items beside them)`,
      value: median(single),
      unit: 'facts/s',
      baseline: rawRate,
      ratio: median(single) / rawRate,
      goal: 0.4,
    },
    {
      name: `worker: ${CONCURRENT} replays at once at speed 0, total`,
      value: median(concurrent),
      unit: 'facts/s',
      baseline: rawRate,
      ratio: median(concurrent) / rawRate,
    },
    {
      name: 'worker: CPU per fact, 1 replay at speed 0 (the worker process; the agent excluded)',
      value: median(cpuPerFact),
      unit: 'µs',
    },
    {
      name: `worker: heap per execution, ${HELD} held idle after a turn (the agent process excluded)`,
      value: bytesPerExecution,
      unit: 'B',
    },
  ];
}

if (require.main === module) {
  void runWorkerBench().then(
    (r) => {
      console.log(formatResults(r));
      process.exit(0);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
