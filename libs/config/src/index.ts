import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';

import { ProfilesError } from './profiles';

export * from './profiles';
export * from './build-output';

/**
 * Every setting of Baton is an environment variable, declared here once with its default and its
 * meaning. Each process validates the settings it uses at start and refuses to run, with one
 * line per bad value, rather than run with a surprise. The configuration table of docs/configuration.md is
 * checked against these declarations by a test.
 */

/** The rules of an int setting's value as code gives it (a number, never a string). */
const STRICT = new WeakMap<z.ZodType, z.ZodType>();
const int = (min: number, max: number) => {
  const env = z.coerce.number().int().min(min).max(max);
  STRICT.set(env, z.number().int().min(min).max(max));
  return env;
};
/** The schema of a setting's value given by code: an env schema without its coercion. */
type Strict<S extends z.ZodType> = S extends z.ZodCoercedNumber ? z.ZodNumber : S;
const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const redisUrl = z
  .string()
  .refine(
    (v) => /^(rediss?(\+cluster)?|unix):\/\//.test(v),
    'must be a redis://, rediss://, redis+cluster:// or unix:// URL',
  );

/**
 * One documented setting: the schema of its value in the environment, the same value's rules as
 * code gives it (a library's options), its default and what it means.
 */
export interface Setting<S extends z.ZodType = z.ZodType> {
  schema: S;
  value: Strict<S>;
  default: string | undefined;
  meaning: string;
}

function setting<S extends z.ZodType>(
  schema: S,
  def: string | undefined,
  meaning: string,
): Setting<S> {
  return { schema, value: (STRICT.get(schema) ?? schema) as Strict<S>, default: def, meaning };
}

/**
 * The same setting, not required: for a process that has a fallback of its own when it is unset
 * (the one-process run and the CLI use the local secret instead of BATON_JWT_SECRET).
 */
export function optional<S extends z.ZodType>(s: Setting<S>): Setting<z.ZodOptional<S>> {
  return {
    ...s,
    schema: s.schema.optional(),
    value: s.value.optional() as Strict<z.ZodOptional<S>>,
  };
}

/** Settings every process reads. */
export const COMMON = {
  REDIS_URL: setting(
    redisUrl,
    'redis://127.0.0.1:6379',
    'Redis to use (`rediss://` for TLS, `redis+cluster://` for a Cluster, `unix:///path` for a socket; user:password for ACL). The one-process run, when it is not set, starts its own redis-server on a unix socket in BATON_DATA_DIR',
  ),
  BATON_PREFIX: setting(
    z.string().regex(/^[A-Za-z0-9_.-]{1,50}$/, 'letters, digits, _ . - only'),
    'baton',
    'Prefix of every Redis key (one deployment per prefix)',
  ),
  BATON_SHARDS: setting(
    int(1, 16_384),
    '64',
    'Shards tasks are spread over; every process of a deployment must agree, chosen once',
  ),
  BATON_INSTANCE_ID: setting(
    z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,100}$/, 'letters, digits, _ . : - only')
      .optional(),
    undefined,
    'Name of this process in leases, writers and logs (default: role, host name and pid)',
  ),
  EXECUTION_START_TIMEOUT_MS: setting(
    int(1_000, 7 * 86_400_000),
    '600000',
    'An execution no worker has started after this long fails (no_worker) and is never started (projector and worker must agree)',
  ),
  LOG_LEVEL: setting(
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    'info',
    'Structured (JSON) log level (the one-process run logs warnings only unless it is set)',
  ),
} satisfies Record<string, Setting>;

