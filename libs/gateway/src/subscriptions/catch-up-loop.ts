import { backoffDelay } from '@baton/backoff';

/** Redis retries of a subscription's reads: quick at first, at most a second apart. */
export const RETRY = { initialMs: 20, maxMs: 1_000, jitter: false } as const;

/** What a {@link CatchUpLoop} runs: a subscription (both kinds implement it). */
export interface CatchUpWork {
  /** One catch-up to the present; throws when Redis fails (it is then retried). */
  runCatchUp(): Promise<void>;
  /** Once closed, a failed catch-up is not retried. */
  readonly closed: boolean;
  /** A catch-up failed (it is retried). */
  catchUpFailed(err: unknown): void;
}

/**
 * A subscription's catch-up, one at a time: a kick while one runs does nothing (the running one
 * sees what changed), and a Redis error retries it with backoff, the client waiting rather than
 * losing anything, until the subscription is closed. It holds its subscription, not closures
 * over it: those cost each idle subscription ~200 bytes.
 */
export class CatchUpLoop {
  private running = false;

  constructor(private readonly work: CatchUpWork) {}

  kick(): void {
    if (this.running) return;
    void this.exclusive(() => this.untilDone());
  }

  /** Runs `work` with no catch-up beside it: a kick meanwhile does nothing. */
  async exclusive<T>(work: () => Promise<T>): Promise<T> {
    this.running = true;
    try {
      return await work();
    } finally {
      this.running = false;
    }
  }

  private async untilDone(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.work.runCatchUp();
        return;
      } catch (err) {
        if (this.work.closed) return;
        this.work.catchUpFailed(err);
        await delay(backoffDelay(attempt, RETRY));
      }
    }
  }
}

export function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
