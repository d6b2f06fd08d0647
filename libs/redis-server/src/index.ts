/**
 * Real redis-server processes for tests and benchmarks: a single server (optionally with AOF and
 * `appendfsync always`), a Redis Cluster of N masters, kill -9 and restart on the same port and
 * data dir. Every server gets its own temporary dir, removed on stop. Never touches port 6379:
 * ports come from the OS.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchRedis, waitFor, type LaunchedRedis } from './launch';

const REDIS_SERVER = process.env.REDIS_SERVER_BIN ?? 'redis-server';
const REDIS_CLI = process.env.REDIS_CLI_BIN ?? 'redis-cli';

export interface RedisServerOptions {
  /** `appendonly yes` with `appendfsync always`: every acknowledged write is on disk. */
  aof?: boolean;
  /** Starts the server as a Redis Cluster node (used by {@link startRedisCluster}). */
  clusterEnabled?: boolean;
  /** Extra `--name value` arguments. */
  args?: string[];
}

export interface RedisServer {
  readonly host: string;
  readonly port: number;
  readonly url: string;
  readonly dir: string;
  /** Kills the process with SIGKILL and waits for it to be gone; the data dir stays. */
  kill(): Promise<void>;
  /** Starts the server again on the same port and data dir (after {@link kill}). */
  restart(): Promise<void>;
  /** SIGSTOP: the server keeps its connections but answers nothing until {@link resume}. */
  pause(): void;
  /** SIGCONT after {@link pause}. */
  resume(): void;
  /** Stops the process and removes its data dir. */
  stop(): Promise<void>;
}

export interface RedisClusterHandle {
  readonly nodes: { host: string; port: number }[];
  readonly servers: RedisServer[];
  stop(): Promise<void>;
}

/** A free TCP port whose cluster bus port (port + 10000) is free as well. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await listenOnce(0);
    if (port > 55_000 || port === 6379) continue;
    if (await isFree(port + 10_000)) return port;
  }
  throw new Error('no free port pair found');
}

function listenOnce(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => {
      const addr = srv.address();
      const p = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(p));
    });
  });
}

async function isFree(port: number): Promise<boolean> {
  try {
    await listenOnce(port);
    return true;
  } catch {
    return false;
  }
}

/** Sends one inline command and returns the raw reply, or null when the server does not answer. */
function rawCommand(port: number, command: string, timeoutMs = 500): Promise<string | null> {
  return new Promise((resolve) => {
    const sock = connect({ host: '127.0.0.1', port });
    let data = '';
    const done = (value: string | null) => {
      clearTimeout(timer);
      sock.destroy();
      resolve(value);
    };
    const timer = setTimeout(() => done(null), timeoutMs);
    sock.on('error', () => done(null));
    sock.on('connect', () => sock.write(`${command}\r\n`));
    sock.on('data', (chunk) => {
      data += chunk.toString();
      // Bulk replies announce their length; wait for the whole payload.
      const m = /^\$(\d+)\r\n/.exec(data);
      if (!m || data.length >= m[0].length + Number(m[1]) + 2) done(data);
    });
  });
}