export const PROJECTOR = {
  PROJECTOR_LEASE_TTL_MS: setting(
    int(200, 600_000),
    '2000',
    'Shard lease time: a dead projector’s shards are taken over after at most this long',
  ),
  PROJECTOR_RENEW_MS: setting(
    int(50, 300_000),
    '500',
    'How often a projector renews its shard leases and balances',
  ),
  PROJECTOR_SNAPSHOT_ENTRIES: setting(
    int(1, 10_000_000),
    '1000',
    'Snapshot a task after this many new entries',
  ),
  PROJECTOR_SNAPSHOT_MS: setting(
    int(100, 86_400_000),
    '30000',
    'Snapshot a task with new entries after this long',
  ),
  PROJECTOR_RETENTION_MS: setting(
    int(0, 365 * 86_400_000),
    '86400000',
    "How long a task's history is kept: its checkpoints and history spans, and its stream's entries behind the snapshot unless PROJECTOR_HOT_WINDOW_MS is shorter (0: trimmed up to the snapshot)",
  ),
  PROJECTOR_HOT_WINDOW_MS: setting(
    int(0, 365 * 86_400_000),
    '1800000',
    'How long raw task-stream entries and transcript deltas are kept; older entries are answered by the history spans (kept for PROJECTOR_RETENTION_MS), older transcript kept as whole items (0, or not below the retention: all kept raw)',
  ),
  PROJECTOR_STALL_MS: setting(
    int(100, 86_400_000),
    '120000',
    'A running prompt with no agent event for this long is reported stalled (and fails if nothing came at all)',
  ),
  PROJECTOR_CANCEL_GRACE_MS: setting(
    int(100, 86_400_000),
    '30000',
    'A cancel the agent has not answered after this long ends the turn (cancel_timeout) and stops the execution',
  ),
  PROJECTOR_PERMISSION_TIMEOUT_MS: setting(
    int(100, 7 * 86_400_000),
    '600000',
    'A permission request under the `ask` policy that nobody answered after this long is denied',
  ),
  PROJECTOR_PARK_IDLE_MS: setting(
    int(0, 30 * 86_400_000),
    '1800000',
    'An execution whose session has been idle this long is parked: the agent is closed, its slot freed, its ACP session kept for the next prompt (0: never)',
  ),
  PROJECTOR_QUIET_MS: setting(
    int(100, 86_400_000),
    '30000',
    'Agent output outside any turn is shown as generating until it has been quiet this long',
  ),
  PROJECTOR_EVICT_IDLE_MS: setting(
    int(0, 30 * 86_400_000),
    '600000',
    'A task with nothing going on (no live execution, turn, queued prompt, request or timer) and no new entry for this long leaves the projector’s memory once its snapshot is current; its next entry loads it again (0: never)',
  ),
  PROJECTOR_RECONCILE_MS: setting(
    int(100, 3_600_000),
    '30000',
    'How often each shard loads the tasks of its live set it does not hold (an append whose feed note went unread): the bound on such a task’s wait',
  ),
  PROJECTOR_MAX_SESSIONS_PER_TASK: setting(
    int(0, 100_000),
    '256',
    'Sessions with work (a queued prompt, a turn, a live or requested execution) one task may have; a prompt that would add one is rejected (`too_many_sessions`); 0: no bound',
  ),
  PROJECTOR_MAX_QUEUED_BYTES_PER_SESSION: setting(
    int(0, 1_073_741_824),
    '1048576',
    'Bytes of prompt text (UTF-8) queued on one session; a prompt that would pass it is rejected (`queue_bytes`); 0: no bound',
  ),
  PROJECTOR_MAX_QUEUED_BYTES_PER_TASK: setting(
    int(0, 1_073_741_824),
    '8388608',
    'Bytes of prompt text (UTF-8) queued on all the sessions of one task: what its view carries to every subscriber; a prompt that would pass it is rejected (`queue_bytes`); 0: no bound',
  ),
  PROJECTOR_METRICS_PORT: setting(
    int(0, 65_535),
    '9464',
    'Port of the projector’s /healthz and /metrics (0: pick a free one; off in the one-process run)',
  ),
  PROJECTOR_SHUTDOWN_TIMEOUT_MS: setting(
    int(100, 600_000),
    '8000',
    'A stop (SIGTERM, SIGINT) still unfinished after this long, e.g. with Redis unreachable, exits anyway (code 1); its leases lapse. Keep it under the orchestrator’s grace period',
  ),
} satisfies Record<string, Setting>;

