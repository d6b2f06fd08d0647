/**
 * Child processes of the end-to-end benchmarks: Baton's own processes started the way they are
 * deployed (`node dist/apps/<app>/src/main.js`, configured by the environment), and the
 * bench's helpers (load, clients, raw relay) driven by JSON lines over stdin/stdout.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compiledPath, packageRoot } from '@baton/config';
import { createInterface } from 'node:readline';

const ROOT = packageRoot(__dirname);
export const JWT_SECRET = 'bench-secret-0123456789abcdefghijklmnop';

/** Set BENCH_CPU_PROF=<dir> to run Baton's processes under `--cpu-prof` (see bench/profile.ts). */
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF;

export function token(tenant: string, scope: string): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const head = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ tenant, scope, exp: Math.floor(Date.now() / 1000) + 3600 })}`;
  return `${head}.${createHmac('sha256', JWT_SECRET).update(head).digest('base64url')}`;
}

/** Now on CLOCK_MONOTONIC in ms: the same clock in every process of this machine (see e2e notes). */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export interface Proc {
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number;
  /** Next JSON line the process printed (lines that are not JSON objects are skipped). */
  next(): Promise<Record<string, unknown>>;
  send(cmd: object): void;
  /** send + next. */
  ask(cmd: object): Promise<Record<string, unknown>>;
  /** CPU seconds (user + system) the process has used so far. */
  cpu(): number;
  /** SIGTERM (a graceful stop), then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
  kill(): Promise<void>;
}

const CLK_TCK = 100;

export function cpuOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch {
    return NaN;
  }
}

export function spawnNode(
  name: string,
  file: string,
  env: Record<string, string>,
  args: string[] = [],
  profile = false,
): Proc {
  const prof = profile && CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF_DIR}`] : [];
  const child = spawn(process.execPath, [...prof, compiledPath(join(ROOT, file)), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const queue: Record<string, unknown>[] = [];
  let wake: (() => void) | undefined;
  let exited = false;
  child.once('exit', () => {
    exited = true;
    wake?.();
  });
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (!line.startsWith('{')) return;
    let m: Record<string, unknown>;
    try {
      m = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    // Baton's own structured log (pino): errors are shown, the rest is not the bench's business.
    if (typeof m.level === 'number') {
      if (m.level >= 50) process.stderr.write(`[${name}] ${line.slice(0, 2_000)}\n`);
      return;
    }
    queue.push(m);
    wake?.();
  });
  const next = async (): Promise<Record<string, unknown>> => {
    while (queue.length === 0) {
      if (exited) throw new Error(`bench: ${name} exited (code ${child.exitCode})`);
      await new Promise<void>((r) => (wake = r));
    }
    const m = queue.shift()!;
    if (m.error) throw new Error(`bench: ${name}: ${String(m.error)}`);
    return m;
  };
  const send = (cmd: object) => child.stdin!.write(`${JSON.stringify(cmd)}\n`);
  const gone = once(child, 'exit');
  return {
    name,
    child,
    pid: child.pid!,
    next,
    send,
    ask: (cmd) => {
      send(cmd);
      return next();
    },
    cpu: () => cpuOf(child.pid!),
    stop: async (graceMs = 5_000) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await gone;
      clearTimeout(t);
    },
    kill: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await gone;
    },
  };
}

export interface Deployment {
  redisUrl: string;
  prefix: string;
  shards: number;
}

function common(d: Deployment): Record<string, string> {
  return {
    REDIS_URL: d.redisUrl,
    BATON_PREFIX: d.prefix,
    BATON_SHARDS: String(d.shards),
    LOG_LEVEL: 'warn',
  };
}

export function spawnProjector(
  d: Deployment,
  instanceId: string,
  extra: Record<string, string> = {},
): Proc {
  return spawnNode(
    instanceId,
    'apps/projector/src/main.ts',
    { ...common(d), BATON_INSTANCE_ID: instanceId, PROJECTOR_METRICS_PORT: '0', ...extra },
    [],
    true,
  );
}

export async function spawnGateway(
  d: Deployment,
  instanceId: string,
  extra: Record<string, string> = {},
): Promise<{ proc: Proc; url: string }> {
  const proc = spawnNode(
    instanceId,
    'apps/gateway/src/main.ts',
    {
      ...common(d),
      BATON_INSTANCE_ID: instanceId,
      BATON_JWT_SECRET: JWT_SECRET,
      GATEWAY_PORT: '0',
      GATEWAY_MAX_MESSAGES_PER_SECOND: '10000',
      ...extra,
    },
    [],
    true,
  );
  for (;;) {
    const m = await proc.next();
    if (m.msg === 'gateway ready') return { proc, url: String(m.url) };
  }
}
