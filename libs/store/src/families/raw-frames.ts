import { promisify } from 'node:util';
import { deflate, inflate } from 'node:zlib';
import type { Page, StoreContext } from './shared';

const deflated = promisify(deflate);
const inflated = promisify(inflate);

export interface RawFrame {
  direction: 'in' | 'out';
  line: string;
}

/** A stored entry's fields, as XRANGE returns them unconverted. */
type BufferEntry = [Buffer, Buffer[]];

/**
 * Each execution's log of raw ACP frames (`xr:`), written by its worker, bounded by length and by
 * age (`rawFramesRetentionMs`: raw frames are for looking at what just happened; the transcript
 * and the history keep the day).
 *
 * A write is one entry, its frames zlib-compressed together (`z`, JSON `[[direction, line], …]`,
 * `n` frames): frames are small, alike JSON lines, several to a kilobyte compressed, where an
 * entry per frame (as earlier versions wrote, `d` and `f`, still read) costs its whole text and
 * the entry's overhead. A frame of a compressed entry has the id `<entry id>/<index>`; one of a
 * plain entry, the entry's id.
 */
export class RawFrames {
  constructor(private readonly ctx: StoreContext) {}

  /** Appends raw ACP lines to the execution's bounded log as one entry, atomically. */
  async append(
    taskId: string,
    executionId: string,
    frames: readonly RawFrame[],
  ): Promise<string | null> {
    if (frames.length === 0) return null;
    const chunk = await deflated(JSON.stringify(frames.map((f) => [f.direction, f.line])));
    return this.ctx.scripts.appendBounded(
      [this.ctx.keys.rawFrames(taskId, executionId)],
      [
        this.ctx.opts.rawFramesMaxLen,
        this.ctx.opts.rawFramesRetentionMs,
        'n',
        frames.length,
        'z',
        chunk,
      ],
    );
  }

  /**
   * The frames of up to `count` entries after `afterId` (an entry's or a frame's id; `'0-0'`: from
   * the start). An entry that cannot be read is left out.
   */
  async read(
    taskId: string,
    executionId: string,
    afterId = '0-0',
    count = 1_000,
  ): Promise<Page<{ id: string } & RawFrame>> {
    const key = this.ctx.keys.rawFrames(taskId, executionId);
    // After a frame inside a compressed entry: that entry again, from the next frame.
    const [entryId, index] = afterId.split('/') as [string, string | undefined];
    const start = index !== undefined ? entryId : afterId === '0-0' ? '-' : `(${afterId}`;
    const raw = (await this.ctx.redis.xrangeBuffer(
      key,
      start,
      '+',
      'COUNT',
      count,
    )) as BufferEntry[];
    const entries = await Promise.all(raw.map(([id, fields]) => framesOf(id.toString(), fields)));
    const items = entries.flat();
    const skip = index === undefined ? 0 : items.findIndex((f) => f.id === afterId) + 1;
    return {
      items: items.slice(skip),
      lastId: raw.length > 0 ? raw[raw.length - 1]![0].toString() : afterId,
    };
  }
}

/** The frames of a stored entry: compressed together, or one plain (as earlier versions wrote). */
async function framesOf(id: string, fields: Buffer[]): Promise<({ id: string } & RawFrame)[]> {
  const value = (name: string): Buffer | undefined => {
    for (let i = 0; i < fields.length; i += 2)
      if (fields[i]!.toString() === name) return fields[i + 1];
    return undefined;
  };
  const direction = (d: unknown) => (d === 'out' ? ('out' as const) : ('in' as const));
  const z = value('z');
  if (z === undefined) {
    return [
      { id, direction: direction(value('d')?.toString()), line: value('f')?.toString() ?? '' },
    ];
  }
  try {
    const pairs = JSON.parse((await inflated(z)).toString('utf8')) as [string, string][];
    return pairs.map(([d, line], i) => ({ id: `${id}/${i}`, direction: direction(d), line }));
  } catch {
    return [];
  }
}