export const WORKER = {
  WORKER_CONCURRENCY: setting(int(1, 10_000), '4', 'Agent executions one worker hosts at once'),
  WORKER_EXECUTION_LEASE_MS: setting(
    int(200, 600_000),
    '3000',
    'Execution lease time: executions of a dead worker are declared lost after at most this long',
  ),
  WORKER_RECORDINGS_DIR: setting(
    z.string().min(1).optional(),
    undefined,
    'Folder of replay recordings an execution may name (default: the bundled recordings)',
  ),
  WORKER_WORKSPACE_ROOT: setting(
    z.string().min(1).optional(),
    undefined,
    'Root of the agents’ workspaces, a folder per tenant (default: baton-workspaces in the OS temp folder)',
  ),
  WORKER_METRICS_PORT: setting(
    int(0, 65_535),
    '9465',
    'Port of the worker’s /healthz and /metrics (0: pick a free one; off in the one-process run)',
  ),
  WORKER_COALESCE_MS: setting(
    int(0, 10_000),
    '250',
    'Foreground output is reported at most once per this period per session',
  ),
  WORKER_FACT_BUFFER: setting(
    int(10, 10_000_000),
    '10000',
    'Facts one execution keeps, in order, while Redis is unreachable; past it the agent is stopped (nothing is dropped)',
  ),
  WORKER_SETUP_TIMEOUT_MS: setting(
    int(100, 600_000),
    '30000',
    'An agent that has not finished its ACP session setup (initialize, session/new) by then ends as failed',
  ),
  WORKER_SHUTDOWN_TIMEOUT_MS: setting(
    int(100, 600_000),
    '25000',
    'A stop (SIGTERM, SIGINT) still unfinished after this long, e.g. with Redis unreachable, exits anyway (code 1), its agents killed; its executions are declared lost once their leases lapse. Keep it under the orchestrator’s grace period',
  ),
} satisfies Record<string, Setting>;

/** The agent profiles (./profiles.ts), read by workers and gateways; both validated at start. */
export const PROFILES = {
  BATON_PROFILES_FILE: setting(
    z.string().min(1).optional(),
    undefined,
    'JSON file of the agent profiles executions may start (default: the built-in `replay`, `claude`)',
  ),
  BATON_PROFILES: setting(
    z.string().min(1).optional(),
    undefined,
    'The same JSON inline, instead of a file (set one of the two)',
  ),
} satisfies Record<string, Setting>;

