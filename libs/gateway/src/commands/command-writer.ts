import type { StreamEntry, Writer } from '@baton/protocol';
import type { EventStore } from '@baton/store';

/**
 * Appends this gateway's commands to task streams under its writer instance with a growing seq.
 * Appends to one task go one at a time, so the store's per-writer dedupe (which keeps the highest
 * seq) never sees them reordered; every command of the process (prompts, queue and session
 * commands, execution requests) goes through the one writer for that reason.
 */
export class CommandWriter {
  private seq = 0;
  private readonly chains = new Map<string, Promise<unknown>>();

  constructor(
    private readonly store: EventStore,
    private readonly writerInstance: string,
    /** No caller waits longer than this for its append, however many wait before it. */
    private readonly storeTimeoutMs: number,
  ) {}

  append(taskId: string, make: (writer: Writer) => StreamEntry): Promise<string> {
    const prev = this.chains.get(taskId) ?? Promise.resolve();
    const next = prev
      .catch(() => undefined)
      .then(async () => {
        const entry = make({ role: 'gateway', instance: this.writerInstance, seq: ++this.seq });
        const [id] = await this.store.append(taskId, [entry]);
        if (!id) throw new Error('the store took a fresh writer seq for a duplicate');
        return id;
      });
    this.chains.set(taskId, next);
    void next
      .catch(() => undefined)
      .finally(() => {
        if (this.chains.get(taskId) === next) this.chains.delete(taskId);
      });
    return this.bounded(next);
  }

  /**
   * Each command's own Redis time is bounded by the connection; behind a stalled task chain, a
   * caller would wait for every append before its own. It gives up at its own bound instead
   * (`unavailable`); the append may still land, and a retry under the same key finds it.
   */
  private bounded<T>(p: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(`Command timed out: the store took no append in ${this.storeTimeoutMs} ms`),
          ),
        this.storeTimeoutMs,
      );
    });
    return Promise.race([p, late]).finally(() => clearTimeout(timer));
  }
}
