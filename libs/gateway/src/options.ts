import { COMMON, GATEWAY, loadConfig, optional, type ConfigOf, type Profiles } from '@baton/config';
import type { EventStoreOptions } from '@baton/store';

/** Everything a gateway process needs; {@link startGateway} fills in the defaults. */
export interface GatewayOptions {
  redisUrl: string;
  prefix?: string;
  shards?: number;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  jwtSecret: string;
  jwtIssuer?: string;
  /** Name of this process in logs; the writer instance adds a per-start suffix to it. */
  instanceId?: string;
  admissionWaitMs?: number;
  /** A request whose Redis command is not answered within this answers `unavailable`. */
  storeTimeoutMs?: number;
  /** Replicas that must have a client's command before it is acknowledged (WAIT). */
  ackReplicas?: number;
  maxMessageBytes?: number;
  maxSubscriptions?: number;
  /** WebSocket connections one tenant may hold open on this gateway (both endpoints). */
  maxConnectionsPerTenant?: number;
  /** Subscriptions one tenant may hold on this gateway (every connection, both endpoints). */
  maxSubscriptionsPerTenant?: number;
  /** Bytes of serialized task views kept to share among subscribers; 0: none. */
  viewCacheBytes?: number;
  /** A task's cached view and tenancy not used for this long are dropped; 0: kept to their bounds. */
  cacheIdleMs?: number;
  /** How long a shard nobody watches any more is still tailed (GATEWAY_TAIL_LINGER_MS). */
  tailLingerMs?: number;
  maxMessagesPerSecond?: number;
  /** REST requests per second per tenant (bursts of twice as many). */
  maxRequestsPerSecond?: number;
  maxBufferedBytes?: number;
  heartbeatMs?: number;
  /** A connection with no subscription that sends nothing for this long is closed; 0: never. */
  idleTimeoutMs?: number;
  /** Bytes a tenant's commands may append over storedWindowMs, all gateways together; 0: none. */
  maxStoredBytesPerTenant?: number;
  storedWindowMs?: number;
  /** A request or upgrade whose headers are not all in after this long gets 408 and is closed. */
  headersTimeoutMs?: number;
  /** The agent profiles executions may name (default: the built-in set of libs/config). */
  profiles?: Profiles;
  logLevel?: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Store tuning for tests and benchmarks (e.g. a small `updatesMaxLen`); not a public setting. */
  store?: Omit<EventStoreOptions, 'shards' | 'prefix'>;
}

export type ResolvedOptions = Required<Omit<GatewayOptions, 'jwtIssuer' | 'instanceId' | 'store'>> &
  Pick<GatewayOptions, 'jwtIssuer' | 'store'> & {
    instanceId: string;
    /** Unique per process start: the writer instance of every command this gateway appends. */
    writerInstance: string;
    /** Frames above this close the connection (1009); between maxMessageBytes and it, an error. */
    hardMaxMessageBytes: number;
  };

/** The settings' defaults (libs/config), as an unset environment gives them. */
const SETTINGS_DEFAULTS = loadConfig(
  { ...COMMON, ...GATEWAY, BATON_JWT_SECRET: optional(GATEWAY.BATON_JWT_SECRET) },
  {},
);

/** What {@link startGateway} uses for an option not given: the default of its setting. */
export const DEFAULTS = {
  prefix: SETTINGS_DEFAULTS.BATON_PREFIX,
  shards: SETTINGS_DEFAULTS.BATON_SHARDS,
  host: SETTINGS_DEFAULTS.GATEWAY_HOST,
  port: SETTINGS_DEFAULTS.GATEWAY_PORT,
  ...gatewayLimits(SETTINGS_DEFAULTS),
  logLevel: SETTINGS_DEFAULTS.LOG_LEVEL,
};

/** Hard cap of a frame: ws closes the connection (1009) above it without buffering more. */
export function hardMaxMessageBytes(maxMessageBytes: number): number {
  return Math.min(maxMessageBytes * 4, 64 * 1024 * 1024);
}

// Dependency-injection tokens for the values the gateway's providers share: named explicitly,
// so a provider never depends on which type a compiler emitted for a constructor parameter.
export const OPTIONS = Symbol('GatewayOptions');
export const STORE = Symbol('EventStore');
export const LOGGER = Symbol('Logger');
export const SERVICES = Symbol('Services');

/** The gateway's limits and timings from its validated settings, for every process that runs one. */
export function gatewayLimits(
  config: Omit<ConfigOf<typeof GATEWAY>, 'BATON_JWT_SECRET'>,
): Required<
  Pick<
    GatewayOptions,
    | 'admissionWaitMs'
    | 'storeTimeoutMs'
    | 'ackReplicas'
    | 'maxMessageBytes'
    | 'maxSubscriptions'
    | 'maxConnectionsPerTenant'
    | 'maxSubscriptionsPerTenant'
    | 'viewCacheBytes'
    | 'cacheIdleMs'
    | 'tailLingerMs'
    | 'maxMessagesPerSecond'
    | 'maxRequestsPerSecond'
    | 'maxBufferedBytes'
    | 'heartbeatMs'
    | 'idleTimeoutMs'
    | 'headersTimeoutMs'
    | 'maxStoredBytesPerTenant'
    | 'storedWindowMs'
  >
> {
  return {
    admissionWaitMs: config.GATEWAY_ADMISSION_WAIT_MS,
    storeTimeoutMs: config.GATEWAY_STORE_TIMEOUT_MS,
    ackReplicas: config.GATEWAY_ACK_REPLICAS,
    maxMessageBytes: config.GATEWAY_MAX_MESSAGE_BYTES,
    maxSubscriptions: config.GATEWAY_MAX_SUBSCRIPTIONS,
    maxConnectionsPerTenant: config.GATEWAY_MAX_CONNECTIONS_PER_TENANT,
    maxSubscriptionsPerTenant: config.GATEWAY_MAX_SUBSCRIPTIONS_PER_TENANT,
    viewCacheBytes: config.GATEWAY_VIEW_CACHE_BYTES,
    cacheIdleMs: config.GATEWAY_CACHE_IDLE_MS,
    tailLingerMs: config.GATEWAY_TAIL_LINGER_MS,
    maxMessagesPerSecond: config.GATEWAY_MAX_MESSAGES_PER_SECOND,
    maxRequestsPerSecond: config.GATEWAY_MAX_REQUESTS_PER_SECOND,
    maxBufferedBytes: config.GATEWAY_MAX_BUFFERED_BYTES,
    heartbeatMs: config.GATEWAY_HEARTBEAT_MS,
    idleTimeoutMs: config.GATEWAY_IDLE_TIMEOUT_MS,
    headersTimeoutMs: config.GATEWAY_HEADERS_TIMEOUT_MS,
    maxStoredBytesPerTenant: config.GATEWAY_MAX_STORED_BYTES_PER_TENANT,
    storedWindowMs: config.GATEWAY_STORED_WINDOW_MS,
  };
}