export const GATEWAY = {
  GATEWAY_HOST: setting(
    z.string().min(1),
    '127.0.0.1',
    'Address the gateway listens on (0.0.0.0 in containers)',
  ),
  GATEWAY_PORT: setting(
    int(0, 65_535),
    '8080',
    'Port of the gateway (WebSocket, AHP channel, REST, page)',
  ),
  BATON_JWT_SECRET: setting(
    z
      .string({ error: 'required by the gateway (at least 32 characters)' })
      .min(32, 'must be at least 32 characters'),
    undefined,
    'HS256 secret that signs client tokens; required by the gateway (the one-process run makes one and prints a token)',
  ),
  BATON_JWT_ISSUER: setting(
    z.string().min(1).optional(),
    undefined,
    'Required `iss` of client tokens, if set',
  ),
  GATEWAY_ADMISSION_WAIT_MS: setting(
    int(0, 60_000),
    '2000',
    'How long a prompt reply waits for its decision before it answers "pending"',
  ),
  GATEWAY_STORE_TIMEOUT_MS: setting(
    int(100, 60_000),
    '2000',
    'How long a client request waits for Redis before it answers `unavailable` (retryable; clients retry with their idempotency keys), also through an outage',
  ),
  GATEWAY_ACK_REPLICAS: setting(
    int(0, 16),
    '0',
    "Replicas that must have a client command (Redis WAIT, for half of GATEWAY_STORE_TIMEOUT_MS) before it is acknowledged; 0: the master's reply. With replicas, set it to 1 so that a failover never loses an acknowledged prompt",
  ),
  GATEWAY_MAX_MESSAGE_BYTES: setting(
    int(1_024, 16_777_216),
    '262144',
    'Largest client WebSocket message',
  ),
  GATEWAY_MAX_SUBSCRIPTIONS: setting(int(1, 100_000), '100', 'Subscriptions per connection'),
  GATEWAY_MAX_CONNECTIONS_PER_TENANT: setting(
    int(1, 10_000_000),
    '1000',
    'WebSocket connections (/ws and /ahp together) one tenant may hold open on one gateway',
  ),
  GATEWAY_MAX_SUBSCRIPTIONS_PER_TENANT: setting(
    int(1, 100_000_000),
    '10000',
    'Subscriptions (both endpoints, all connections) one tenant may hold on one gateway',
  ),
  GATEWAY_MAX_MESSAGES_PER_SECOND: setting(
    int(1, 1_000_000),
    '50',
    'Messages per second per connection',
  ),
  GATEWAY_MAX_REQUESTS_PER_SECOND: setting(
    int(1, 1_000_000),
    '100',
    'REST requests per second per tenant on one gateway (bursts of twice as many); over it, 429',
  ),
  GATEWAY_MAX_BUFFERED_BYTES: setting(
    int(1_024, 1_073_741_824),
    '4194304',
    'Unsent bytes a connection may hold; past it, no updates until it drains, then a resync (closed 4008 if it does not drain)',
  ),
  GATEWAY_VIEW_CACHE_BYTES: setting(
    int(0, 4_294_967_296),
    '67108864',
    'Memory for task views serialized once per version and shared by every subscriber (0: no cache)',
  ),
  GATEWAY_CACHE_IDLE_MS: setting(
    int(0, 30 * 86_400_000),
    '600000',
    'A task’s cached view and tenancy that no request or subscription used for this long are dropped (read again from Redis when next asked for); 0: kept until their bounds push them out',
  ),
  GATEWAY_TAIL_LINGER_MS: setting(
    int(0, 3_600_000),
    '2000',
    'How long a gateway still reads a shard’s update stream after the last of its clients’ watchers of that shard left (a client that comes back finds it read)',
  ),
  GATEWAY_HEARTBEAT_MS: setting(
    int(100, 600_000),
    '15000',
    'Ping interval; a connection silent for two intervals is closed',
  ),
  GATEWAY_IDLE_TIMEOUT_MS: setting(
    int(0, 86_400_000),
    '300000',
    'A connection with no subscription that sends nothing for this long is closed (0: never)',
  ),
  GATEWAY_MAX_STORED_BYTES_PER_TENANT: setting(
    int(0, Number.MAX_SAFE_INTEGER),
    '1073741824',
    'Bytes of commands (prompts above all) one tenant’s clients may append over GATEWAY_STORED_WINDOW_MS, every gateway and surface together: what its task streams keep; past it, appends are refused (`rate_limited`, 429); 0: no quota',
  ),
  GATEWAY_STORED_WINDOW_MS: setting(
    int(60_000, 30 * 86_400_000),
    '86400000',
    'The window GATEWAY_MAX_STORED_BYTES_PER_TENANT counts over: set it to PROJECTOR_RETENTION_MS (or more), what streams keep behind their snapshots',
  ),
  GATEWAY_HEADERS_TIMEOUT_MS: setting(
    int(1_000, 300_000),
    '10000',
    'An HTTP request or WebSocket upgrade whose headers have not all arrived after this long is answered 408 and closed',
  ),
  GATEWAY_SHUTDOWN_TIMEOUT_MS: setting(
    int(100, 600_000),
    '15000',
    'A stop (SIGTERM, SIGINT) still unfinished after this long, e.g. with Redis unreachable, exits anyway (code 1). Keep it under the orchestrator’s grace period',
  ),
} satisfies Record<string, Setting>;

