import { backoffDelay } from '@baton/backoff';
import { Cluster, Redis, type ClusterNode, type RedisOptions } from 'ioredis';
import { restoreFastStringPrototype } from './fast-strings';

// Right after ioredis is loaded: it leaves String.prototype slow (fast-strings.ts).
restoreFastStringPrototype();

export type RedisClient = Redis | Cluster;

export interface RedisNode {
  host: string;
  port: number;
}

/** Where Redis is: one server by URL, or a Redis Cluster by seed nodes. */
export type RedisTarget =
  | { url: string }
  | {
      cluster: RedisNode[];
      username?: string;
      password?: string;
      /** TLS to every node (rediss). */
      tls?: boolean;
    };

export interface ConnectOptions {
  /** Commands queued while disconnected fail after this many reconnect attempts (default 20). */
  maxRetriesPerRequest?: number | null;
  /** Upper bound of the reconnect backoff in ms (default 2000). */
  maxReconnectDelayMs?: number;
  connectionName?: string;
  /**
   * A command not answered within this many ms fails with "Command timed out", also while it waits
   * in the offline queue during an outage. Unset: commands wait for Redis to come back (workers
   * and projectors, whose work resumes by itself); a gateway sets it so that no client request
   * blocks for the length of an outage. Blocking tail reads run on their own connections, without it.
   */
  commandTimeoutMs?: number;
  /** Told once when Redis (or one Cluster node) becomes unreachable, and once when it is back. */
  onAvailability?: (change: AvailabilityChange) => void;
}

/** Redis (`node` unset) or one Cluster node went away, or came back after `downForMs`. */
export type AvailabilityChange =
  | { available: false; node?: string; reason: string }
  | { available: true; node?: string; downForMs: number };

/**
 * Options for ioredis from a `redis://`, `rediss://` or `unix://` URL:
 * `rediss://user:password@host:port/db`. User and password are ACL credentials (percent-decoded);
 * `rediss` turns on TLS with the host as SNI server name; `unix:///path/redis.sock` is a server's
 * unix socket (the one-process run's own server listens on nothing else).
 */
export function parseRedisUrl(url: string): RedisOptions {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`REDIS_URL is not a URL: ${redact(url)}`);
  }
  if (u.protocol === 'unix:') {
    if (!u.pathname || u.pathname === '/') throw new Error('REDIS_URL unix:// needs a socket path');
    return { path: decodeURIComponent(u.pathname) };
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
    throw new Error(
      `REDIS_URL must start with redis://, rediss:// or unix://, got ${u.protocol}//`,
    );
  }
  const options: RedisOptions = {
    host: u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1',
    port: u.port ? Number(u.port) : 6379,
  };
  if (u.username) options.username = decodeURIComponent(u.username);
  if (u.password) options.password = decodeURIComponent(u.password);
  const db = u.pathname.replace(/^\//, '');
  if (db) {
    if (!/^\d+$/.test(db)) throw new Error(`REDIS_URL database must be a number, got ${db}`);
    options.db = Number(db);
  }
  if (u.protocol === 'rediss:') options.tls = { servername: options.host };
  return options;
}

/** The URL with its credentials hidden, for logs and errors. */
export function redact(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}

function backoff(maxDelayMs: number) {
  // Never give up: a Redis restart or failover must not need a restart of Baton's processes.
  return (times: number) =>
    backoffDelay(times, { initialMs: 50, maxMs: maxDelayMs, jitter: false });
}

/** The one way Baton connects to Redis: a reconnecting client for a server or a Cluster. */
export function connectRedis(target: RedisTarget, options: ConnectOptions = {}): RedisClient {
  const maxDelay = options.maxReconnectDelayMs ?? 2000;
  const common: RedisOptions = {
    maxRetriesPerRequest:
      options.maxRetriesPerRequest === undefined ? 20 : options.maxRetriesPerRequest,
    // No auto-pipelining: ioredis keeps one auto-pipeline in flight per connection and queues
    // every later command behind its reply (stop-and-wait), which put ~3 ms on each projector
    // round trip under load (BENCHMARKS.md, end to end). Plain commands are pipelined on the
    // connection anyway: each is written at once, replies come back in order.
    enableAutoPipelining: false,
    ...(options.connectionName ? { connectionName: options.connectionName } : {}),
  };
  if (options.commandTimeoutMs !== undefined) {
    common.commandTimeout = options.commandTimeoutMs;
    // A network that stops answering raises no error by itself: a connection silent that long
    // with commands pending is dropped and made again, which is how the outage gets noticed.
    common.socketTimeout = options.commandTimeoutMs;
  }
  const report = options.onAvailability ?? (() => undefined);
  if ('url' in target) {
    const client = new Redis({
      ...parseRedisUrl(target.url),
      ...common,
      retryStrategy: backoff(maxDelay),
    });
    watchServer(client, report);
    return client;
  }
  if (target.cluster.length === 0) throw new Error('a Redis Cluster needs at least one seed node');
  const nodes: ClusterNode[] = target.cluster.map((n) => ({ host: n.host, port: n.port }));
  const cluster = new Cluster(nodes, {
    clusterRetryStrategy: backoff(maxDelay),
    enableAutoPipelining: false,
    // After a failover, a client that keeps sending a dead master's slots to it never hears a
    // MOVED: the slot map is read again every second, so a promoted replica is found by itself.
    slotsRefreshInterval: 1_000,
    redisOptions: {
      maxRetriesPerRequest: common.maxRetriesPerRequest,
      ...(options.commandTimeoutMs !== undefined
        ? { commandTimeout: options.commandTimeoutMs, socketTimeout: options.commandTimeoutMs }
        : {}),
      ...(target.username ? { username: target.username } : {}),
      ...(target.password ? { password: target.password } : {}),
      ...(target.tls ? { tls: {} } : {}),
      ...(options.connectionName ? { connectionName: options.connectionName } : {}),
    },
  });
  watchCluster(cluster, report);
  return cluster;
}

