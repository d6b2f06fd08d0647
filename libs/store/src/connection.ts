import { Cluster, Redis, type ClusterNode, type RedisOptions } from 'ioredis';

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
}

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
  return (times: number) => Math.min(50 * 2 ** Math.min(times, 10), maxDelayMs);
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
  if ('url' in target) {
    return new Redis({ ...parseRedisUrl(target.url), ...common, retryStrategy: backoff(maxDelay) });
  }
  if (target.cluster.length === 0) throw new Error('a Redis Cluster needs at least one seed node');
  const nodes: ClusterNode[] = target.cluster.map((n) => ({ host: n.host, port: n.port }));
  return new Cluster(nodes, {
    clusterRetryStrategy: backoff(maxDelay),
    enableAutoPipelining: false,
    redisOptions: {
      maxRetriesPerRequest: common.maxRetriesPerRequest,
      ...(target.username ? { username: target.username } : {}),
      ...(target.password ? { password: target.password } : {}),
      ...(target.tls ? { tls: {} } : {}),
      ...(options.connectionName ? { connectionName: options.connectionName } : {}),
    },
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
