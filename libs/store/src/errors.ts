/** The lease at the writer's epoch is gone: another owner took the shard, or the lease expired. */
export class FencedError extends Error {
  override readonly name = 'FencedError';
}

/** The task stream moved past the id the writer expected: catch up and decide again. */
export class ConflictError extends Error {
  override readonly name = 'ConflictError';
  constructor(readonly actualLastId: string) {
    super(`task stream last id is ${actualLastId}`);
  }
}

/** An update seq beyond last published + 1: publishing it would leave clients a silent gap. */
export class GapError extends Error {
  override readonly name = 'GapError';
  constructor(
    readonly lastPublished: number,
    readonly seq: number,
  ) {
    super(`update seq ${seq} would leave a gap after ${lastPublished}`);
  }
}

/** A snapshot older than the stored one: snapshots never move back. */
export class StaleSnapshotError extends Error {
  override readonly name = 'StaleSnapshotError';
  constructor(readonly currentId: string) {
    super(`stored snapshot covers ${currentId}`);
  }
}

/**
 * The task stream ends before an id its writer folded: Redis lost acknowledged writes (a failover
 * to a replica that had not received them, a restart from an older dump). What was folded past
 * `lastId` is nowhere any more; the writer reloads from what Redis holds.
 */
export class StreamBehindError extends Error {
  override readonly name = 'StreamBehindError';
  constructor(readonly lastId: string) {
    super(`task stream ends at ${lastId}, before what was folded`);
  }
}

/** An entry failed validation on its way into Redis; nothing of its batch was written. */
export class InvalidEntryError extends Error {
  override readonly name = 'InvalidEntryError';
  constructor(
    readonly index: number,
    readonly reason: string,
  ) {
    super(`entry ${index} of the batch is invalid, nothing was appended: ${reason}`);
  }
}

/** Maps the error replies of the Lua scripts to typed errors; anything else is rethrown as is. */
export function mapScriptError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const m = err.message;
  if (m.startsWith('FENCED')) return new FencedError(m);
  if (m.startsWith('CONFLICT ')) return new ConflictError(m.slice('CONFLICT '.length).trim());
  if (m.startsWith('STALE ')) return new StaleSnapshotError(m.slice('STALE '.length).trim());
  if (m.startsWith('BEHIND ')) return new StreamBehindError(m.slice('BEHIND '.length).trim());
  const gap = /^GAP (\d+) (\d+)/.exec(m);
  if (gap) return new GapError(Number(gap[1]), Number(gap[2]));
  return err;
}

/**
 * Redis could not be reached or could not answer for now: the connection is down or closed, a
 * command timed out, a Cluster is failing over (redirections, MOVED/ASK loops, CLUSTERDOWN,
 * TRYAGAIN, a master down) or a server is loading its data. Such a failure is the world's, not a
 * bug: clients are told `unavailable` and retry (with their idempotency keys).
 */
export function isUnavailableError(err: unknown): boolean {
  if (typeof err === 'string') return UNAVAILABLE.test(err);
  if (!(err instanceof Error)) return false;
  if (err.name === 'MaxRetriesPerRequestError') return true;
  return UNAVAILABLE.test(err.message);
}

/** What {@link quietDuringOutages} needs of a pino logger. */
interface LevelledLogger {
  isLevelEnabled(level: string): boolean;
  debug(...args: unknown[]): void;
}

const DEBUG = 20;

/**
 * A pino `logMethod` hook: a record above debug whose `err` is only Redis being unavailable is
 * kept at debug. An outage is logged once when it starts and once when it ends (logAvailability);
 * every operation that fails meanwhile is routine, not a warning with a stack trace each.
 */
export function quietDuringOutages(
  this: LevelledLogger,
  args: unknown[],
  method: (...args: unknown[]) => void,
  level: number,
): void {
  const first = args[0];
  if (
    level > DEBUG &&
    typeof first === 'object' &&
    first !== null &&
    isUnavailableError((first as { err?: unknown }).err)
  ) {
    if (!this.isLevelEnabled('debug')) return;
    const { err, ...rest } = first as { err: unknown };
    this.debug({ ...rest, err: err instanceof Error ? err.message : err }, ...args.slice(1));
    return;
  }
  method.apply(this, args);
}

const UNAVAILABLE = new RegExp(
  [
    // ioredis' own: the connection, the offline queue, the command timeout, the Cluster client.
    'Connection is closed',
    // A command in flight when its connection closed (ioredis' AbortError): it may or may not
    // have run, which is what `unavailable` tells a client retrying under its idempotency key.
    'Command aborted due to connection close',
    "Stream isn't writeable",
    'MaxRetriesPerRequest',
    'Command timed out',
    'Socket timeout',
    'Too many Cluster redirections',
    "Cluster isn't ready",
    'None of startup nodes is available',
    'Failed to refresh slots cache',
    // The socket.
    'ECONNREFUSED',
    'ECONNRESET',
    'ETIMEDOUT',
    'EHOSTUNREACH',
    'ENETUNREACH',
    'EPIPE',
    'ENOENT', // a unix socket that is gone
    // Redis error replies that say "not now": loading, failover, redirection, no writable master.
    '^LOADING',
    '^CLUSTERDOWN',
    '^TRYAGAIN',
    '^MOVED',
    '^ASK',
    '^MASTERDOWN',
    '^READONLY',
    '^NOREPLICAS',
  ].join('|'),
);