/**
 * A second connection to the same Redis for blocking reads: no command or socket timeout (a
 * blocking XREAD waits longer than any request should) and errors left to the first connection
 * to report.
 */
export function duplicateForBlocking(client: RedisClient): RedisClient {
  const conn = isCluster(client)
    ? client.duplicate([], {
        redisOptions: {
          ...client.options.redisOptions,
          commandTimeout: undefined,
          socketTimeout: undefined,
        },
      })
    : client.duplicate({ commandTimeout: undefined, socketTimeout: undefined });
  conn.on('error', () => undefined);
  return conn;
}

/**
 * One report when the server (or the Cluster as a whole) becomes unreachable, one when it is
 * back: never a line per retry. Listening to 'error' also keeps ioredis from printing each failed
 * reconnect as unhandled.
 */
function watchServer(client: Redis | Cluster, report: (c: AvailabilityChange) => void): void {
  let downSince: number | undefined;
  const down = (reason: string) => {
    if (downSince !== undefined) return;
    downSince = Date.now();
    report({ available: false, reason });
  };
  client.on('error', (err: Error) => down(err.message));
  // A connection that drops without an error (the server went away cleanly, or a network
  // stalled) says so only by reconnecting.
  client.on('reconnecting', () => down('connection lost'));
  client.on('ready', () => {
    if (downSince === undefined) return;
    report({ available: true, downForMs: Date.now() - downSince });
    downSince = undefined;
  });
}

/** As {@link watchServer}, for the Cluster as a whole and for each of its nodes. */
function watchCluster(cluster: Cluster, report: (c: AvailabilityChange) => void): void {
  watchServer(cluster, report);
  const nodesDown = new Map<string, number>();
  cluster.on('node error', (err: Error, node: string) => {
    if (nodesDown.has(node)) return;
    nodesDown.set(node, Date.now());
    report({ available: false, node, reason: err.message });
  });
  cluster.on('+node', (redis: Redis) => {
    const node = `${redis.options.host}:${redis.options.port}`;
    redis.once('ready', () => {
      const since = nodesDown.get(node);
      if (since === undefined) return;
      nodesDown.delete(node);
      report({ available: true, node, downForMs: Date.now() - since });
    });
  });
}

export function isCluster(client: RedisClient): client is Cluster {
  return client instanceof Cluster;
}

/**
 * The target a REDIS_URL names: `redis://` or `rediss://` for one server, and
 * `redis+cluster://[user:password@]host:port,host:port` (or `rediss+cluster://`) for a Cluster by
 * its seed nodes.
 */
export function redisTargetFromUrl(url: string): RedisTarget {
  const m = /^(rediss?)\+cluster:\/\/(?:([^@/]*)@)?([^/?#]+)\/?$/.exec(url);
  if (!m) return { url };
  const [, scheme, auth, hosts] = m;
  const cluster = hosts!.split(',').map((hp) => {
    const i = hp.lastIndexOf(':');
    const host = (i > 0 ? hp.slice(0, i) : hp).replace(/^\[|\]$/g, '');
    const port = i > 0 ? Number(hp.slice(i + 1)) : 6379;
    if (!host || !Number.isInteger(port) || port < 1 || port > 65_535) {
      throw new Error(`REDIS_URL has a bad cluster node: ${hp}`);
    }
    return { host, port };
  });
  const target: RedisTarget = { cluster, ...(scheme === 'rediss' ? { tls: true } : {}) };
  if (auth) {
    const [user, password] = auth.includes(':') ? auth.split(/:(.*)/s) : ['', auth];
    if (user) target.username = decodeURIComponent(user);
    if (password) target.password = decodeURIComponent(password);
  }
  return target;
}

/** The `unix://` URL of a unix socket at `path` (absolute). */
export const unixSocketUrl = (path: string): string => `unix://${encodeURI(path)}`;

/** The part of a pino logger that {@link logAvailability} writes to. */
export interface AvailabilityLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/** The one line each way an outage gets in a process's log. */
export function logAvailability(log: AvailabilityLog): (change: AvailabilityChange) => void {
  return (c) => {
    const where = c.node ? `redis node ${c.node}` : 'redis';
    if (c.available) log.info({ node: c.node, downForMs: c.downForMs }, `${where} is back`);
    else log.warn({ node: c.node, reason: c.reason }, `${where} is unreachable; retrying`);
  };
}
