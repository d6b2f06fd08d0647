/**
 * The one retry delay of Baton: exponential from `initialMs`, doubling per attempt, capped at
 * `maxMs`; with jitter (the default) half of it is random. Every retry loop (Redis reconnects,
 * client reconnects, task steps, fact batches, subscriptions catching up) takes its delay here.
 * A core lib of its own, pure and without dependencies, so that every project may import it,
 * the client (which may import only the core) included.
 */
export interface BackoffOptions {
  /** Delay of attempt 0 (default 100 ms). */
  readonly initialMs?: number;
  /** Largest delay (default 10 s). */
  readonly maxMs?: number;
  /**
   * "Equal jitter" (default true): half of the capped exponential delay is fixed, the other half
   * random, so the delay still grows with the attempt while clients that lost the same server
   * spread out. False: the capped exponential delay itself.
   */
  readonly jitter?: boolean;
  /** Uniform [0, 1) source; injectable for tests. */
  readonly random?: () => number;
}

/** The delay before retry number `attempt` (0: the first), in whole ms. */
export function backoffDelay(attempt: number, options: BackoffOptions = {}): number {
  const initial = options.initialMs ?? 100;
  const max = options.maxMs ?? 10_000;
  const capped = Math.min(max, initial * 2 ** Math.min(Math.max(attempt, 0), 30));
  if (options.jitter === false) return Math.round(capped);
  const random = options.random ?? Math.random;
  return Math.round(capped / 2 + random() * (capped / 2));
}
