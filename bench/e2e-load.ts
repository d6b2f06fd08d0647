// Child process of bench/e2e.bench.ts: the load, playing the workers of 100 tasks from the bundled
// recordings (bench/replay-facts.ts) at a controlled rate of facts per second.
//
// - baton: store.append of each task's due facts (validated, idempotent Lua), each execution's
//   lease written before its first fact, as a worker does. Every fact is folded here too
//   (UpdatePredictor), which tells which update seqs its append makes the owner publish; each of
//   them is stamped with the time just before the append call.
// - raw and peer carry Baton's payload: the same facts are folded (UpdatePredictor, under the
//   client's task id) into the very updates Baton's owner publishes for them, and each update is
//   what goes out, so their clients get what Baton's clients get for the same facts (the same
//   messages, seqs and sizes; a fact that makes no update sends nothing).
// - raw: each update's JSON, pipelined XADD to plain streams (the raw relay forwards each entry
//   as the gateway frames an update), stamped just before the pipeline is sent.
// - peer: each update emitted to its task's room with `io.to(task).emit('update', update)` by a
//   socket.io server that serves no clients but shares the redis-streams adapter with the peer's
//   nodes (bench/e2e-peer.ts): how a producer process pushes live updates with socket.io (the
//   adapter has no separate emitter). Each emit is one XADD to the adapter's stream; each is
//   stamped just before its emit. An emit returns nothing to wait for, so a backlog shows in the
//   latencies, not in the load's lag.
//
// Config: argv[2] is JSON {redisUrl, prefix, shards, tasks, sessions, rawPrefix, peer?}.
// stdin: {"run": {mode, rate, ms, file}} plays `rate` facts/s for `ms` and answers with what it
// sent; the stamps go to `file` as Float64 triples (task index, seq, send time in ms on
// CLOCK_MONOTONIC). {"close": true} exits.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { EventStore, connectRedis } from '@baton/store';
import { taskKey, type StreamEntry } from '@baton/protocol';
import { createAdapter } from '@socket.io/redis-streams-adapter';
import { Redis } from 'ioredis';
import { Server } from 'socket.io';
import { TaskPlayer, UpdatePredictor, type PlayedFact } from './replay-facts';
import { Stamps } from './stamps';

interface Config {
  redisUrl: string;
  prefix: string;
  shards: number;
  tasks: number;
  sessions: number;
  rawPrefix: string;
  /** Start the socket.io producer (the peer's lane). */
  peer?: boolean;
}

const cfg = JSON.parse(process.argv[2]!) as Config;
const writer = `bench-load-${process.pid}-${randomBytes(3).toString('hex')}`;
const store = EventStore.connect({ url: cfg.redisUrl }, { prefix: cfg.prefix, shards: cfg.shards });
const raw = connectRedis({ url: cfg.redisUrl });
const taskIds = Array.from({ length: cfg.tasks }, (_, t) => `e2e-${t}`);
/** Task ids are tenant-scoped: Baton's tasks are the keys of the clients' tenant (`bench`). */
const batonIds = taskIds.map((id) => taskKey('bench', id));

interface Lane {
  players: TaskPlayer[];
  predictors: UpdatePredictor[];
  /** Facts played so far in this mode: fact i goes to task i % tasks. */
  played: number;
}

function lane(seedBase: number, ids: string[]): Lane {
  return {
    players: ids.map((id, t) => new TaskPlayer(id, cfg.sessions, writer, seedBase + t)),
    predictors: ids.map((id) => new UpdatePredictor(id)),
    played: 0,
  };
}

type Mode = 'baton' | 'raw' | 'peer';
const lanes: Record<Mode, Lane> = {
  baton: lane(1, batonIds),
  raw: lane(1, taskIds),
  peer: lane(1, taskIds),
};
const producer = cfg.peer ? new Server({ adapter: createAdapter(new Redis(cfg.redisUrl)) }) : null;

