// Real gateway stacks for integration tests: a real redis-server, real projector and gateway
// processes, tokens, a worker's facts written as a worker writes them, and real ws clients.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import {
  SCHEMA_VERSION,
  splitTaskKey,
  taskKey,
  type Capabilities,
  type StreamEntry,
  type Update,
} from '@baton/protocol';
import { startRedis, type RedisServer } from '@baton/redis-server';
import { EventStore } from '@baton/store';
import WebSocket from 'ws';
import { GENERIC_CAPS } from './owner';
import { ROOT } from './processes';
import { waitFor } from './wait';

export const SECRET = 'gateway-test-secret-0123456789abcdefghij';

const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

/** An HS256 JWT, signed as any client token issuer would (RFC 7519), without a library. */
export function token(
  claims: { tenant?: unknown; scope?: unknown; exp?: number; iss?: string; [k: string]: unknown },
  secret = SECRET,
): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const body = { exp: Math.floor(Date.now() / 1000) + 3600, ...claims };
  const head = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(body)}`;
  return `${head}.${createHmac('sha256', secret).update(head).digest('base64url')}`;
}

export const tokenFor = (tenant: string, scope = 'read prompt') => token({ tenant, scope });

export interface ServiceProc {
  readonly proc: ChildProcess;
  output(): string;
  readonly exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

function run(
  file: string,
  env: Record<string, string>,
  ready?: RegExp,
): Promise<ServiceProc & { match: RegExpExecArray | null }> {
  const proc = spawn(process.execPath, [file], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(proc);
  let out = '';
  const exited = new Promise<number | null>((r) =>
    proc.once('exit', (code) => {
      children.delete(proc);
      r(code);
    }),
  );
  const handle: ServiceProc = {
    proc,
    output: () => out,
    exited,
    stop: async (signal = 'SIGTERM') => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
  return new Promise((resolve, reject) => {
    let isReady = false;
    // Everything the process prints is kept (output()); readiness is looked for until found.
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (isReady) return;
      const m = ready ? ready.exec(out) : null;
      if (!ready || m) {
        isReady = true;
        resolve({ ...handle, match: m });
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    void exited.then((code) =>
      reject(new Error(`${file} exited (${code}) before it was ready:\n${out}`)),
    );
    if (!ready) resolve({ ...handle, match: null });
  });
}

export interface GatewayProc extends ServiceProc {
  url: string;
  wsUrl: string;
}

export async function spawnGateway(env: Record<string, string>): Promise<GatewayProc> {
  const p = await run(
    'dist/apps/gateway/src/main.js',
    { GATEWAY_PORT: '0', BATON_JWT_SECRET: SECRET, ...env },
    /"msg":"gateway ready","url":"([^"]+)"/,
  );
  const url = p.match![1]!;
  return { ...p, url, wsUrl: url.replace(/^http/, 'ws') };
}

/** A redis-server with one gateway process on it, and a store of the test's on the same keys. */
export interface LoneGateway {
  redis: RedisServer;
  store: EventStore;
  gw: GatewayProc;
  /** The environment that points a process at the same Redis keys (for another gateway). */
  env: Record<string, string>;
}

/**
 * A redis-server and one gateway on it, with no projector (the test plays the owner where it
 * needs one), started before the file's tests and stopped after them: keys under `prefix` in
 * `shards` shards, `env` on top of that for the gateway only. Read its parts inside tests.
 */
export function loneGatewayForFile(
  prefix: string,
  shards: number,
  env: Record<string, string> = {},
): LoneGateway {
  let started: LoneGateway | undefined;
  let redis: RedisServer | undefined;
  let store: EventStore | undefined;
  beforeAll(async () => {
    redis = await startRedis();
    const base = { REDIS_URL: redis.url, BATON_PREFIX: prefix, BATON_SHARDS: String(shards) };
    store = EventStore.connect({ url: redis.url }, { shards, prefix });
    const gw = await spawnGateway({ ...base, ...env });
    started = { redis, store, gw, env: base };
  });
  afterAll(async () => {
    await started?.gw.stop();
    await store?.close();
    await redis?.stop();
  });
  const lone = (): LoneGateway => {
    if (!started) throw new Error('the gateway starts in beforeAll: read it inside a test');
    return started;
  };
  return {
    get redis() {
      return lone().redis;
    },
    get store() {
      return lone().store;
    },
    get gw() {
      return lone().gw;
    },
    get env() {
      return lone().env;
    },
  };
}

export function spawnProjector(env: Record<string, string>): Promise<ServiceProc> {
  return run('dist/apps/projector/src/main.js', {
    PROJECTOR_LEASE_TTL_MS: '2000',
    PROJECTOR_RENEW_MS: '300',
    PROJECTOR_METRICS_PORT: '0',
    ...env,
  });
}

export interface Stack {
  redis: RedisServer;
  /** For the test's own reads and worker facts. */
  store: EventStore;
  prefix: string;
  shards: number;
  gateways: GatewayProc[];
  projectors: ServiceProc[];
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** Redis, projectors and gateways, each a real process, with every shard owned before it returns. */
export async function startStack(
  o: {
    gateways?: number;
    projectors?: number;
    shards?: number;
    gatewayEnv?: Record<string, string>;
    projectorEnv?: Record<string, string>;
  } = {},
): Promise<Stack> {
  const redis = await startRedis();
  const shards = o.shards ?? 4;
  const prefix = `t${randomBytes(3).toString('hex')}`;
  const env = { REDIS_URL: redis.url, BATON_PREFIX: prefix, BATON_SHARDS: String(shards) };
  const store = EventStore.connect({ url: redis.url }, { shards, prefix });
  const [projectors, gateways] = await Promise.all([
    Promise.all(
      Array.from({ length: o.projectors ?? 1 }, () =>
        spawnProjector({ ...env, ...o.projectorEnv }),
      ),
    ),
    Promise.all(
      Array.from({ length: o.gateways ?? 2 }, () => spawnGateway({ ...env, ...o.gatewayEnv })),
    ),
  ]);
  if (projectors.length > 0) {
    await waitFor(
      async () => (await fetch(`${gateways[0]!.url}/readyz`)).status === 200,
      'every shard owned',
      30_000,
    );
  }
  return {
    redis,
    store,
    prefix,
    shards,
    gateways,
    projectors,
    env,
    stop: async () => {
      await Promise.all([...gateways, ...projectors].map((p) => p.stop()));
      await store.close();
      await redis.stop();
    },
  };
}

/**
 * A task of `tenant` with one session `s1`: a live execution, the first of `keys` running as a
 * prompt and the others queued, once the gateway's view shows them.
 */
export async function seedQueuedTask(
  stack: Stack,
  tenant: string,
  taskId: string,
  keys: string[],
): Promise<void> {
  const key = taskKey(tenant, taskId);
  const c = await Client.connect(stack.gateways[0]!.wsUrl, tokenFor(tenant));
  await new FakeWorker(stack.store, key, 's1').start();
  for (const k of keys) {
    const r = await c.request({
      op: 'prompt',
      taskId,
      sessionId: 's1',
      text: k,
      idempotencyKey: k,
    });
    if (!r.ok) throw new Error(`prompt ${k} refused: ${JSON.stringify(r)}`);
  }
  await waitFor(
    async () =>
      (await stack.store.views.read(key))?.sessions[0]?.queue.entries.length === keys.length - 1,
    `the view of ${taskId}`,
  );
  await c.close();
}

/**
 * The data of a `background.started` fact for work the agent did not attest: a shell running
 * `command` (also its label), or a subagent with a chat of its own.
 */
export const shellStarted = (id: string, command = id, startedAt = new Date().toISOString()) => ({
  attested: false,
  work: { kind: 'shell', id, label: command, command, startedAt },
});

/** See {@link shellStarted}. */
export const subagentStarted = (id: string, startedAt = new Date().toISOString()) => ({
  attested: false,
  work: { kind: 'subagent', id, label: id, chat: `ahp-chat:/${id}`, startedAt },
});

/**
 * Writes facts as a worker hosting one execution of a session does. `taskId` is the task's key
 * (`<tenant>/<task id>`, libs/protocol taskKey), as in an execution job.
 */
export class FakeWorker {
  private seq = 0;
  private readonly instance = `test-worker-${randomBytes(4).toString('hex')}`;

  constructor(
    private readonly store: EventStore,
    readonly taskId: string,
    readonly sessionId: string,
    readonly executionId = `x-${randomBytes(4).toString('hex')}`,
    readonly generation = 1,
  ) {}

  fact(type: string, data: unknown): Promise<(string | null)[]> {
    return this.store.append(this.taskId, [
      {
        v: SCHEMA_VERSION,
        type,
        taskId: this.taskId,
        sessionId: this.sessionId,
        executionId: this.executionId,
        generation: this.generation,
        writer: { role: 'worker', instance: this.instance, seq: ++this.seq },
        data,
      } as StreamEntry,
    ]);
  }

  /** The execution is up and can take prompts (its lease outlives the test, as if renewed). */
  async start(caps: Capabilities = GENERIC_CAPS): Promise<void> {
    // Whoever started the execution (REST, CLI exec) recorded the task among its tenant's.
    const k = splitTaskKey(this.taskId);
    if (k) await this.store.tenants.add(k.tenant, k.taskId);
    await this.store.executions.renewLease(
      { taskId: this.taskId, sessionId: this.sessionId, executionId: this.executionId },
      600_000,
    );
    await this.fact('execution.started', { startedAt: new Date().toISOString() });
    await this.fact('capabilities.negotiated', caps);
  }
}

/**
 * A {@link FakeWorker} on session `sessionId` of a task (by its key), started, once the task's
 * view shows the session: what a client that subscribes next is sure to see.
 */
export async function liveWorker(
  store: EventStore,
  taskId: string,
  sessionId = 's1',
  caps: Capabilities = GENERIC_CAPS,
): Promise<FakeWorker> {
  const w = new FakeWorker(store, taskId, sessionId);
  await w.start(caps);
  await waitFor(async () => {
    const v = await store.views.read(taskId);
    return v?.sessions.some((s) => s.sessionId === sessionId);
  }, `session ${taskId}/${sessionId}`);
  return w;
}

type Json = Record<string, unknown>;

/** A real ws client that records every message and waits for the ones a test expects. */
export class Client {
  readonly messages: Json[] = [];
  private waiters = new Set<() => void>();
  private n = 0;
  closed: { code: number; reason: string } | undefined;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.messages.push(JSON.parse(data.toString()) as Json);
      for (const w of this.waiters) w();
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      for (const w of this.waiters) w();
    });
  }

  static async connect(url: string, tok?: string, path = '/ws'): Promise<Client> {
    const ws = new WebSocket(`${url}${path}`, {
      headers: tok ? { authorization: `Bearer ${tok}` } : {},
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) =>
        reject(new Error(`upgrade refused: ${res.statusCode}`)),
      );
    });
    return new Client(ws);
  }

  /**
   * The answer to an upgrade of `url`, for a test of refusals: 101 when it opens (it is closed
   * again at once), or the status and body it was refused with.
   */
  static upgradeAnswer(
    url: string,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { headers });
      ws.once('open', () => {
        ws.close();
        resolve({ status: 101, body: '' });
      });
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      ws.once('error', (err) => {
        if (!/Unexpected server response/.test(err.message)) reject(err);
      });
    });
  }

  send(m: unknown): void {
    this.ws.send(typeof m === 'string' || Buffer.isBuffer(m) ? m : JSON.stringify(m));
  }

  /** Waits for the first message (from `from` on) matching `pred`. */
  async next(
    pred: (m: Json) => boolean,
    what: string,
    from = 0,
    timeoutMs = 15_000,
  ): Promise<Json> {
    const find = () => this.messages.slice(from).find(pred);
    const found = find();
    if (found) return found;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        this.waiters.delete(check);
        reject(
          new Error(
            `timed out waiting for ${what}; got ${JSON.stringify(this.messages.slice(-5))}`,
          ),
        );
      }, timeoutMs);
      const check = () => {
        const m = find();
        if (m) {
          clearTimeout(t);
          this.waiters.delete(check);
          resolve(m);
        } else if (this.closed) {
          clearTimeout(t);
          this.waiters.delete(check);
          reject(
            new Error(`closed (${this.closed.code} ${this.closed.reason}) waiting for ${what}`),
          );
        }
      };
      this.waiters.add(check);
    });
  }

  /** Sends a /ws request and returns its reply. */
  async request(m: Json): Promise<Json> {
    const id = (m.id as string | undefined) ?? `client-${++this.n}`;
    const from = this.messages.length;
    this.send({ v: 1, id, ...m });
    return this.next((x) => x.type === 'reply' && x.id === id, `reply to ${String(m.op)}`, from);
  }

  /** Sends an /ahp JSON-RPC request and returns its response. */
  async rpc(method: string, params?: unknown): Promise<Json> {
    const id = `client-${++this.n}`;
    const from = this.messages.length;
    this.send({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
    return this.next(
      (x) => x.id === id && ('result' in x || 'error' in x),
      `${method} response`,
      from,
    );
  }

  updates(taskId?: string): Json[] {
    return this.messages
      .filter((m) => m.type === 'update')
      .map((m) => m.update as Json)
      .filter((u) => taskId === undefined || u.taskId === taskId);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    const done = new Promise<void>((r) => this.ws.once('close', () => r()));
    this.ws.close();
    await done;
  }
}

/** Every entry of a task stream (by its key), in order. */
export async function readAll(store: EventStore, taskId: string): Promise<StreamEntry[]> {
  const out: StreamEntry[] = [];
  let after = '0-0';
  for (;;) {
    const page = await store.readTask(taskId, after);
    out.push(...page.items.map((i) => i.entry));
    if (page.items.length === 0) return out;
    after = page.lastId;
  }
}

/** Every client update of a task (by its key), in order, from its shard's update stream. */
export async function readUpdatesOf(store: EventStore, taskId: string): Promise<Update[]> {
  const out: Update[] = [];
  let after = '0-0';
  for (;;) {
    const page = await store.readUpdates(store.shardOf(taskId), after);
    out.push(...page.items.map((i) => i.update).filter((u) => u.taskId === taskId));
    if (page.items.length === 0) return out;
    after = page.lastId;
  }
}

/**
 * Entries ever added to each stream under the prefix (task streams, feeds, updates, inboxes...):
 * XINFO's entries-added, which trims do not lower (an owner cuts its feed behind the notes it has
 * handled, and streams behind their snapshots), so a write shows whenever it happened.
 */
export async function streamLengths(
  store: EventStore,
  prefix: string,
): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  let cursor = '0';
  do {
    const [next, keys] = await store.redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    for (const k of keys) {
      if ((await store.redis.type(k)) !== 'stream') continue;
      const info = (await store.redis.xinfo('STREAM', k)) as unknown as unknown[];
      out[k] = Number(info[info.indexOf('entries-added') + 1]);
    }
  } while (cursor !== '0');
  return out;
}
