import fc from 'fast-check';
import { FeedCount } from './feed-count';

/**
 * A shard's feed as Redis keeps it (notes with growing ids, a count of every note added, the
 * oldest cut by MAXLEN or behind what the owner read) and the owner's tail reading it in order,
 * with what really went unread: a note deleted after the owner started and before it read it.
 */
class Feed {
  private notes: { n: number; read: boolean }[] = [];
  added = 0;
  lastRead = 0;
  readonly count = new FeedCount();
  /** Steps at which a note went unread, and at which the count said so. */
  readonly losses: number[] = [];
  readonly reports: number[] = [];
  step = 0;
  private started = false;

  static id = (n: number) => `${n}-0`;

  append(k: number) {
    for (let i = 0; i < k; i++) this.notes.push({ n: ++this.added, read: false });
  }
  /** MAXLEN: the oldest `k` notes go, read or not; never the newest (MAXLEN is at least 1). */
  cap(k: number) {
    for (const note of this.notes.splice(0, Math.min(k, this.notes.length - 1)))
      if (this.started && note.n > this.lastRead) this.losses.push(this.step);
  }
  /** The owner's cut behind what it read. */
  cutRead() {
    this.notes = this.notes.filter((x) => x.n > this.lastRead);
  }
  start() {
    this.started = true;
    this.count.start(this.added, this.notes.length);
  }
  /** The tail reads the next note there is; false at the feed's end. */
  read(): boolean {
    const next = this.notes.find((x) => x.n > this.lastRead);
    if (!next) return false;
    this.lastRead = next.n;
    if (this.count.noteRead(Feed.id(next.n))) this.reports.push(this.step);
    return true;
  }
  lastId() {
    const last = this.notes[this.notes.length - 1];
    return last ? Feed.id(last.n) : Feed.id(this.added);
  }
  /** A look whose reply comes after more appends and reads of the tail. */
  look(appendsMeanwhile = 0, readsMeanwhile = 0) {
    const added = this.added;
    const lastId = this.lastId();
    this.append(appendsMeanwhile);
    for (let i = 0; i < readsMeanwhile; i++) this.read();
    const lastRead = this.lastRead === 0 ? null : Feed.id(this.lastRead);
    if (this.count.look(added, lastId, lastRead)) this.reports.push(this.step);
  }
}

type Op =
  | { op: 'append'; k: number }
  | { op: 'cap'; k: number }
  | { op: 'cutRead' }
  | { op: 'read'; k: number }
  | { op: 'look'; appends: number; reads: number };

const ops = fc.array(
  fc.oneof(
    fc.record({ op: fc.constant('append' as const), k: fc.integer({ min: 1, max: 4 }) }),
    fc.record({ op: fc.constant('cap' as const), k: fc.integer({ min: 1, max: 3 }) }),
    fc.record({ op: fc.constant('cutRead' as const) }),
    fc.record({ op: fc.constant('read' as const), k: fc.integer({ min: 1, max: 4 }) }),
    fc.record({
      op: fc.constant('look' as const),
      appends: fc.integer({ min: 0, max: 2 }),
      reads: fc.integer({ min: 0, max: 3 }),
    }),
  ),
  { maxLength: 40 },
);

function play(before: readonly Op[], after: readonly Op[]): Feed {
  const feed = new Feed();
  const run = (o: Op) => {
    feed.step += 1;
    if (o.op === 'append') feed.append(o.k);
    else if (o.op === 'cap') feed.cap(o.k);
    else if (o.op === 'cutRead') feed.cutRead();
    else if (o.op === 'read') for (let i = 0; i < o.k; i++) feed.read();
    else feed.look(o.appends, o.reads);
  };
  // Before the owner starts, the feed may have been given notes and lost some: those are the
  // live set's to cover, not a loss of this owner.
  for (const o of before) if (o.op !== 'read' && o.op !== 'look') run(o);
  feed.start();
  for (const o of after) run(o);
  // Then the owner reads to the feed's end and looks there once.
  feed.step += 1;
  while (feed.read());
  feed.look();
  return feed;
}

describe('the count of feed notes read against the notes the feed added', () => {
  it('never says notes went unread when none did, and says so after the last one that did', () => {
    fc.assert(
      fc.property(ops, ops, (before, after) => {
        const feed = play(before, after);
        if (feed.losses.length === 0) expect(feed.reports).toEqual([]);
        else {
          // Each report has a loss at or before it; the last loss is reported at or after it.
          for (const r of feed.reports) expect(feed.losses[0]!).toBeLessThanOrEqual(r);
          expect(feed.reports.some((r) => r >= feed.losses[feed.losses.length - 1]!)).toBe(true);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('finds a loss while the owner lags, by the first read past a look, without reaching the end', () => {
    const feed = new Feed();
    feed.start();
    feed.append(10);
    feed.read();
    feed.read();
    feed.read();
    feed.cap(5); // notes 1–5 go: 4 and 5 unread
    feed.step += 1;
    feed.look(); // lagging: at note 3 of 10
    feed.append(5);
    for (let i = 0; i < 5; i++) feed.read(); // notes 6–10: up to the look's last id
    expect(feed.reports).toEqual([1]);
    // The owner never reached the end (notes 11–15 unread), yet the loss is found.
    expect(feed.lastRead).toBe(10);
    expect(feed.lastId()).toBe('15-0');
  });

  it('skips a look the owner had read past when its reply came, and counts it at the next', () => {
    const count = new FeedCount();
    count.start(0, 0);
    expect(count.noteRead('1-0')).toBe(false);
    // The reply says 3 notes up to 2-0; the tail had read 1-0 and 3-0 by then (2-0 went unread).
    expect(count.noteRead('3-0')).toBe(false);
    expect(count.look(2, '2-0', '3-0')).toBe(false);
    // The next look, at the end: 3 added, 2 read.
    expect(count.look(3, '3-0', '3-0')).toBe(true);
    expect(count.look(3, '3-0', '3-0')).toBe(false);
  });
});
