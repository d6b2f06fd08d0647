/**
 * The capacity model: per-unit costs measured here and by the other suites, multiplied out
 * (bench/capacity.ts) into machines per role and a Redis for 10,000 and 100,000 concurrently
 * active sessions with 10 watchers each. Backed by one larger run that fits this machine:
 *
 * - one gateway (in this process) holding 20,000 WebSocket connections (2,000 tasks × 10
 *   watchers; the clients in 4 child processes): heap and RSS per connection, and the fan-out
 *   latency of rounds of one update per task (publish → receive, every delivery);
 * - one projector (in this process) taking over 1,000 tasks × 10 sessions (10,000 sessions)
 *   played from the bundled recordings: catch-up time, heap per session, and the Redis memory
 *   (INFO used_memory) per fact in the streams and per session of what the projector adds (views,
 *   snapshots, updates).
 *
 * CPU per fact comes from the e2e suite's windows at 1,000 facts/s (projector, gateway, Redis
 * processes), the worker's CPU per fact and memory per execution from the worker suite: a partial
 * run models from the figures they recorded last (bench/units.ts), and says when.
 *
 * Run: npm run bench -- capacity
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUNDLED_RECORDINGS_DIR, parseRecording } from '@baton/acp';
import { startGateway } from '@baton/gateway';
import { taskKey, type StreamEntry } from '@baton/protocol';
import { activityUpdate } from './activity-update';
import { startProjector } from '@baton/projector';
import { startRedis } from '@baton/redis-server';
import { EventStore, connectRedis, type Lease, type RedisClient } from '@baton/store';
import { formatPlans, plan, type Load, type Machine, type RedisNode, type Units } from './capacity';
import { heapAfterGc, percentile, runAsScript, type BenchResult } from './lib';
import { JWT_SECRET, nowMs, spawnNode, token, type Proc } from './procs';
import { recordings, TaskPlayer, type ExecutionRefLike } from './replay-facts';
import { readUnits, recordUnits } from './units';
import {
  BEFORE,
  checkpointEveryMs,
  measureSessionDay,
  NOW,
  sessionDay,
  total,
} from './session-day';

const GW_TASKS = 2_000;
const WATCHERS = 10;
const CLIENT_PROCS = 4;
const GW_SHARDS = 16;
const FANOUT_ROUNDS = 5;
const ROUND_GAP_MS = 1_000;
const PJ_TASKS = 1_000;
const PJ_SESSIONS = 10;
const PJ_FACTS_PER_TASK = 200;
/** The goal for Redis memory per active session-day, the transcript included. */
const SESSION_DAY_GOAL = 8 * 2 ** 20;

const GB = 2 ** 30;
/** What a machine is in the plan. */
const MACHINE: Machine = {
  name: '8-core 32 GB',
  cores: 8,
  memoryBytes: 32 * GB,
  cpuTarget: 0.7,
  memoryTarget: 0.75,
  processBaseBytes: 100 * 2 ** 20,
};
/** A Redis master on such a machine: its one main thread, and maxmemory leaving room to fork. */
const REDIS: RedisNode = { cpuTarget: 0.7, memoryBytes: 24 * GB };
/**
 * The loads planned, each with the BATON_SHARDS it is planned on: the default for the smaller,
 * and for the larger enough that every projector owns a shard and routed gateways read each
 * shard once (the plan says the least that works).
 */
const PLANNED = [
  { sessions: 10_000, shards: 64 },
  { sessions: 100_000, shards: 256 },
];

