import { field, type Page, type StoreContext } from './shared';

export interface RawFrame {
  direction: 'in' | 'out';
  line: string;
}

/** Each execution's bounded log of raw ACP frames (`xr:`), written by its worker. */
export class RawFrames {
  constructor(private readonly ctx: StoreContext) {}

  /** Appends raw ACP lines to the execution's bounded log, the batch atomically. */
  async append(
    taskId: string,
    executionId: string,
    frames: readonly RawFrame[],
  ): Promise<string | null> {
    if (frames.length === 0) return null;
    const args: string[] = [];
    for (const f of frames) args.push(f.direction, f.line);
    return this.ctx.scripts.appendBounded(
      [this.ctx.keys.rawFrames(taskId, executionId)],
      [this.ctx.opts.rawFramesMaxLen, ...args],
    );
  }

  async read(
    taskId: string,
    executionId: string,
    afterId = '0-0',
    count = 1_000,
  ): Promise<Page<{ id: string } & RawFrame>> {
    const key = this.ctx.keys.rawFrames(taskId, executionId);
    return this.ctx.page(key, this.ctx.shardOf(taskId), afterId, count, (id, fields) => ({
      id,
      direction: field(fields, 'd') === 'out' ? ('out' as const) : ('in' as const),
      line: field(fields, 'f') ?? '',
    }));
  }
}
