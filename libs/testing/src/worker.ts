import type { FactBody } from '@baton/acp';
import { SCHEMA_VERSION, type InboxMessage, type StreamEntry } from '@baton/protocol';
import { enqueueExecution, type ExecutionQueue } from '@baton/jobs';
import type { RedisServer } from '@baton/redis-server';
import type { EventStore, Lease } from '@baton/store';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { ROOT } from './processes';
import { startQueueStore } from './queue-store';
import { waitFor } from './wait';

/**
 * Starts an execution as the gateway does: the task claimed for its tenant (the worker refuses
 * a job whose tenant does not own the task), then the job, naming a profile (default: the
 * built-in `replay`).
 */
export async function startExecution(
  store: EventStore,
  queue: ExecutionQueue,
  ref: { taskId: string; sessionId: string; executionId: string },
  job: { profile?: string; recording?: string; speed?: number; workspace?: string },
  tenant = 'local',
): Promise<string> {
  // The job names its task by key (`<tenant>/<task id>`): the ref's task id must be one.
  if (!ref.taskId.startsWith(`${tenant}/`))
    throw new Error(`task ${ref.taskId} is not ${tenant}'s`);
  await store.tenants.add(tenant, ref.taskId.slice(tenant.length + 1));
  return enqueueExecution(queue, { v: 1, ...ref, tenant, profile: 'replay', ...job });
}

type WithExecution = Extract<StreamEntry, { executionId: string }>;
export const factsOf = (entries: StreamEntry[], executionId: string): WithExecution[] =>
  entries.filter((e): e is WithExecution => 'executionId' in e && e.executionId === executionId);

/** A fact as a dialect produced it: the envelope stripped. */
export const body = (e: WithExecution): FactBody => ({ type: e.type, data: e.data }) as FactBody;

export interface WorkerProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly instanceId: string;
  output(): string;
  /** Resolves with the exit code (or the signal) when the process is gone. */
  readonly exited: Promise<number | NodeJS.Signals>;
}

/**
 * `node <file>` from the repository root with `env` over this process's, its output kept; resolves
 * once the output includes `ready`, and fails if the process exits first.
 */
async function spawnReady(
  file: string,
  env: NodeJS.ProcessEnv,
  ready: string,
  what: string,
): Promise<ProjectorProcess> {
  const child = spawn(process.execPath, [file], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (out += c));
  const exited = new Promise<number | NodeJS.Signals>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  let gone = false;
  void exited.then(() => (gone = true));
  await waitFor(() => out.includes(ready) || gone, `${what} ready`);
  if (gone) throw new Error(`${what} exited at start:\n${out}`);
  return { child, exited, output: () => out };
}

/** A real worker process: `node dist/apps/worker/src/main.js`, ready when it says so. */
export async function spawnWorker(env: Record<string, string>): Promise<WorkerProcess> {
  const instanceId = env.BATON_INSTANCE_ID ?? `w-${Math.random().toString(36).slice(2, 8)}`;
  const p = await spawnReady(
    'dist/apps/worker/src/main.js',
    // Several workers share this host: each serves its health on a port of its own.
    { WORKER_METRICS_PORT: '0', ...env, BATON_INSTANCE_ID: instanceId },
    '"worker ready"',
    `worker ${instanceId}`,
  );
  return { ...p, pid: p.child.pid!, instanceId };
}

/** A real redis-server, a projector and a worker process on it, and the test's own clients. */
export interface WorkerStack {
  server: RedisServer;
  store: EventStore;
  queue: ExecutionQueue;
  gateway: GatewayDouble;
  projector: ProjectorProcess;
  worker: WorkerProcess;
  stop(): Promise<void>;
}

export async function startWorkerStack(o: {
  prefix: string;
  shards: number;
  projectorEnv?: Record<string, string>;
  workerEnv?: Record<string, string>;
}): Promise<WorkerStack> {
  const { server, store, queue, stop } = await startQueueStore(o.prefix, o.shards);
  const common = { REDIS_URL: server.url, BATON_PREFIX: o.prefix, BATON_SHARDS: String(o.shards) };
  const [projector, worker] = await Promise.all([
    spawnLeasedProjector({ ...common, ...o.projectorEnv }),
    spawnWorker({
      ...common,
      WORKER_CONCURRENCY: '4',
      WORKER_EXECUTION_LEASE_MS: '1500',
      ...o.workerEnv,
    }),
  ]);
  return {
    server,
    store,
    queue,
    gateway: new GatewayDouble(store),
    projector,
    worker,
    stop: async () => {
      worker.child.kill('SIGTERM');
      projector.child.kill('SIGTERM');
      await Promise.all([worker.exited, projector.exited]);
      await stop();
    },
  };
}

