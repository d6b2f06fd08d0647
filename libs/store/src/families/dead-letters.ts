import { field, type Page, type StoreContext } from './shared';

export interface DeadLetter {
  id: string;
  source: string;
  sourceId: string;
  reason: string;
  raw: string;
}

/**
 * Each shard's dead letters (`dead`, recorded once per source entry through `deadidx`): what
 * failed to decode on its way out of Redis (see {@link StoreContext.deadLetter}), and what was
 * refused on its way in from outside the task streams.
 */
export class DeadLetters {
  constructor(private readonly ctx: StoreContext) {}

  /**
   * Records something refused on its way in from outside the task streams (an execution job a
   * worker will not run), once per (source, id), in the dead-letter stream of `shard`.
   * Returns whether it was recorded now (false: it already was).
   */
  async add(
    shard: number,
    source: string,
    id: string,
    reason: string,
    raw: string,
  ): Promise<boolean> {
    const { keys, opts } = this.ctx;
    const r = await this.ctx.scripts.deadLetter(
      [keys.deadLetters(shard), keys.deadIndex(shard)],
      [source, id, reason.slice(0, 4_000), raw.slice(0, 64_000), opts.deadLettersMaxLen],
    );
    if (r === 0) return false;
    this.ctx.opts.onDeadLetter(shard);
    return true;
  }

  async read(shard: number, afterId = '0-0', count = 1_000): Promise<Page<DeadLetter>> {
    return this.ctx.page(this.ctx.keys.deadLetters(shard), shard, afterId, count, (id, f) => ({
      id,
      source: field(f, 'src') ?? '',
      sourceId: field(f, 'id') ?? '',
      reason: field(f, 'reason') ?? '',
      raw: field(f, 'raw') ?? '',
    }));
  }
}
