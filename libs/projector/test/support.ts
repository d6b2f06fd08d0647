// Shared helpers of the projector's integration tests: real projector processes, test traffic
// written as workers and gateways write it, and the checks every proof shares.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { fold, initialTaskState, taskView, type TaskState } from '@baton/activity';
import {
  SCHEMA_VERSION,
  groupOf,
  type EntryOf,
  type EntryType,
  type StreamEntry,
  type TaskView,
  type Update,
} from '@baton/protocol';
import { startRedis, type RedisServer } from '@baton/redis-server';
import { EventStore, connectRedis, type StoredEntry } from '@baton/store';
import type { Registry } from 'prom-client';
import { CLAUDE_CAPS, GENERIC_CAPS, waitFor } from '@baton/testing';
import { startProjector, type ProjectorHandle, type ProjectorOptions } from '../src/projector';

const ROOT = join(__dirname, '..', '..', '..');

export interface LogLine {
  level: number;
  time: number;
  instance: string;
  msg: string;
  [key: string]: unknown;
}

export interface ProjectorProcess {
  readonly id: string;
  readonly proc: ChildProcess;
  readonly logs: LogLine[];
  stderr(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  waitForLog(pred: (l: LogLine) => boolean, what: string, timeoutMs?: number): Promise<LogLine>;
  signal(sig: NodeJS.Signals): void;
}

const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

export interface SpawnOptions {
  redisUrl: string;
  prefix: string;
  shards: number;
  id: string;
  env?: Record<string, string>;
}

/** Starts `node dist/apps/projector/src/main.js` with a test configuration. */
export function spawnProjector(o: SpawnOptions): ProjectorProcess {
  const proc = spawn(process.execPath, ['dist/apps/projector/src/main.js'], {
    cwd: ROOT,
    env: {
      ...process.env,
      REDIS_URL: o.redisUrl,
      BATON_PREFIX: o.prefix,
      BATON_SHARDS: String(o.shards),
      BATON_INSTANCE_ID: o.id,
      PROJECTOR_LEASE_TTL_MS: '1000',
      PROJECTOR_RENEW_MS: '200',
      PROJECTOR_METRICS_PORT: '0',
      PROJECTOR_SNAPSHOT_ENTRIES: '10000000',
      PROJECTOR_SNAPSHOT_MS: '86400000',
      PROJECTOR_STALL_MS: '86400000',
      LOG_LEVEL: 'info',
      ...o.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(proc);
  const logs: LogLine[] = [];
  const waiters = new Set<() => void>();
  let buffered = '';
  proc.stdout!.setEncoding('utf8');
  proc.stdout!.on('data', (chunk: string) => {
    buffered += chunk;
    let nl: number;
    while ((nl = buffered.indexOf('\n')) !== -1) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      try {
        logs.push(JSON.parse(line) as LogLine);
      } catch {
        // not a log line
      }
    }
    for (const w of waiters) w();
  });
  let stderr = '';
  proc.stderr!.setEncoding('utf8');
  proc.stderr!.on('data', (c: string) => (stderr += c));
  const exited = new Promise<number | null>((resolve) =>
    proc.once('exit', (code) => {
      children.delete(proc);
      for (const w of waiters) w();
      resolve(code);
    }),
  );
  return {
    id: o.id,
    proc,
    logs,
    stderr: () => stderr,
    exited,
    signal: (sig) => {
      proc.kill(sig);
    },
    waitForLog: (pred, what, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const hit = logs.find(pred);
          if (hit) {
            done();
            resolve(hit);
          } else if (proc.exitCode !== null || proc.signalCode !== null) {
            done();
            reject(new Error(`${o.id} exited before ${what}; stderr: ${stderr.slice(-2_000)}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(
            new Error(`${o.id}: timed out waiting for ${what}; stderr: ${stderr.slice(-2_000)}`),
          );
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      }),
  };
}

/** Stops a projector process for good (SIGKILL if it does not exit on SIGTERM). */
export async function reap(p: ProjectorProcess): Promise<void> {
  if (p.proc.exitCode !== null || p.proc.signalCode !== null) return;
  p.proc.kill('SIGCONT');
  p.proc.kill('SIGTERM');
  const t = setTimeout(() => p.proc.kill('SIGKILL'), 5_000);
  await p.exited;
  clearTimeout(t);
}

let prefixes = 0;
export function freshPrefix(): string {
  prefixes += 1;
  return `pj${process.pid}x${prefixes}`;
}

// -------------------------------------------------------------------------------------------
// Test traffic, written as a worker or a gateway writes it (growing seqs per writer instance)
// -------------------------------------------------------------------------------------------

export type Data<T extends EntryType> = EntryOf<T>['data'];
export type FactType = Extract<StreamEntry, { executionId: string }>['type'];
export type CommandType =
  | EntryOf<
      'prompt.submit' | 'queue.cancel' | 'queue.send_now' | 'queue.set_auto_run' | 'session.cancel'
    >['type']
  | 'session.reset'
  | 'session.delete'
  | 'session.configure'
  | 'session.force_release'
  | 'execution.request';

export class Writer {
  private seq = 0;
  constructor(
    readonly role: 'worker' | 'gateway',
    readonly instance: string,
  ) {}

  fact<T extends FactType>(
    x: { taskId: string; sessionId: string; executionId: string; generation: number },
    type: T,
    data: Data<T>,
  ): StreamEntry {
    return {
      v: SCHEMA_VERSION,
      taskId: x.taskId,
      sessionId: x.sessionId,
      executionId: x.executionId,
      generation: x.generation,
      writer: { role: this.role, instance: this.instance, seq: ++this.seq },
      type,
      data,
    } as StreamEntry;
  }

  command<T extends CommandType>(
    taskId: string,
    sessionId: string,
    type: T,
    data: Data<T>,
  ): StreamEntry {
    return {
      v: SCHEMA_VERSION,
      taskId,
      sessionId,
      writer: { role: this.role, instance: this.instance, seq: ++this.seq },
      type,
      data,
    } as StreamEntry;
  }
}

export { CLAUDE_CAPS, GENERIC_CAPS };

/** A person's prompt under idempotency key `key` (its command and prompt ids follow the key). */
export function humanPrompt(key: string): Data<'prompt.submit'> {
  return {
    commandId: `c-${key}`,
    promptId: `p-${key}`,
    idempotencyKey: key,
    text: `prompt ${key}`,
    origin: 'human',
  };
}

/** One session of one task, written as a worker and a gateway would. */
export class Task {
  readonly worker = new Writer('worker', `w-${Math.random().toString(36).slice(2)}`);
  readonly gateway = new Writer('gateway', `g-${Math.random().toString(36).slice(2)}`);
  readonly x: { taskId: string; sessionId: string; executionId: string; generation: number };
  constructor(
    readonly store: EventStore,
    readonly taskId: string,
    executionId = `${taskId}-x1`,
  ) {
    this.x = { taskId, sessionId: 's1', executionId, generation: 1 };
  }
  fact<T extends FactType>(type: T, data: Data<T>) {
    return this.store.append(this.taskId, [this.worker.fact(this.x, type, data)]);
  }
  command<T extends CommandType>(type: T, data: Data<T>) {
    return this.store.append(this.taskId, [this.gateway.command(this.taskId, 's1', type, data)]);
  }
  submit(key: string) {
    return this.command('prompt.submit', humanPrompt(key));
  }
  stream(): Promise<StoredEntry[]> {
    return readStream(this.store, this.taskId);
  }
  async has(type: StreamEntry['type'], count = 1) {
    return (await this.stream()).filter((e) => e.entry.type === type).length >= count;
  }
  /** The execution starts (its lease first, as a worker does) and negotiates `caps`. */
  async start(caps = GENERIC_CAPS, leaseMs: number | null = 600_000) {
    if (leaseMs !== null) await this.store.executions.renewLease(this.x, leaseMs);
    await this.fact('execution.started', { startedAt: '2026-11-30T00:00:00Z' });
    await this.fact('capabilities.negotiated', caps);
  }
  /** The execution starts and the agent runs prompt `key`, the first the owner delivered. */
  async startRunning(key = 'a') {
    await this.start();
    await this.submit(key);
    await waitFor(async () => (await this.inbox()).length === 1, 'delivery');
    await this.fact('prompt.dispatched', { promptId: `p-${key}`, admissionGeneration: 1 });
  }
  /** What the owner handed to the execution, in order. */
  async inbox() {
    return (await this.store.inbox.read(this.taskId, this.x.executionId)).items.map(
      (i) => i.message,
    );
  }
  /** Whether the owner has told this execution's worker to stop it, for `reason`. */
  async stopSent(reason: string) {
    return (await this.inbox()).some(
      (m) => m.type === 'execution.stop' && m.data.reason === reason,
    );
  }
  async viewMatchesFold() {
    return sameJson(
      await this.store.views.read(this.taskId),
      foldAll(this.taskId, await this.stream()).view,
    );
  }
  /** A short task: an execution runs one prompt and ends, its worker drops its lease. */
  async runOneTurn(key: string) {
    await this.start();
    await this.submit(key);
    const admitted = async () =>
      (await this.stream()).find(
        (e) => e.entry.type === 'prompt.admitted' && e.entry.data.promptId === `p-${key}`,
      );
    await waitFor(async () => (await admitted()) !== undefined, 'admission');
    const entry = (await admitted())!.entry;
    const generation = entry.type === 'prompt.admitted' ? entry.data.admissionGeneration : 0;
    await this.fact('prompt.dispatched', { promptId: `p-${key}`, admissionGeneration: generation });
    await this.fact('turn.ended', { admissionGeneration: generation, stopReason: 'end_turn' });
    await this.fact('execution.ended', { reason: 'completed' });
    await this.store.executions.dropLease(this.x);
  }
  /** Published updates are gapless and those of a from-scratch fold; the view is the fold's. */
  async exact(): Promise<string[]> {
    const entries = await this.stream();
    const expected = foldAll(this.taskId, entries);
    const published =
      (await readUpdatesByTask(this.store, this.store.keys.shards)).get(this.taskId) ?? [];
    const problems = updateProblems(this.taskId, published, expected.updates);
    if (!sameJson(await this.store.views.read(this.taskId), expected.view))
      problems.push(`${this.taskId}: view differs from the fold`);
    return problems;
  }
}

// -------------------------------------------------------------------------------------------
// Reading back and checking
// -------------------------------------------------------------------------------------------

export async function readStream(store: EventStore, taskId: string): Promise<StoredEntry[]> {
  const out: StoredEntry[] = [];
  let after = '0-0';
  for (;;) {
    const page = await store.readTask(taskId, after, 1_000);
    out.push(...page.items);
    if (page.items.length === 0) return out;
    after = page.lastId;
  }
}

/** Every update of a shard's update stream, grouped by task, in stream order. */
export async function readUpdatesByTask(
  store: EventStore,
  shards: number,
): Promise<Map<string, Update[]>> {
  const out = new Map<string, Update[]>();
  for (let s = 0; s < shards; s++) {
    let after = '0-0';
    for (;;) {
      const page = await store.readUpdates(s, after, 1_000);
      for (const { update } of page.items) {
        const list = out.get(update.taskId) ?? [];
        list.push(update);
        out.set(update.taskId, list);
      }
      if (page.items.length === 0) break;
      after = page.lastId;
    }
  }
  return out;
}

/** The from-scratch fold of a whole stream: its state, and every update it numbers. */
export function foldAll(taskId: string, entries: readonly StoredEntry[]) {
  let state: TaskState = initialTaskState(taskId);
  const updates: Update[] = [];
  for (const { id, entry } of entries) {
    const f = fold(state, entry);
    state = f.state;
    updates.push(...groupOf(id, f.updates));
  }
  return { state, updates, view: taskView(state) as TaskView };
}

export interface Acquisition {
  shard: number;
  epoch: number;
  owner: string;
  /** Server time (ms) of the acquisition, from the lease's expiry minus its TTL. */
  acquiredAt: number;
}

export function acquisitions(procs: readonly ProjectorProcess[]): Acquisition[] {
  return procs.flatMap((p) =>
    p.logs
      .filter((l) => l.msg === 'lease acquired')
      .map((l) => ({
        shard: l.shard as number,
        epoch: l.epoch as number,
        owner: p.id,
        acquiredAt: l.acquiredAt as number,
      })),
  );
}

const idMs = (id: string) => Number(id.slice(0, id.indexOf('-')));

/**
 * Checks the lease history against what was written. Every (shard, epoch) was acquired once, by
 * one instance; and every entry a projector wrote in a shard's task streams was written by the
 * instance holding the shard's latest lease at that moment (by the server clock both share).
 * Returns the violations found.
 */
export function writerViolations(
  shardOf: (taskId: string) => number,
  streams: ReadonlyMap<string, readonly StoredEntry[]>,
  acqs: readonly Acquisition[],
): string[] {
  const problems: string[] = [];
  const byShard = new Map<number, Acquisition[]>();
  for (const a of acqs) {
    const list = byShard.get(a.shard) ?? [];
    if (list.some((b) => b.epoch === a.epoch)) {
      problems.push(`shard ${a.shard} epoch ${a.epoch} acquired twice`);
    }
    list.push(a);
    byShard.set(a.shard, list);
  }
  for (const list of byShard.values()) list.sort((a, b) => a.epoch - b.epoch);
  for (const [taskId, entries] of streams) {
    const history = byShard.get(shardOf(taskId)) ?? [];
    for (const { id, entry } of entries) {
      if (entry.writer.role !== 'projector') continue;
      const t = idMs(id);
      // Holders at t: the latest acquisition before t, and any acquired in the same millisecond
      // (an append and a takeover in one millisecond cannot be ordered by the clock).
      const before = history.filter((a) => a.acquiredAt < t);
      const holders = new Set<string>();
      if (before.length > 0) holders.add(before[before.length - 1]!.owner);
      for (const a of history) if (a.acquiredAt === t) holders.add(a.owner);
      if (!holders.has(entry.writer.instance)) {
        problems.push(
          `${taskId} ${id} ${entry.type} written by ${entry.writer.instance}, lease held by ${[...holders].join('|') || 'nobody'}`,
        );
      }
    }
  }
  return problems;
}

/** Problems with one task's published updates: gaps, duplicates, or a difference from the fold. */
export function updateProblems(
  taskId: string,
  published: readonly Update[],
  expected: readonly Update[],
): string[] {
  const problems: string[] = [];
  published.forEach((u, i) => {
    if (u.seq !== i + 1) problems.push(`${taskId}: update #${i + 1} has seq ${u.seq}`);
  });
  if (published.length !== expected.length) {
    problems.push(
      `${taskId}: ${published.length} updates published, the fold numbers ${expected.length}`,
    );
  } else if (!sameJson(published, expected)) {
    problems.push(`${taskId}: published updates differ from the from-scratch fold`);
  }
  return problems;
}

/** Equal as JSON values (key order and undefined fields aside). */
export function sameJson(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(JSON.parse(JSON.stringify(a)), JSON.parse(JSON.stringify(b)));
}

/**
 * A counter's or gauge's value in `registry`, summed over the label sets that carry `labels`
 * (0 when there is none).
 */
export async function metricSum(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return 0;
  let sum = 0;
  for (const v of (await metric.get()).values)
    if (Object.entries(labels).every(([k, want]) => v.labels[k] === want)) sum += v.value;
  return sum;
}

/**
 * A real redis-server for one test file, started before its tests, with what the file starts on
 * it (stores, in-process projectors, projector processes) ended after them; `beforeStop` first.
 */
export function redisForFile(o: { beforeStop?: () => Promise<unknown> } = {}) {
  let server: RedisServer | undefined;
  const stores: EventStore[] = [];
  const handles: ProjectorHandle[] = [];
  const procs: ProjectorProcess[] = [];
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await o.beforeStop?.();
    await Promise.all([...handles.map((h) => h.stop()), ...procs.map(reap)]);
    for (const s of stores) {
      await s.close();
      s.redis.disconnect();
    }
    await server?.stop();
  });
  return {
    get url(): string {
      if (!server) throw new Error('the redis-server starts in beforeAll: read it inside a test');
      return server.url;
    },
    /** A store of a deployment on this Redis. */
    store(prefix: string, shards: number, feedMaxLen?: number): EventStore {
      const s = new EventStore(connectRedis({ url: this.url }), {
        prefix,
        shards,
        ...(feedMaxLen ? { feedMaxLen } : {}),
      });
      stores.push(s);
      return s;
    },
    /** An in-process projector. */
    async projector(options: ProjectorOptions): Promise<ProjectorHandle> {
      return this.stopsAfter(await startProjector(options));
    },
    /** A projector (in-process or a process) the test started another way. */
    stopsAfter<P extends ProjectorHandle | ProjectorProcess>(p: P): P {
      if ('stop' in p) handles.push(p);
      else procs.push(p);
      return p;
    },
    /** A projector process of a deployment on this Redis. */
    spawn(o: Omit<SpawnOptions, 'redisUrl'>): ProjectorProcess {
      return this.stopsAfter(spawnProjector({ redisUrl: this.url, ...o }));
    },
  };
}