export const RUN = {
  BATON_DATA_DIR: setting(
    z.string().min(1),
    '.baton',
    'Where the one-process run keeps the data of the redis-server it starts',
  ),
  BATON_DEMO: setting(
    bool,
    'false',
    'The one-process run starts replay executions of bundled recordings',
  ),
} satisfies Record<string, Setting>;

export const CLI = {
  BATON_GATEWAY_URL: setting(
    z.string().regex(/^https?:\/\//, 'must be an http:// or https:// URL'),
    'http://127.0.0.1:8080',
    'The gateway the CLI talks to',
  ),
  BATON_TOKEN: setting(
    z.string().min(1).optional(),
    undefined,
    'The CLI’s client token (default: the one the one-process run saved in BATON_DATA_DIR)',
  ),
} satisfies Record<string, Setting>;

/** Every setting, by group, for the documentation. */
export const SETTINGS = { COMMON, PROJECTOR, WORKER, PROFILES, GATEWAY, RUN, CLI } as const;

type Group = Record<string, Setting>;
type ValueOf<S extends Setting> = z.infer<S['schema']>;
export type ConfigOf<G extends Group> = { [K in keyof G]: ValueOf<G[K]> };

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Reads the settings of `group` (merge groups with spread) from `env`, defaults applied. Throws
 * {@link ConfigError} naming every bad variable, its value and the rule it breaks.
 */
export function loadConfig<G extends Group>(
  group: G,
  env: Readonly<Record<string, string | undefined>> = process.env,
): ConfigOf<G> {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, s] of Object.entries(group)) {
    const raw = env[name] === '' ? undefined : env[name];
    const r = s.schema.safeParse(raw ?? s.default);
    if (r.success) out[name] = r.data;
    else {
      const rule = r.error.issues.map((i) => i.message).join('; ');
      problems.push(`${name}=${JSON.stringify(raw ?? s.default ?? '')}: ${rule}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return out as ConfigOf<G>;
}

/**
 * A service process's settings, read by `read` at its start: a bad one is printed, a line each,
 * and the process exits 2 (refused, not crashed) rather than run with a surprise.
 */
export function settingsOrExit<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    if (err instanceof ProfilesError) {
      process.stderr.write(`invalid configuration: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

/** A library option's schema from its setting: the value's rules, its default, its meaning. */
export type OptionSchema<S extends Setting> =
  undefined extends ValueOf<S> ? S['value'] : z.ZodDefault<S['value']>;

/**
 * The option of a library that a setting configures, with one source for both: the value's
 * rules (as code gives it, no coercion), the setting's default and its meaning as description.
 */
export function option<S extends Setting>(s: S): OptionSchema<S> {
  const value = s.default === undefined ? s.value : s.value.default(s.schema.parse(s.default));
  return value.describe(s.meaning) as never;
}

/**
 * Options of a library named by the settings they are (`names`: option → setting): their schemas
 * from the settings' declarations ({@link option}).
 */
export function optionSchemas<G extends Group, M extends Record<string, keyof G & string>>(
  group: G,
  names: M,
): { [K in keyof M]: OptionSchema<G[M[K]]> } {
  const out: Record<string, z.ZodType> = {};
  for (const [opt, name] of Object.entries(names)) out[opt] = option(group[name]!);
  return out as never;
}

/** The same options' values from a process's loaded settings (`names` as for optionSchemas). */
export function optionValues<C, M extends Record<string, keyof C & string>>(
  config: C,
  names: M,
): { [K in keyof M]: C[M[K]] } {
  const out: Record<string, unknown> = {};
  for (const [opt, name] of Object.entries(names)) out[opt] = config[name];
  return out as never;
}

/** The options every process has that are settings every process reads. */
const PROCESS_SETTING_OF = { prefix: 'BATON_PREFIX', shards: 'BATON_SHARDS' } as const;

/**
 * The options every process (projector, worker) has: its Redis, its name, its keys and shards,
 * and a log level that stays quiet in-process (a process of its own passes LOG_LEVEL's value).
 */
export const processOptionSchemas = {
  redisUrl: COMMON.REDIS_URL.value,
  instanceId: COMMON.BATON_INSTANCE_ID.value,
  ...optionSchemas(COMMON, PROCESS_SETTING_OF),
  logLevel: COMMON.LOG_LEVEL.value.default('warn'),
};

/** The same options' values from a process's loaded settings. */
export function processOptionValues(config: ConfigOf<typeof COMMON>) {
  return {
    redisUrl: config.REDIS_URL,
    ...(config.BATON_INSTANCE_ID !== undefined ? { instanceId: config.BATON_INSTANCE_ID } : {}),
    ...optionValues(config, PROCESS_SETTING_OF),
    logLevel: config.LOG_LEVEL,
  };
}

/** The settings a projector process reads. */
export const PROJECTOR_SETTINGS = { ...COMMON, ...PROJECTOR };
export type ProjectorConfig = ConfigOf<typeof PROJECTOR_SETTINGS>;
/** The settings a worker process reads (the agent profiles are read apart: loadProfiles). */
export const WORKER_SETTINGS = { ...COMMON, ...WORKER };
export type WorkerConfig = ConfigOf<typeof WORKER_SETTINGS>;

/**
 * The options of a service process (projector, worker) that are its settings (`settings`, those
 * every process reads among them), by the setting each one is: the one place an option meets its
 * environment variable. Those every process has, the service's own (`settingOf`: option →
 * setting) and its periods in ms (`periodSettingOf`: the options under `periods`): their schemas,
 * with each setting's rules, default and meaning, and their values from the loaded settings.
 */
export function serviceOptions<
  G extends typeof COMMON,
  M extends Record<string, keyof G & string>,
  P extends Record<string, keyof G & string>,
>(settings: G, settingOf: M, periodSettingOf: P) {
  return {
    schemas: { ...processOptionSchemas, ...optionSchemas(settings, settingOf) },
    periods: optionSchemas(settings, periodSettingOf),
    values: (config: ConfigOf<G>) => ({
      ...processOptionValues(config),
      ...optionValues(config, settingOf),
      periods: optionValues(config, periodSettingOf),
    }),
  };
}

/** A /metrics port option from its setting: in-process (the default) no port is served. */
export function metricsPortOption(s: Setting<z.ZodCoercedNumber>) {
  return s.value.nullable().default(null);
}

/**
 * A library's options parsed against their schema, every bad option named in one error; a
 * process not given a name gets one unique to this start (leases and writers name it).
 */
export function parseOptions<S extends z.ZodType<{ instanceId?: string | undefined }>>(
  schema: S,
  input: unknown,
  role: string,
  OptionsError: new (message: string) => Error,
): z.output<S> & { instanceId: string } {
  const r = schema.safeParse(input);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `  ${i.path.join('.') || '(options)'}: ${i.message}`);
    throw new OptionsError(`invalid ${role} options:\n${lines.join('\n')}`);
  }
  return { ...r.data, instanceId: r.data.instanceId ?? defaultInstanceId(role) };
}

/** The configuration table of docs/configuration.md, as Markdown. */
export function settingsTable(): string {
  const rows = ['| Variable | Default | Meaning |', '|---|---|---|'];
  for (const group of Object.values(SETTINGS)) {
    for (const [name, s] of Object.entries(group as Group)) {
      rows.push(
        `| \`${name}\` | ${s.default === undefined ? '—' : `\`${s.default}\``} | ${s.meaning} |`,
      );
    }
  }
  return rows.join('\n');
}

/**
 * The default name of a process in leases, writer envelopes and logs: role, host and pid, and a
 * random suffix, so a restarted process never reuses its predecessor's name.
 */
export function defaultInstanceId(role: string): string {
  const host = hostname()
    .replace(/[^A-Za-z0-9_.-]/g, '-')
    .slice(0, 40);
  return `${role}-${host}-${process.pid}-${randomBytes(3).toString('hex')}`;
}
