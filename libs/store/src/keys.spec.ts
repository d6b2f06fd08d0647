import { KeyLayout, fnv1a32 } from './keys';

describe('key layout', () => {
  it('hashes with 32-bit FNV-1a (published test vectors)', () => {
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c);
    expect(fnv1a32('foobar')).toBe(0xbf9cf968);
  });

  it('maps a task to the same shard every time, and spreads tasks over all shards', () => {
    const k = new KeyLayout(64);
    const counts = new Array<number>(64).fill(0);
    for (let i = 0; i < 6400; i++) counts[k.shardOf(`task-${i}`)]! += 1;
    expect(k.shardOf('task-42')).toBe(new KeyLayout(64).shardOf('task-42'));
    expect(Math.min(...counts)).toBeGreaterThan(50);
    expect(Math.max(...counts)).toBeLessThan(150);
  });

  it('keeps keys of different kinds apart even for ids containing separators', () => {
    const k = new KeyLayout(1);
    const keys = [
      k.taskStream('a:tw:b'),
      k.taskDedupe('a'),
      k.taskStream('a'),
      k.snapshot('a'),
      k.inbox('a', 'a'),
      k.rawFrames('a', 'a'),
      k.transcript('a'),
      k.transcript('a:ts:a'),
      k.transcriptCompacted('a'),
      k.transcriptCompacted('a:tt:a'),
      k.feed(0),
      k.lease(0),
    ];
    expect(new Set(keys).size).toBe(keys.length);
    expect(k.taskStream('x{y}z')).toBe('baton:{b:0}:ts:x{y}z');
    // The transcript shares its task's hash tag: one slot with the task stream on a Cluster.
    const many = new KeyLayout(64);
    expect(many.transcript('t/7').split('}')[0]).toBe(many.taskStream('t/7').split('}')[0]);
    expect(many.transcriptCompacted('t/7').split('}')[0]).toBe(
      many.transcript('t/7').split('}')[0],
    );
  });

  it('refuses shard counts and prefixes that would break the layout', () => {
    expect(() => new KeyLayout(0)).toThrow(RangeError);
    expect(() => new KeyLayout(1.5)).toThrow(RangeError);
    expect(() => new KeyLayout(8, 'a{b}')).toThrow(/braces/);
  });
});
