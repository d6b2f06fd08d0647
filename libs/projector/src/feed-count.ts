import { compareIds } from '@baton/store';

/**
 * Whether notes of a shard's feed went unread: the feed is capped (MAXLEN), so an owner that lags
 * further than the cap behind its writers loses the oldest notes it had not read yet, and a task it
 * holds would then wait for its next note to look at its stream.
 *
 * Redis counts every note the feed was ever given (XINFO STREAM `entries-added`, with the last id
 * in the same reply); the owner counts the notes it reads. A look records that count and last id;
 * once the owner has read up to that id, it compares: fewer read than added up to there means some
 * went unread. So a loss is found by the first read past a look, whether or not the owner ever
 * reaches the feed's end. A look the owner had already read past when its reply came is skipped
 * (the notes read up to its id are not known then); the next one counts them. Notes read twice
 * could only hide a loss, never make one up.
 */
export class FeedCount {
  /** The feed's count of notes added before the first note counted (null: not started). */
  private from: number | null = null;
  /** Notes read since `from`. */
  private read = 0;
  /** The last look not yet reached: the feed's last id and count of notes added then. */
  private mark: { id: string; added: number } | null = null;

  /** The owner starts: its tail reads the notes the feed holds now, and every one after. */
  start(added: number, length: number): void {
    this.from ??= added - length;
  }

  /** A note read, in the feed's order. True when notes before it went unread. */
  noteRead(id: string): boolean {
    let lost = false;
    if (this.mark && compareIds(id, this.mark.id) > 0) lost = this.settle();
    this.read += 1;
    if (this.mark && compareIds(id, this.mark.id) === 0) lost = this.settle();
    return lost;
  }

  /**
   * A look at the feed (`added` and `lastId` from one XINFO reply), with the last note read when
   * the reply came. True when notes went unread (found now: the owner is at that id).
   */
  look(added: number, lastId: string, lastRead: string | null): boolean {
    if (this.mark) return false;
    const c = compareIds(lastRead ?? '0-0', lastId);
    if (c > 0) return false;
    this.mark = { id: lastId, added };
    return c === 0 ? this.settle() : false;
  }

  private settle(): boolean {
    const mark = this.mark!;
    const lost = this.from !== null && mark.added - this.from > this.read;
    this.from = mark.added;
    this.read = 0;
    this.mark = null;
    return lost;
  }
}