const progress = (what: string) => process.stderr.write(`  capacity: ${what}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function usedMemory(client: RedisClient): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await client.info('memory'))?.[1] ?? NaN);
}

/**
 * 20,000 connections need more descriptors than a default limit: the limit of this process (the
 * gateway's) is raised where that is allowed (CAP_SYS_RESOURCE), and the clients inherit it.
 * Where it is not, the run holds as many connections as the limit leaves room for.
 */
function gatewayTasks(): number {
  try {
    execFileSync('prlimit', ['--pid', String(process.pid), '--nofile=65536:65536'], {
      stdio: 'ignore',
    });
  } catch {
    // Not allowed here: the limit stays as it is.
  }
  const limits = readFileSync('/proc/self/limits', 'utf8');
  const soft = Number(/Max open files\s+(\d+)/.exec(limits)?.[1] ?? 1024);
  // Room for Redis connections, the listener and the rest of the process.
  const fit = Math.floor((soft - 500) / WATCHERS / CLIENT_PROCS) * CLIENT_PROCS;
  return Math.min(GW_TASKS, fit);
}

/** Facts per second an execution appends, on the recordings' own clocks. */
function recordedRates(): { all: number; demo: number } {
  let facts = 0;
  let ms = 0;
  let demoFacts = 0;
  let demoMs = 0;
  for (const file of readdirSync(BUNDLED_RECORDINGS_DIR)) {
    if (!file.endsWith('.jsonl')) continue;
    const frames = parseRecording(readFileSync(join(BUNDLED_RECORDINGS_DIR, file), 'utf8'));
    const span = Date.parse(frames[frames.length - 1]!.at) - Date.parse(frames[0]!.at);
    // As many facts as the bench's players make of it (coalesced, with start and end).
    const n = playedFacts(file.replace(/\.jsonl$/, ''));
    facts += n;
    ms += span;
    if (file.startsWith('demo-')) {
      demoFacts += n;
      demoMs += span;
    }
  }
  return { all: (facts * 1e3) / ms, demo: (demoFacts * 1e3) / demoMs };
}

let factsByRecording: Map<string, number> | undefined;
function playedFacts(name: string): number {
  factsByRecording ??= new Map(recordings().map((r) => [r.name, r.bodies.length + 2]));
  return factsByRecording.get(name) ?? 0;
}

async function gatewayRun(redisUrl: string, redis: RedisClient, tasks: number) {
  const prefix = 'capg';
  const ids = Array.from({ length: tasks }, (_, i) => `cap-${i}`);
  const store = new EventStore(redis, { prefix, shards: GW_SHARDS });
  for (let i = 0; i < ids.length; i += 200) {
    await Promise.all(ids.slice(i, i + 200).map((id) => store.tenants.add('bench', id)));
  }
  const gateway = await startGateway({
    redisUrl,
    prefix,
    shards: GW_SHARDS,
    port: 0,
    jwtSecret: JWT_SECRET,
    logLevel: 'error',
    maxConnectionsPerTenant: tasks * WATCHERS * 2,
    maxSubscriptionsPerTenant: tasks * WATCHERS * 2,
  });
  const procs: Proc[] = [];
  try {
    const heap0 = await heapAfterGc();
    const perProc = tasks / CLIENT_PROCS;
    const t0 = nowMs();
    for (let c = 0; c < CLIENT_PROCS; c++) {
      const p = spawnNode(`cap-clients-${c}`, 'bench/e2e-clients.ts', {});
      procs.push(p);
      await p.next();
    }
    await Promise.all(
      procs.map((p, c) =>
        p.ask({
          connect: {
            group: 'g',
            kind: 'baton',
            urls: [`${gateway.url.replace('http', 'ws')}/ws`],
            token: token('bench', 'read'),
            tasks: ids.slice(c * perProc, (c + 1) * perProc),
            perTask: WATCHERS,
          },
        }),
      ),
    );
    const connectMs = nowMs() - t0;
    const connections = tasks * WATCHERS;
    const heapPer = ((await heapAfterGc()) - heap0) / connections;
    progress(`${connections} connections in ${(connectMs / 1e3).toFixed(1)} s`);

    // Fan-out: rounds of one update per task, published by the bench as the shards' owner.
    const leases: Lease[] = [];
    for (let s = 0; s < GW_SHARDS; s++) {
      const r = await store.leases.acquire(s, 'bench-owner', 600_000);
      if (!r.acquired) throw new Error('bench: lease');
      leases.push(r.lease);
    }
    const sent = new Map<string, number>();
    for (let round = 1; round <= FANOUT_ROUNDS; round++) {
      const roundStart = nowMs();
      await Promise.all(
        ids.map((id, t) => {
          const k = taskKey('bench', id);
          const u = activityUpdate(k, round, {
            sessionId: `s${round % 10}`,
            foregroundActivity: 'generating',
            activeSubagentCount: 0,
            runningGeneration: 1,
          });
          sent.set(`${t}/${round}`, nowMs());
          return store.publishUpdates(leases[store.shardOf(k)]!, k, [u]);
        }),
      );
      const wait = roundStart + ROUND_GAP_MS - nowMs();
      if (wait > 0) await sleep(wait);
    }
    const expected = connections * FANOUT_ROUNDS;
    const end = nowMs() + 60_000;
    for (;;) {
      const counts = await Promise.all(procs.map((p) => p.ask({ count: 'g' })));
      const got = counts.reduce((a, c) => a + Number(c.received), 0);
      if (got >= expected) break;
      if (nowMs() > end) throw new Error(`bench: ${got} of ${expected} deliveries`);
      await sleep(50);
    }
    const lat: number[] = [];
    for (const [c, p] of procs.entries()) {
      const file = join(process.env.TMPDIR ?? '/tmp', `baton-capacity-${process.pid}-${c}.bin`);
      await p.ask({ dump: { group: 'g', file } });
      const b = readFileSync(file);
      const r = new Float64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
      for (let i = 0; i < r.length; i += 3) {
        const at = sent.get(`${r[i]}/${r[i + 1]}`);
        if (at === undefined) throw new Error(`bench: update ${r[i]}/${r[i + 1]} not sent`);
        lat.push(r[i + 2]! - at);
      }
    }
    const sorted = Float64Array.from(lat).sort();
    return {
      connections,
      tasks,
      connectMs,
      heapPer,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      deliveries: sorted.length,
    };
  } finally {
    await Promise.all(procs.map((p) => p.ask({ close: true }).catch(() => undefined)));
    await Promise.all(procs.map((p) => p.kill()));
    await gateway.stop();
  }
}

async function projectorRun(redisUrl: string, redis: RedisClient) {
  const prefix = 'capp';
  const shards = 8;
  const store = new EventStore(redis, { prefix, shards });
  const m0 = await usedMemory(redis);
  let facts = 0;
  const ids = Array.from({ length: PJ_TASKS }, (_, i) => `cap-p-${i}`);
  for (let i = 0; i < ids.length; i += 50) {
    await Promise.all(
      ids.slice(i, i + 50).map(async (id, j) => {
        const player = new TaskPlayer(id, PJ_SESSIONS, 'bench-capacity', 5_000 + i + j);
        const entries: StreamEntry[] = [];
        const live = new Map<string, ExecutionRefLike>();
        for (let f = 0; f < PJ_FACTS_PER_TASK; f++) {
          const p = player.next();
          if (p.starts) live.set(p.starts.executionId, p.starts);
          if (p.ends) live.delete(p.ends.executionId);
          entries.push(p.entry);
        }
        // Executions still running hold a lease, as their worker would.
        await Promise.all([...live.values()].map((r) => store.executions.renewLease(r, 600_000)));
        await store.append(id, entries);
        facts += entries.length;
      }),
    );
  }
  const m1 = await usedMemory(redis);
  // The fixed heap of a projector that owns nothing, so the per-session figure is the sessions'.
  const h0 = await heapAfterGc();
  const empty = await startProjector({ redisUrl, prefix: 'cape', shards, logLevel: 'silent' });
  await empty.ready();
  const base = (await heapAfterGc()) - h0;
  await empty.stop();
  const h1 = await heapAfterGc();
  const t0 = nowMs();
  const p = await startProjector({
    redisUrl,
    prefix,
    shards,
    logLevel: 'silent',
    periods: { snapshotDelay: 100 },
  });
  await p.ready();
  const catchUpMs = nowMs() - t0;
  // Its first snapshots (quiet tasks after snapshotDelay) belong to what a session costs Redis.
  await sleep(2_000);
  const sessions = PJ_TASKS * PJ_SESSIONS;
  const heapPer = ((await heapAfterGc()) - h1 - base) / sessions;
  const m2 = await usedMemory(redis);
  await p.stop();
  return {
    sessions,
    facts,
    catchUpMs,
    heapPer,
    redisPerFact: (m1 - m0) / facts,
    redisFixedPerSession: (m2 - m1) / sessions,
  };
}

export async function runCapacityBench(): Promise<{ results: BenchResult[]; details: string }> {
  const tasks = gatewayTasks();
  const server = await startRedis();
  const redis = connectRedis({ url: server.url });
  try {
    progress('a session-day of Redis, by family');
    const dayUnits = await measureSessionDay(NOW);
    const day = sessionDay(dayUnits, NOW);
    const dayBefore = sessionDay(dayUnits, BEFORE);
    // The projector first: after the gateway's run, the garbage of 20,000 closed connections is
    // still being collected and made its heap deltas meaningless (negative).
    progress(`one projector, ${(PJ_TASKS * PJ_SESSIONS).toLocaleString('en-US')} sessions`);
    const pj = await projectorRun(server.url, redis);
    progress(`one gateway, ${(tasks * WATCHERS).toLocaleString('en-US')} connections`);
    const gw = await gatewayRun(server.url, redis, tasks);
    const rates = recordedRates();
    recordUnits('capacity', {
      projectorBytesPerSession: pj.heapPer,
      gatewayBytesPerConnection: gw.heapPer,
      gatewayFanoutP99Ms: gw.p99,
      projectorCatchUpMs: pj.catchUpMs,
      redisBytesPerFact: pj.redisPerFact,
      redisFixedBytesPerSession: pj.redisFixedPerSession,
      redisBytesPerSessionDay: total(day),
    });
    const all = readUnits();
    const u = (suite: string, name: string) => all[suite]?.values[name] ?? NaN;
    const sessionRate = rates.demo;
    // What the projector adds per session beyond the snapshot the day holds (its view and its
    // share of the updates), from INFO used_memory deltas: noise can put it under zero.
    const viewAndUpdates = Math.max(0, pj.redisFixedPerSession - dayUnits.snapshotBytes);
    // A planned process runs at up to 70% of a core: busy, each of its wake-ups serving many
    // facts. The table charges the CPU per fact measured at the highest rate one projector and
    // one gateway held (e2e saturation, 100 tasks: many facts per task and step), a lower bound;
    // the line under it the quiet 1,000 facts/s costs, where every hop wakes per fact, the upper.
    const units: Units = {
      projectorCpuPerFactUs: u('e2e', 'projectorBusyCpuPerFactUs'),
      gatewayCpuPerFactUs: u('e2e', 'gatewayBusyCpuPerFactUs'),
      gatewayCpuPerUpdateReadUs: u('gateway', 'gatewayCpuPerUpdateReadUs'),
      updatesPerFact: u('e2e', 'updatesPerFact'),
      redisCpuPerFactUs: u('e2e', 'redisBusyCpuPerFactUs'),
      workerCpuPerFactUs: u('worker', 'workerCpuPerFactUs'),
      projectorBytesPerSession: pj.heapPer,
      gatewayBytesPerConnection: gw.heapPer,
      workerBytesPerExecution: u('worker', 'workerBytesPerExecution'),
      // A session-day as kept (by family, the transcript included), and the view and updates
      // the projector adds (its snapshot is in the day already).
      redisBytesPerSession: total(day) + viewAndUpdates,
    };
    const load = (p: (typeof PLANNED)[number], routing: Load['routing'] = 'by-shard'): Load => ({
      activeSessions: p.sessions,
      watchersPerSession: WATCHERS,
      factsPerSessionPerSecond: sessionRate,
      measuredWatchers: WATCHERS,
      shards: p.shards,
      routing,
    });
    const plans = PLANNED.map((p) => plan(units, load(p), MACHINE, REDIS));
    const quietUnits: Units = {
      ...units,
      projectorCpuPerFactUs: u('e2e', 'projectorCpuPerFactUs'),
      gatewayCpuPerFactUs: u('e2e', 'gatewayCpuPerFactUs'),
      redisCpuPerFactUs: u('e2e', 'redisCpuPerFactUs'),
    };
    const quiet = PLANNED.map((p) => plan(quietUnits, load(p), MACHINE, REDIS));
    const unrouted = PLANNED.map((p) => plan(units, load(p, 'any'), MACHINE, REDIS));
    const when = (suite: string) =>
      all[suite]
        ? `${suite} suite, ${all[suite].at.slice(0, 16).replace('T', ' ')} UTC`
        : `${suite} suite: not run yet (n/a)`;
    const kb = (b: number) => `${(b / 1024).toFixed(1)} KB`;
    const mb = (b: number) => `${(b / 2 ** 20).toFixed(2)} MB`;
    const results: BenchResult[] = [
      {
        name: `one gateway, ${gw.connections.toLocaleString('en-US')} WebSocket connections (${gw.tasks.toLocaleString('en-US')} tasks × ${WATCHERS}, clients in ${CLIENT_PROCS} processes${gw.connections < GW_TASKS * WATCHERS ? `; ${(GW_TASKS * WATCHERS).toLocaleString('en-US')} do not fit the fd limit of this machine, which cannot be raised here` : ''}): heap per connection`,
        value: gw.heapPer,
        unit: 'B',
        atMost: 4_096,
      },
      {
        name: `the same: fan-out, ${FANOUT_ROUNDS} rounds of one update per task ${ROUND_GAP_MS.toLocaleString('en-US')} ms apart (${gw.deliveries.toLocaleString('en-US')} deliveries), publish → receive p50`,
        value: gw.p50,
        unit: 'ms',
      },
      { name: 'the same: fan-out p99', value: gw.p99, unit: 'ms' },
      {
        name: `one projector taking over ${pj.sessions.toLocaleString('en-US')} sessions (${PJ_TASKS.toLocaleString('en-US')} tasks, ${pj.facts.toLocaleString('en-US')} facts from the recordings): catch-up`,
        value: pj.catchUpMs,
        unit: 'ms',
      },
      {
        name: 'the same: heap per session (goal 2,048 B)',
        value: pj.heapPer,
        unit: 'B',
        atMost: 2_048,
      },
      { name: 'Redis memory per fact in a task stream', value: pj.redisPerFact, unit: 'B' },
      {
        name: 'Redis memory per session the projector adds (view, snapshot, updates)',
        value: pj.redisFixedPerSession,
        unit: 'B',
      },
      {
        name: `Redis bytes per active session-day (with the transcript), from the demo recordings at their own pace (${dayUnits.factsPerSecond.toFixed(2)} facts/s); baseline: the same day as kept before the hot window (MB)`,
        value: total(day) / 2 ** 20,
        unit: 'MB',
        baseline: total(dayBefore) / 2 ** 20,
        ratio: total(day) / total(dayBefore),
        atMost: SESSION_DAY_GOAL / 2 ** 20,
      },
    ];
    // A unit no suite has recorded (bench/units.json deleted, a suite never run) leaves no model:
    // say which suites to run rather than print a table of NaN.
    const recordedAs: Partial<Record<keyof Units, string>> = {
      projectorCpuPerFactUs: 'projectorBusyCpuPerFactUs',
      gatewayCpuPerFactUs: 'gatewayBusyCpuPerFactUs',
      redisCpuPerFactUs: 'redisBusyCpuPerFactUs',
    };
    const missing = Object.entries(units)
      .filter(([, v]) => !Number.isFinite(v))
      .map(([k]) => recordedAs[k as keyof Units] ?? k);
    if (missing.length > 0) {
      const suiteOf = (k: string) =>
        k.startsWith('worker') ? 'worker' : k === 'gatewayCpuPerUpdateReadUs' ? 'gateway' : 'e2e';
      const suites = [...new Set(missing.map(suiteOf))];
      return {
        results,
        details:
          `**Capacity model**: not computed — no run has recorded ${missing.join(', ')} ` +
          `(bench/units.json). Run \`npm run bench -- ${suites.join(' ')} capacity\`.`,
      };
    }
    const fmtUs = (v: number) => `${v.toFixed(0)} µs`;
    const details = [
      `**Capacity model** (bench/capacity.ts). Assumed load: each active session appends ${sessionRate.toFixed(2)} facts/s (the bundled recordings of real sessions at their own pace, demo-*.jsonl; all recordings together give ${rates.all.toFixed(1)} facts/s, their fixtures being compressed), each session its own task with ${WATCHERS} watchers. ` +
        `A machine is ${MACHINE.cores} cores and ${MACHINE.memoryBytes / GB} GB: one Node process per core at ≤ ${MACHINE.cpuTarget * 100}% of it, processes holding ≤ ${MACHINE.memoryTarget * 100}% of the memory, ${MACHINE.processBaseBytes / 2 ** 20} MB base each; a Redis master uses ≤ ${REDIS.cpuTarget * 100}% of its main thread and ${REDIS.memoryBytes / GB} GB maxmemory (one per such machine; replicas not counted).`,
      `Units: CPU per fact — projector ${fmtUs(units.projectorCpuPerFactUs)}, gateway ${fmtUs(units.gatewayCpuPerFactUs)} (fan-out to ${WATCHERS} watchers), Redis ${fmtUs(units.redisCpuPerFactUs)} (${when('e2e')}, 1 projector + 1 gateway at ${u('e2e', 'busyFactsPerSecond').toLocaleString('en-US')} facts/s over 100 tasks, the highest rate they held: a planned process is busy, but a plan past that rate per process, or with fewer facts per task, extrapolates, so the table is a lower bound; at a quiet 1,000 facts/s, where each hop wakes per fact, ${fmtUs(quietUnits.projectorCpuPerFactUs)}, ${fmtUs(quietUnits.gatewayCpuPerFactUs)} and ${fmtUs(quietUnits.redisCpuPerFactUs)}, the upper bound below); worker ${fmtUs(units.workerCpuPerFactUs)} (${when('worker')}). ` +
        `Memory — projector ${kb(units.projectorBytesPerSession)} per session, gateway ${kb(units.gatewayBytesPerConnection)} per connection (heap; RSS deltas of this process are not reliable after the runs before it), worker ${kb(units.workerBytesPerExecution)} per execution, agent process excluded (${when('worker')}); ` +
        `Redis ${mb(units.redisBytesPerSession)} per active session-day with the default retention (below, + ${kb(viewAndUpdates)} of view and updates).`,
      `**Redis per active session-day, by family** (bench/session-day.ts: one session's stream played from the recordings with a checkpoint every ${(checkpointEveryMs(NOW) / 60_000).toFixed(0)} min of facts and the spans between them, MEMORY USAGE per key; the demo recordings' frames through the worker's transcript reducer and, a second of frames a write, into the raw-frame log, the transcript compacted by the store a recording a range; a day at their pace). ` +
        `Units: ${dayUnits.streamBytesPerFact.toFixed(0)} B per stream entry, ${dayUnits.spanBytesPerFact.toFixed(1)} B of history span per entry, ${kb(dayUnits.checkpointBytes)} per checkpoint, transcript ${dayUnits.transcriptBytesPerSecond.toFixed(0)} B/s as written (a delta an entry), ${dayUnits.transcriptCompactedBytesPerSecond.toFixed(0)} B/s compacted, raw frames ${dayUnits.rawFrameBytesPerSecond.toFixed(0)} B/s.\n\n` +
        `| family | before (raw entries for the retention, raw frames until their length bound) | now (PROJECTOR_HOT_WINDOW_MS 30 min: raw entries and transcript deltas for it, the transcript compacted behind it; raw frames 30 min) |\n|---|---|---|\n` +
        Object.keys(day)
          .map((k) => `| ${k} | ${mb(dayBefore[k]!)} | ${mb(day[k]!)} |`)
          .join('\n') +
        `\n| **total** | ${mb(total(dayBefore))} | ${mb(total(day))} |`,
      `Gateways are planned with watchers routed to them by shard (a task's watchers on the gateways that serve its shard; BATON_SHARDS ${PLANNED.map((p) => `${p.shards} for ${p.sessions.toLocaleString('en-US')} sessions`).join(', ')}): each update is then read by one gateway while there are no more gateways than shards, and by gateways ÷ shards past that, so what a gateway reads stays its share however many there are. Each further read of an update costs ${fmtUs(units.gatewayCpuPerUpdateReadUs)} (${when('gateway')}, scale-out: one gateway tailing every shard for watchers that get nothing), with ${units.updatesPerFact.toFixed(2)} updates per fact (${when('e2e')}).`,
      formatPlans(plans, MACHINE),
      `Without that routing (watchers wherever the balancer sends them), a gateway tails every shard one of its connections' tasks is on, so every further gateway reads the stream again: ` +
        unrouted
          .map((p) => {
            const gw = p.roles.find((r) => r.role === 'gateway')!;
            return `${p.load.activeSessions.toLocaleString('en-US')} sessions need ${gw.processes.toLocaleString('en-US')} gateway processes (each update read by ${gw.readersPerUpdate!.toFixed(1)})`;
          })
          .join('; ') +
        '. The count that holds the load is the least fixed point of that cost (bench/capacity.ts).',
      `At the quiet costs instead (every fact costing what it costs at 1,000 facts/s on one projector, each hop waking for it, which a process at ${MACHINE.cpuTarget * 100}% of a core does not: the upper bound): ` +
        quiet
          .map((p) => {
            const n = (r: string) =>
              p.roles.find((x) => x.role === r)!.processes.toLocaleString('en-US');
            return `${p.load.activeSessions.toLocaleString('en-US')} sessions, ${n('projector')} projector and ${n('gateway')} gateway processes (BATON_SHARDS ≥ ${p.shardsNeeded}), Redis ${p.redis.kind} (${p.redis.cores.toFixed(1)} cores, bound by ${p.redis.boundBy})`;
          })
          .join('; ') +
        '.',
    ];
    return { results, details: details.join('\n\n') };
  } finally {
    redis.disconnect();
    await server.stop();
  }
}

if (require.main === module) runAsScript(runCapacityBench);
