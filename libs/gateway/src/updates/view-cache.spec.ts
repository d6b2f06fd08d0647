import fc from 'fast-check';
import { initialTaskState } from '@baton/activity';
import { Update, type TaskView } from '@baton/protocol';
import { play, snapshotOf, streams } from '@baton/testing';
import { ViewCache } from './view-cache';

const view = (taskId: string, seq: number, sessions = ['s1', 's2'], pad = 0): TaskView =>
  ({
    taskId,
    seq,
    activity: { foregroundActivity: null, activeSubagentCount: 0 },
    sessions: sessions.map((sessionId) => ({ sessionId, pad: 'x'.repeat(pad) })),
  }) as unknown as TaskView;

describe('ViewCache', () => {
  it('keeps one version per task, and hands out the same objects and frames for it', () => {
    const c = new ViewCache(1_000_000);
    const v = c.put(view('t', 3));
    expect(c.get('t', 3)).toBe(v);
    expect(c.get('t', 2)).toBeUndefined();
    // An older version never replaces a newer one; the same version is the kept object.
    expect(c.put(view('t', 2))).not.toBe(v);
    expect(c.put(view('t', 3))).toBe(v);
    expect(c.get('t', 3)).toBe(v);
    const part = c.session(v, 's1');
    expect(part.sessions.map((s) => s.sessionId)).toEqual(['s1']);
    expect(c.session(v, 's1')).toBe(part);
    const f = c.snapshotFrame(v, false);
    expect(c.snapshotFrame(v, false)).toBe(f);
    expect(JSON.parse(f.toString())).toEqual({ v: 1, type: 'snapshot', resync: false, task: v });
    expect(JSON.parse(c.snapshotFrame(part, true).toString())).toMatchObject({
      resync: true,
      task: { sessions: [{ sessionId: 's1' }] },
    });
    // A newer version replaces it.
    const v4 = c.put(view('t', 4));
    expect(c.get('t', 3)).toBeUndefined();
    expect(c.get('t', 4)).toBe(v4);
    expect(c.size).toBe(1);
  });

  it('stays within its bytes, least recently used out first', () => {
    const c = new ViewCache(25_000);
    c.put(view('a', 1, ['s'], 10_000));
    c.put(view('b', 1, ['s'], 10_000));
    expect(c.get('a', 1)).toBeDefined(); // a is now the most recently used
    c.put(view('c', 1, ['s'], 10_000));
    expect(c.get('b', 1)).toBeUndefined();
    expect(c.get('a', 1)).toBeDefined();
    expect(c.get('c', 1)).toBeDefined();
    expect(c.bytes).toBeLessThanOrEqual(25_000);
    // Frames count too; a view too large for the cache is served, not kept.
    c.snapshotFrame(c.get('c', 1)!, false);
    expect(c.bytes).toBeLessThanOrEqual(25_000);
    expect(c.get('c', 1)).toBeDefined();
    const big = view('d', 1, ['s'], 30_000);
    expect(c.put(big)).toBe(big);
    expect(c.get('d', 1)).toBeUndefined();
    expect(JSON.parse(c.snapshotFrame(big, false).toString()).task).toEqual(big);
  });

  it('serves only what was current lately to those that accept an older view', () => {
    const c = new ViewCache(1_000_000);
    const v = c.put(view('t', 1));
    expect(c.recent('t', 1_000)).toBe(v);
    expect(c.recent('u', 1_000)).toBeUndefined();
    jest.spyOn(Date, 'now').mockReturnValue(Date.now() + 5_000);
    expect(c.recent('t', 1_000)).toBeUndefined();
    expect(c.get('t', 1)).toBe(v); // confirmed current again
    expect(c.recent('t', 1_000)).toBe(v);
    jest.restoreAllMocks();
  });

  it('drops the views nobody used for the idle period, and keeps those in use', () => {
    let now = 0;
    const c = new ViewCache(1_000_000, 1_000, () => now);
    for (let i = 0; i < 100; i++) c.put(view(`old${i}`, 1));
    now = 600;
    c.put(view('kept', 1));
    expect(c.get('old7', 1)).toBeDefined(); // used again: no longer idle
    now = 1_300;
    c.put(view('new', 1));
    expect(c.size).toBe(3);
    expect(c.get('old8', 1)).toBeUndefined();
    expect(c.get('old7', 1)).toBeDefined();
    expect(c.get('kept', 1)).toBeDefined();
    expect(c.bytes).toBe(
      ['old7', 'kept', 'new'].reduce((n, id) => n + JSON.stringify(view(id, 1)).length, 0),
    );
  });
});

describe('ViewCache.advance over the updates libs/activity folds from generated streams', () => {
  it('is, after each entry, the view the owner stores, and the snapshot frame it serializes', () => {
    fc.assert(
      fc.property(streams, fc.nat(), (steps, cut) => {
        const { checkpoints } = play(steps);
        const states = [initialTaskState('t1'), ...checkpoints.map((c) => c.state)];
        const from = cut % states.length;
        const c = new ViewCache(10_000_000);
        c.put(snapshotOf(states[from]!));
        checkpoints.forEach(({ state, updates }, i) => {
          // As the tail hands them over: JSON through Redis; earlier ones are already in the view.
          for (const u of updates) {
            const wire = JSON.stringify(u);
            c.advance(Update.parse(JSON.parse(wire)), () => wire.length);
          }
          if (i + 1 < from) return;
          const want = snapshotOf(state);
          const got = c.get('t1', want.seq);
          expect(got).toEqual(want);
          expect(JSON.parse(c.snapshotFrame(got!, false).toString()).task).toEqual(want);
        });
      }),
      { numRuns: 300 },
    );
  });

  it('keeps the version before a group until its last update; a gap drops the view', () => {
    const c = new ViewCache(1_000_000);
    const base = snapshotOf(initialTaskState('t'));
    c.put(base);
    const u = (seq: number, last: boolean): Update => ({
      v: 1,
      taskId: 't',
      seq,
      entry: '5-0',
      last,
      type: 'task.status',
      data: { status: 'archived' },
    });
    c.advance(u(1, false), () => 10);
    expect(c.get('t', 0)).toBe(base);
    expect(c.get('t', 1)).toBeUndefined();
    c.advance(u(2, true), () => 10);
    expect(c.get('t', 2)).toMatchObject({ seq: 2, status: 'archived' });
    c.advance(u(4, true), () => 10);
    expect(c.size).toBe(0);
  });
});
