/** Reconnect delays: exponential, capped, with jitter so a fleet of clients does not reconnect in step. */
export interface BackoffOptions {
  /** Delay before the first retry (default 100 ms). */
  readonly initialMs?: number;
  /** Largest delay (default 10 s). */
  readonly maxMs?: number;
  /** Uniform [0, 1) source; injectable for tests. */
  readonly random?: () => number;
}

/**
 * "Equal jitter": half of the capped exponential delay is fixed, the other half random, so the
 * delay still grows with the attempt while clients that lost the same server spread out.
 */
export function backoffDelay(attempt: number, options: BackoffOptions = {}): number {
  const initial = options.initialMs ?? 100;
  const max = options.maxMs ?? 10_000;
  const random = options.random ?? Math.random;
  const capped = Math.min(max, initial * 2 ** Math.min(attempt, 30));
  return Math.round(capped / 2 + random() * (capped / 2));
}