/** Stops a worker started by spawnWorker (SIGTERM: it drains), unless it is gone already. */
export async function stopWorker(worker: WorkerProcess | undefined): Promise<void> {
  if (worker && worker.child.exitCode === null) {
    worker.child.kill('SIGTERM');
    await worker.exited;
  }
}

/** Pids of the live (non-zombie) children of `pid`: a worker's agent process group leaders. */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z' && Number(fields[1]) === pid) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Whether a process group still has a member (ESRCH: none). */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

/**
 * A stand-in for the shard owner (the projector) in tests: it holds the shard leases, so it may
 * write execution inboxes, and hands prompts, cancels and stops to executions as a test says.
 */
export class OwnerDouble {
  private readonly leases = new Map<number, Lease>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly store: EventStore) {}

  async start(): Promise<void> {
    for (let shard = 0; shard < this.store.keys.shards; shard++) {
      const r = await this.store.leases.acquire(shard, 'owner-double', 60_000);
      if (!r.acquired) throw new Error(`shard ${shard} is held by ${r.owner}`);
      this.leases.set(shard, r.lease);
    }
    this.timer = setInterval(() => {
      for (const [shard, lease] of this.leases) {
        this.store.leases.renew(lease, 60_000).then(
          (l) => this.leases.set(shard, l),
          () => undefined,
        );
      }
    }, 10_000);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    for (const lease of this.leases.values()) await this.store.leases.release(lease);
  }

  private async send(
    ref: { taskId: string; sessionId: string; executionId: string },
    rest: Pick<InboxMessage, 'type' | 'data'>,
  ): Promise<void> {
    const lease = this.leases.get(this.store.shardOf(ref.taskId))!;
    await this.store.inbox.append(lease, ref.taskId, ref.executionId, [
      { v: SCHEMA_VERSION, ...ref, ...rest } as InboxMessage,
    ]);
  }

  deliver(
    ref: { taskId: string; sessionId: string; executionId: string },
    promptId: string,
    admissionGeneration: number,
    text = `prompt ${promptId}`,
  ): Promise<void> {
    return this.send(ref, {
      type: 'prompt.deliver',
      data: { promptId, admissionGeneration, mode: 'turn', origin: 'human', text },
    } as InboxMessage);
  }

  cancelTurn(
    ref: { taskId: string; sessionId: string; executionId: string },
    admissionGeneration: number,
  ): Promise<void> {
    return this.send(ref, {
      type: 'turn.cancel',
      data: { admissionGeneration, reason: 'user' },
    } as InboxMessage);
  }

  stopExecution(ref: { taskId: string; sessionId: string; executionId: string }): Promise<void> {
    return this.send(ref, { type: 'execution.stop', data: { reason: 'operator' } } as InboxMessage);
  }
}

/** A recorded `session/update` the agent sent at `at` (a recording line, before JSON). */
export const agentUpdateFrame = (at: string, update: Record<string, unknown>, sessionId = 's') => ({
  direction: 'agent->client',
  at,
  message: { jsonrpc: '2.0', method: 'session/update', params: { sessionId, update } },
});

/** A recording that holds a session busy: after the prompt, `chunks` message chunks `gapMs` apart. */
export function writeBusyRecording(
  file: string,
  chunks: number,
  gapMs: number,
  /** A `usage_update` (context used: the chunks so far, of 1,000) after every this many chunks. */
  usageEvery?: number,
): void {
  const t0 = Date.parse('2026-11-10T10:00:00.000Z');
  const at = (ms: number) => new Date(t0 + ms).toISOString();
  const lines: unknown[] = [
    {
      direction: 'client->agent',
      at: at(0),
      message: { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: 1 } },
    },
    {
      direction: 'agent->client',
      at: at(1),
      message: {
        jsonrpc: '2.0',
        id: 0,
        result: { protocolVersion: 1, agentInfo: { name: 'busy-agent', version: '1.0.0' } },
      },
    },
    {
      direction: 'client->agent',
      at: at(2),
      message: {
        jsonrpc: '2.0',
        id: 1,
        method: 'session/new',
        params: { cwd: '/', mcpServers: [] },
      },
    },
    {
      direction: 'agent->client',
      at: at(3),
      message: { jsonrpc: '2.0', id: 1, result: { sessionId: 's' } },
    },
    {
      direction: 'client->agent',
      at: at(4),
      message: {
        jsonrpc: '2.0',
        id: 2,
        method: 'session/prompt',
        params: { sessionId: 's', prompt: [] },
      },
    },
  ];
  for (let i = 0; i < chunks; i++) {
    lines.push(
      agentUpdateFrame(at(5 + i * gapMs), {
        sessionUpdate: 'agent_message_chunk',
        content: { type: 'text', text: `chunk ${i} ` },
      }),
    );
    if (usageEvery !== undefined && (i + 1) % usageEvery === 0)
      lines.push(
        agentUpdateFrame(at(5 + i * gapMs), {
          sessionUpdate: 'usage_update',
          used: i + 1,
          size: 1_000,
        }),
      );
  }
  lines.push({
    direction: 'agent->client',
    at: at(5 + chunks * gapMs),
    message: { jsonrpc: '2.0', id: 2, result: { stopReason: 'end_turn' } },
  });
  writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
}