export async function startRedis(options: RedisServerOptions = {}): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'baton-redis-'));
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--daemonize',
    'no',
    '--logfile',
    join(dir, 'redis.log'),
    '--appendonly',
    options.aof ? 'yes' : 'no',
    ...(options.aof ? ['--appendfsync', 'always'] : []),
    ...(options.clusterEnabled
      ? ['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf')]
      : []),
    ...(options.args ?? []),
  ];
  let server: LaunchedRedis | undefined;
  const launch = async () => {
    server = await launchRedis({
      binary: REDIS_SERVER,
      args,
      name: `redis-server on ${port}`,
      // A server whose `default` user is off (the compose file's) answers NOAUTH: it is up.
      answers: async () => /^(\+PONG|-NOAUTH)/.test((await rawCommand(port, 'PING')) ?? ''),
      // A test run that crashes must not leave redis-server processes behind.
      killOnExit: true,
    });
  };
  const child = () => server?.child;

  await launch();
  return {
    host: '127.0.0.1',
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    kill: async () => server?.stop('SIGKILL'),
    restart: launch,
    pause: () => void child()?.kill('SIGSTOP'),
    resume: () => void child()?.kill('SIGCONT'),
    stop: async () => {
      await server?.stop('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface RedisClusterOptions {
  /** Replicas per master (default 0): `replicas * masters` more servers. */
  replicas?: number;
  /**
   * `cluster-require-full-coverage` (default true, Redis's own default): when false, the slots of
   * live masters keep answering while another master's slots have no node.
   */
  requireFullCoverage?: boolean;
  /** `cluster-node-timeout` in ms (Redis's default is 15,000): how soon a failed master is failed over. */
  nodeTimeoutMs?: number;
  /** AOF with fsync always on every node. */
  aof?: boolean;
}

/**
 * N masters (and their replicas, if asked), every slot assigned; resolves once every node reports
 * cluster_state:ok and every replica is in sync with its master.
 */
export async function startRedisCluster(
  masters = 3,
  options: RedisClusterOptions = {},
): Promise<RedisClusterHandle> {
  const servers: RedisServer[] = [];
  const replicas = options.replicas ?? 0;
  const args = [
    ...(options.requireFullCoverage === false ? ['--cluster-require-full-coverage', 'no'] : []),
    ...(options.nodeTimeoutMs !== undefined
      ? ['--cluster-node-timeout', String(options.nodeTimeoutMs)]
      : []),
  ];
  try {
    for (let i = 0; i < masters * (1 + replicas); i++) {
      servers.push(await startRedis({ clusterEnabled: true, aof: options.aof, args }));
    }
    await new Promise<void>((resolve, reject) => {
      execFile(
        REDIS_CLI,
        [
          '--cluster',
          'create',
          ...servers.map((s) => `${s.host}:${s.port}`),
          '--cluster-replicas',
          String(replicas),
          '--cluster-yes',
        ],
        { timeout: 30_000 },
        (err, _stdout, stderr) =>
          err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(),
      );
    });
    for (const s of servers) {
      await waitFor(`cluster_state:ok on ${s.port}`, async () => {
        const info = await rawCommand(s.port, 'CLUSTER INFO');
        return info?.includes('cluster_state:ok') ?? false;
      });
      await waitFor(`replica ${s.port} in sync`, async () => {
        const info = (await rawCommand(s.port, 'INFO replication')) ?? '';
        return !info.includes('role:slave') || info.includes('master_link_status:up');
      });
    }
  } catch (err) {
    await Promise.all(servers.map((s) => s.stop()));
    throw err;
  }
  return {
    nodes: servers.map((s) => ({ host: s.host, port: s.port })),
    servers,
    stop: async () => {
      await Promise.all(servers.map((s) => s.stop()));
    },
  };
}

/**
 * A TCP link from one process to a Redis server, to shape when that process gets Redis back
 * after an outage. While held, connections are accepted and their bytes wait (the client sees
 * a connection that does not answer yet, as behind a stalled network); once open, each waiting
 * connection is joined to the server, bytes in order. A connection whose server side ends
 * (the server was killed) is ended too, so the client reconnects, into the link.
 */
export interface RedisLink {
  readonly url: string;
  /** New connections wait from now on (bytes kept) until {@link open}. */
  hold(): void;
  /**
   * A network that stops answering: bytes on every open connection wait (kept, in order) in both
   * directions, and new connections wait, until {@link open}. Nothing is closed, so the client
   * sees no error, only silence.
   */
  stall(): void;
  /** Joins every waiting connection to the server, and every new one at once; ends a stall. */
  open(): void;
  close(): Promise<void>;
}

export async function startRedisLink(server: { host: string; port: number }): Promise<RedisLink> {
  let held = false;
  const waiting: (() => void)[] = [];
  const sockets = new Set<Socket>();
  const pairs = new Set<[Socket, Socket]>();
  const join = ([a, b]: [Socket, Socket]) => {
    a.pipe(b);
    b.pipe(a);
  };
  const proxy = createServer((client) => {
    sockets.add(client);
    client.once('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    const attach = () => {
      if (client.destroyed) return;
      const upstream = connect(server.port, server.host);
      sockets.add(upstream);
      upstream.once('close', () => {
        sockets.delete(upstream);
        client.destroy();
      });
      upstream.on('error', () => upstream.destroy());
      client.once('close', () => upstream.destroy());
      const pair: [Socket, Socket] = [client, upstream];
      pairs.add(pair);
      client.once('close', () => pairs.delete(pair));
      join(pair);
    };
    if (held) waiting.push(attach);
    else attach();
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const port = (proxy.address() as { port: number }).port;
  return {
    url: `redis://127.0.0.1:${port}`,
    hold: () => {
      held = true;
    },
    stall: () => {
      held = true;
      for (const [a, b] of pairs) {
        a.unpipe(b);
        b.unpipe(a);
        a.pause();
        b.pause();
      }
    },
    open: () => {
      held = false;
      for (const pair of pairs) {
        if (pair[0].isPaused()) join(pair);
      }
      for (const attach of waiting.splice(0)) attach();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => proxy.close(() => r()));
    },
  };
}
export * from './embedded';