function now(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

const LEASE_MS = 600_000;

async function sendBaton(batch: Map<number, PlayedFact[]>, stamps: Stamps): Promise<void> {
  const l = lanes.baton;
  await Promise.all(
    [...batch].map(async ([t, facts]) => {
      const starts = facts.flatMap((f) => (f.starts ? [f.starts] : []));
      // The lease comes first, as a worker writes it: a live execution without one is lost.
      if (starts.length > 0) {
        await Promise.all(starts.map((ref) => store.executions.renewLease(ref, LEASE_MS)));
      }
      const entries: StreamEntry[] = facts.map((f) => f.entry);
      const seqs = entries.flatMap((e) => l.predictors[t]!.apply(e));
      const at = now();
      await store.append(batonIds[t]!, entries);
      for (const s of seqs) stamps.add(t, s, at);
      // As a worker does once the execution's end is stored.
      const ends = facts.flatMap((f) => (f.ends ? [f.ends] : []));
      if (ends.length > 0) await Promise.all(ends.map((ref) => store.executions.dropLease(ref)));
    }),
  );
}

async function sendRaw(batch: Map<number, PlayedFact[]>, stamps: Stamps): Promise<void> {
  const l = lanes.raw;
  const p = raw.pipeline();
  const seqs: [number, number][] = [];
  for (const [t, facts] of batch) {
    const key = `${cfg.rawPrefix}:${taskIds[t]}`;
    for (const f of facts) {
      for (const u of l.predictors[t]!.updates(f.entry)) {
        p.xadd(key, '*', 'e', JSON.stringify(u));
        seqs.push([t, u.seq]);
      }
    }
  }
  if (seqs.length === 0) return;
  const at = now();
  await p.exec();
  for (const [t, s] of seqs) stamps.add(t, s, at);
}

function sendPeer(batch: Map<number, PlayedFact[]>, stamps: Stamps): Promise<void> {
  const l = lanes.peer;
  for (const [t, facts] of batch) {
    const taskId = taskIds[t]!;
    for (const f of facts) {
      for (const u of l.predictors[t]!.updates(f.entry)) {
        stamps.add(t, u.seq, now());
        producer!.to(taskId).emit('update', u);
      }
    }
  }
  return Promise.resolve();
}

async function play(mode: Mode, rate: number, ms: number, file: string) {
  const l = lanes[mode];
  const stamps = new Stamps();
  const total = Math.round((rate * ms) / 1000);
  const start = now();
  let i = 0;
  let lag = 0;
  while (i < total) {
    const t = now();
    const due = Math.min(total, Math.floor(((t - start) * rate) / 1000) + 1);
    if (due > i) {
      // How late the oldest due fact goes out: grows without bound when the rate is not held.
      lag = Math.max(lag, t - (start + (i * 1000) / rate));
      const batch = new Map<number, PlayedFact[]>();
      for (; i < due; i++) {
        const task = l.played++ % cfg.tasks;
        const list = batch.get(task) ?? [];
        list.push(l.players[task]!.next());
        batch.set(task, list);
      }
      await (mode === 'baton'
        ? sendBaton(batch, stamps)
        : mode === 'raw'
          ? sendRaw(batch, stamps)
          : sendPeer(batch, stamps));
    }
    const wait = start + (i * 1000) / rate - now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  const elapsed = now() - start;
  writeFileSync(file, Buffer.from(stamps.buf.buffer, 0, stamps.n * 3 * 8));
  return { sent: total, stamped: stamps.n, achieved: (total * 1000) / elapsed, lagMs: lag };
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const cmd = JSON.parse(line) as {
    run?: { mode: Mode; rate: number; ms: number; file: string };
    close?: boolean;
  };
  if (cmd.run) {
    const r = cmd.run;
    play(r.mode, r.rate, r.ms, r.file).then(
      (out) => process.stdout.write(`${JSON.stringify(out)}\n`),
      (err: unknown) => process.stdout.write(`${JSON.stringify({ error: String(err) })}\n`),
    );
  } else if (cmd.close) {
    void store.close().finally(() => {
      raw.disconnect();
      void producer?.close();
      process.exit(0);
    });
  }
});
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