/** Commands as a gateway writes them: one writer instance, its seq growing, appends awaited. */
export class GatewayDouble {
  private seq = 0;
  private n = 0;

  constructor(
    private readonly store: EventStore,
    readonly instance = `gateway-double-${process.pid}`,
  ) {}

  async command(
    ref: { taskId: string; sessionId: string },
    type: CommandEntry['type'],
    data: Record<string, unknown>,
  ): Promise<string> {
    const commandId = `c${++this.n}`;
    await this.store.append(ref.taskId, [
      {
        v: SCHEMA_VERSION,
        taskId: ref.taskId,
        sessionId: ref.sessionId,
        writer: { role: 'gateway', instance: this.instance, seq: ++this.seq },
        type,
        data: { commandId, ...data },
      } as StreamEntry,
    ]);
    return commandId;
  }

  submit(ref: { taskId: string; sessionId: string }, promptId: string): Promise<string> {
    return this.command(ref, 'prompt.submit', {
      promptId,
      idempotencyKey: `key-${promptId}`,
      text: `prompt ${promptId}`,
      origin: 'human',
    });
  }
}
type CommandEntry = Extract<StreamEntry, { data: { commandId: string } }>;

export interface ProjectorProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<number | NodeJS.Signals>;
  output(): string;
}

/** A real projector process (apps/projector), quick to take shards and to notice lapsed leases. */
export function spawnLeasedProjector(env: Record<string, string>): Promise<ProjectorProcess> {
  return spawnReady(
    'dist/apps/projector/src/main.js',
    {
      PROJECTOR_LEASE_TTL_MS: '1000',
      PROJECTOR_RENEW_MS: '200',
      PROJECTOR_METRICS_PORT: '0',
      ...env,
    },
    '"projector started"',
    'projector',
  );
}

/**
 * A Claude recording (claude-agent-acp 0.101.0 with raw task messages) whose first prompt
 * launches a background subagent and yields the foreground (human-origin idle), then streams the
 * subagent's child tool calls `gapMs` apart for `chunks` frames: a session in `background` whose
 * facts keep flowing. The held prompt is answered only at the very end.
 */
export function writeBackgroundRecording(file: string, chunks: number, gapMs: number): void {
  const fixture = readFileSync(
    join(ROOT, 'libs', 'acp', 'fixtures', 'claude-handoff-held-prompt.jsonl'),
    'utf8',
  )
    .split('\n')
    .filter((l) => l.trim() !== '');
  // Through the human-origin usage_update that ends the first prompt's foreground cycle.
  const head = fixture.slice(0, 11);
  const t0 = Date.parse('2026-11-10T10:00:01.000Z');
  const at = (ms: number) => new Date(t0 + ms).toISOString();
  const lines = [...head];
  for (let i = 0; i < chunks; i++) {
    lines.push(
      JSON.stringify(
        agentUpdateFrame(
          at(i * gapMs),
          {
            sessionUpdate: 'tool_call',
            toolCallId: `toolu_child_${i}`,
            title: 'Read File',
            kind: 'read',
            status: 'pending',
            rawInput: {},
            content: [],
            _meta: { claudeCode: { toolName: 'Read', parentToolUseId: 'toolu_A' } },
          },
          'sess-1',
        ),
      ),
    );
  }
  lines.push(
    JSON.stringify({
      direction: 'agent->client',
      at: at(chunks * gapMs),
      message: { jsonrpc: '2.0', id: 2, result: { stopReason: 'end_turn' } },
    }),
  );
  writeFileSync(file, lines.join('\n') + '\n');
}
