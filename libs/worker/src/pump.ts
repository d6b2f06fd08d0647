import { backoffDelay } from '@baton/backoff';

/**
 * Sends items in order, in batches: everything pushed while a send is in flight goes out in the
 * next one, so items that arrive together (the facts of one frame, a burst of frames) share a
 * round trip. A failed batch is sent again, the same batch, until it is acknowledged or the
 * attempts run out; later items wait behind it, so order holds.
 */
export interface PumpOptions<T> {
  send: (batch: T[]) => Promise<void>;
  /** Most items per send. */
  maxBatch?: number;
  /**
   * How long the first item pushed waits for others before a send (default 0: the rest of its
   * tick). Items that need not be seen at once go out in fewer, larger batches; a drain sends at
   * once.
   */
  lingerMs?: number;
  /** Attempts per batch before it is given up (default: no limit). */
  maxAttempts?: number;
  onRetry?: (err: unknown, attempt: number) => void;
  onGiveUp?: (err: unknown, batch: T[]) => void;
  /**
   * Items waiting (pushed, not yet acknowledged) while sends fail, past which `onFull` is told,
   * once: the caller stops producing (nothing is dropped, so order and completeness hold). A
   * backlog behind sends that succeed (a producer faster than the store's round trips) is not an
   * outage and is not counted.
   */
  maxPending?: number;
  onFull?: (pending: number) => void;
  /**
   * Items waiting behind sends that succeed past which `backlog()` asks the producer to wait
   * (until half of it is left): a producer faster than the store is slowed to its pace instead
   * of held in memory. While sends fail, `backlog()` never waits: then `maxPending` is the bound,
   * and the producer must keep going for it to be reached.
   */
  highWater?: number;
}

export class Pump<T> {
  private readonly queue: T[] = [];
  private running: Promise<void> | undefined;
  private aborted = false;
  private inFlight = 0;
  private full = false;
  /** The batch in flight has failed and not yet been acknowledged. */
  private failing = false;
  /** Producers waiting for the backlog to fall, released together. */
  private waiters: (() => void)[] = [];
  /** Ends the linger before the next send, if one is under way. */
  private endLinger: (() => void) | undefined;

  constructor(private readonly options: PumpOptions<T>) {}

  push(...items: T[]): void {
    if (items.length === 0) return;
    this.queue.push(...items);
    this.checkFull();
    // Deferred to a microtask (or the linger): what arrives meanwhile joins the batch.
    this.running ??= this.linger().then(() => this.run());
  }

  private linger(): Promise<void> {
    const ms = this.options.lingerMs ?? 0;
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.endLinger = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.endLinger = done;
    });
  }

  private checkFull(): void {
    const max = this.options.maxPending;
    if (max !== undefined && this.failing && !this.full && this.pending > max) {
      this.full = true;
      this.options.onFull?.(this.pending);
    }
  }

  /**
   * A promise while the backlog is past `highWater` and sends succeed (the producer should wait
   * for it before producing more); undefined otherwise.
   */
  backlog(): Promise<void> | undefined {
    const high = this.options.highWater;
    if (high === undefined || this.failing || this.aborted || this.pending <= high) return;
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private release(): void {
    if (this.waiters.length === 0) return;
    const high = this.options.highWater ?? Infinity;
    if (this.failing || this.aborted || this.pending <= high / 2) {
      const waiters = this.waiters;
      this.waiters = [];
      for (const w of waiters) w();
    }
  }

  /** Items pushed and not yet acknowledged (or given up). */
  get pending(): number {
    return this.queue.length + this.inFlight;
  }

  private async run(): Promise<void> {
    try {
      while (this.queue.length > 0 && !this.aborted) {
        const batch = this.queue.splice(0, this.options.maxBatch ?? 500);
        this.inFlight = batch.length;
        await this.sendUntilAcknowledged(batch);
        this.inFlight = 0;
        this.release();
      }
    } finally {
      this.inFlight = 0;
      this.running = undefined;
      this.release();
    }
  }

  private async sendUntilAcknowledged(batch: T[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.options.send(batch);
        this.failing = false;
        return;
      } catch (err) {
        this.failing = true;
        this.checkFull();
        this.release();
        if (this.aborted || attempt >= (this.options.maxAttempts ?? Infinity)) {
          this.options.onGiveUp?.(err, batch);
          return;
        }
        this.options.onRetry?.(err, attempt);
        const ms = backoffDelay(attempt, { initialMs: 50, maxMs: 2_000, jitter: false });
        await new Promise((r) => setTimeout(r, ms));
      }
    }
  }

  /**
   * Resolves once everything pushed so far is sent. With `deadlineMs`, gives up waiting after it
   * (the batch in flight is abandoned after its current attempt) and resolves false.
   */
  async drain(deadlineMs?: number): Promise<boolean> {
    this.endLinger?.();
    const done = (async () => {
      while (this.running) await this.running;
      return true;
    })();
    if (deadlineMs === undefined) return done;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), deadlineMs)));
    const ok = await Promise.race([done, late]);
    clearTimeout(timer);
    if (!ok) {
      this.aborted = true;
      this.release();
    }
    return ok;
  }
}

/**
 * Sends `batch`; when the receiver refuses one item of it (`refusedAt` names its index, the
 * receiver having written nothing), drops that item alone, says so, and sends the rest. Any
 * other error is thrown, for the pump to retry the batch.
 */
export async function sendDroppingRefused<T>(
  batch: readonly T[],
  send: (items: readonly T[]) => Promise<unknown>,
  refusedAt: (err: unknown) => number | undefined,
  onDrop: (item: T, err: unknown) => void,
): Promise<void> {
  let rest = batch;
  while (rest.length > 0) {
    try {
      await send(rest);
      return;
    } catch (err) {
      const index = refusedAt(err);
      if (index === undefined || index < 0 || index >= rest.length) throw err;
      onDrop(rest[index]!, err);
      rest = rest.filter((_, i) => i !== index);
    }
  }
}
