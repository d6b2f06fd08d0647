import type { SessionHistory } from '@baton/protocol';
import fc from 'fast-check';
import {
  SESSION_LOOKBACK_MS,
  TIMELINE_RANGES,
  historyQuery,
  isTimelineRange,
  rangeText,
  stack,
  timelineOf,
  windowStart,
} from '../src/timeline';

const T = Date.UTC(2026, 11, 2, 10, 42, 0);
const s = (n: number) => T + n * 1_000;

const history: SessionHistory = {
  sessionId: 's1',
  activity: [
    { state: 'generating', from: s(0), to: s(20) },
    { state: 'background', from: s(20), to: s(60) },
    { state: 'idle', from: s(60), to: s(70) },
    { state: 'generating', from: s(70), to: null },
  ],
  turns: [],
  background: [
    {
      id: 'sh1',
      kind: 'shell',
      label: 'npm test',
      start: s(10),
      end: s(60),
      endedBy: 'identified',
    },
    {
      id: 'sa1',
      kind: 'subagent',
      label: 'review',
      start: s(15),
      end: s(40),
      endedBy: 'execution',
    },
    { id: 'm1', kind: 'monitor', label: 'watch CI', start: s(50), end: null },
  ],
  prompts: [
    {
      promptId: 'p1',
      idempotencyKey: 'fix',
      submittedAt: s(0),
      decision: 'admitted',
      decidedAt: s(0),
      queueWaitMs: null,
      admittedAt: s(0),
      dispatchedAt: s(1),
    },
    {
      promptId: 'p2',
      idempotencyKey: 'then-test',
      submittedAt: s(30),
      decision: 'queued',
      decidedAt: s(30),
      queueWaitMs: 40_000,
      admittedAt: s(70),
      dispatchedAt: s(71),
    },
  ],
  executions: [{ executionId: 'x1', requestedAt: s(0), start: s(0), end: null }],
};

describe('the timeline of a session', () => {
  const t = timelineOf(history, s(80));

  it('spans from the first event to now, open intervals reaching the right edge', () => {
    expect([t.from, t.to]).toEqual([s(0), s(80)]);
    const fg = t.lanes.find((l) => l.key === 'foreground')!.bars;
    expect(fg.map((b) => [b.kind, b.left, b.width, b.open])).toEqual([
      ['generating', 0, 0.25, false],
      ['background', 0.25, 0.5, false],
      ['idle', 0.75, 0.125, false],
      ['generating', 0.875, 0.125, true],
    ]);
    expect(t.ticks.map((k) => k.text)).toEqual([
      '10:42:00',
      '10:42:20',
      '10:42:40',
      '10:43:00',
      '10:43:20',
    ]);
  });

  it('says in words what each bar is, with its exact times (nothing rests on colour)', () => {
    const fg = t.lanes.find((l) => l.key === 'foreground')!.bars;
    expect(fg[1]!.label).toBe('background');
    expect(fg[1]!.detail).toBe('background, 10:42:20–10:43:00 (40.0 s)');
    expect(fg[3]!.detail).toBe('generating, since 10:43:10 (10.0 s so far)');
    const bg = t.lanes.find((l) => l.key === 'background')!.bars;
    expect(bg.map((b) => [b.kind, b.label])).toEqual([
      ['shell', 'shell: npm test'],
      ['subagent unidentified', 'subagent: review'],
      ['monitor', 'monitor: watch CI'],
    ]);
    expect(bg[1]!.detail).toMatch(/ended with its execution \(its own end was never reported\)/);
    expect(bg[2]!.detail).toMatch(/still running$/);
    const prompts = t.lanes.find((l) => l.key === 'prompts')!.bars;
    // The queued prompt's wait is drawn out, from its submission to its admission.
    expect(prompts[1]).toMatchObject({
      kind: 'queued',
      label: 'queued 40.0 s',
      left: 0.375,
      width: 0.5,
    });
    expect(prompts[0]).toMatchObject({ kind: 'prompt', label: 'admitted' });
    expect(prompts[1]!.detail).toBe(
      'prompt then-test submitted 10:42:30, queued 40.0 s, admitted 10:43:10, dispatched 10:43:11',
    );
  });

  it('keeps every bar inside the window, whatever the history', () => {
    const ms = fc.integer({ min: 0, max: 100_000 });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(ms, fc.option(ms, { nil: null })), { maxLength: 20 }),
        ms,
        (spans, now) => {
          const h: SessionHistory = {
            ...history,
            activity: spans.map(([a, b]) => ({
              state: 'idle',
              from: T + a,
              to: b === null ? null : T + Math.max(a, b),
            })),
          };
          for (const lane of timelineOf(h, T + now).lanes) {
            for (const b of lane.bars) {
              expect(b.left).toBeGreaterThanOrEqual(0);
              expect(b.width).toBeGreaterThanOrEqual(0);
              expect(b.left + b.width).toBeLessThanOrEqual(1 + 1e-9);
            }
          }
        },
      ),
    );
  });
});

describe('the range picker', () => {
  const now = s(100);

  it('asks for exactly the look-back, or as far back as the gateway answers for the session', () => {
    expect(historyQuery('15m', now)).toEqual({ since: now - 15 * 60_000, until: now });
    expect(historyQuery('1h', now)).toEqual({ since: now - 3_600_000, until: now });
    expect(historyQuery('6h', now)).toEqual({ since: now - 6 * 3_600_000, until: now });
    expect(historyQuery('24h', now)).toEqual({ since: now - 24 * 3_600_000, until: now });
    expect(historyQuery('session', now)).toEqual({ since: now - SESSION_LOOKBACK_MS, until: now });
    // The gateway refuses a range wider than 31 days.
    expect(SESSION_LOOKBACK_MS).toBeLessThanOrEqual(31 * 24 * 3_600_000);
    expect(TIMELINE_RANGES.map((r) => r.key)).toEqual(['15m', '1h', '6h', '24h', 'session']);
    expect(isTimelineRange('6h')).toBe(true);
    expect(isTimelineRange('2h')).toBe(false);
  });

  it('draws a look-back from its start, or from the first event when the session is younger', () => {
    // The session began 100 s ago: every look-back starts at its first event.
    expect(windowStart('15m', history, now)).toBe(s(0));
    expect(windowStart('session', history, now)).toBeUndefined();
    expect(timelineOf(history, now, windowStart('session', history, now)).from).toBe(s(0));
    // An hour later, 15 min look back less far than the session goes.
    const later = now + 3_600_000;
    expect(windowStart('15m', history, later)).toBe(later - 15 * 60_000);
    expect(windowStart('24h', history, later)).toBe(s(0));
  });

  it('says the range in words', () => {
    const t = timelineOf(history, now, windowStart('1h', history, now));
    expect(rangeText('1h', t)).toBe('last 1 h: 10:42:00–now (UTC); dashed right edge: still going');
    expect(rangeText('session', t)).toMatch(/^since the session began: 10:42:00–now/);
  });
});

describe('overlapping background work and stopped turns', () => {
  it('draws bars that overlap in time on rows of their own, reusing a row once it is free', () => {
    const t = timelineOf(history, s(100));
    const bg = t.lanes.find((l) => l.key === 'background')!;
    expect(bg.bars.map((b) => [b.key, b.row])).toEqual([
      ['bg-sh1', 0],
      ['bg-sa1', 1],
      ['bg-m1', 1],
    ]);
    expect(bg.rows).toBe(2);
    expect(t.lanes.find((l) => l.key === 'foreground')!.rows).toBe(1);
  });

  it('never puts two bars that overlap on one row, and an open bar keeps its row', () => {
    const arb = fc.array(
      fc.record({
        left: fc.oneof(fc.constantFrom(0, 0.5, 1), fc.double({ min: 0, max: 1, noNaN: true })),
        width: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 1, noNaN: true })),
        open: fc.boolean(),
      }),
      { maxLength: 12 },
    );
    // What a bar covers: [left, end), an open bar to the right without end; a closed bar of no
    // width covers its one point (it is drawn a few pixels wide from there).
    type Span = { left: number; width: number; open: boolean };
    const end = (b: Span) => (b.open ? Infinity : b.left + b.width);
    const isPoint = (b: Span) => !b.open && b.width === 0;
    const covers = (b: Span, t: number) => (isPoint(b) ? t === b.left : b.left <= t && t < end(b));
    const overlap = (a: Span, b: Span) =>
      isPoint(a)
        ? covers(b, a.left) || (isPoint(b) && a.left === b.left)
        : isPoint(b)
          ? covers(a, b.left)
          : Math.max(a.left, b.left) < Math.min(end(a), end(b));
    fc.assert(
      fc.property(arb, (xs) => {
        const bars = stack(
          xs.map((x, i) => ({ ...x, key: `b${i}`, kind: 'shell', label: '', detail: '', row: 0 })),
        );
        for (const a of bars)
          for (const b of bars) if (a !== b && a.row === b.row) expect(overlap(a, b)).toBe(false);
        // Rows are used from the first up: no row stays empty below a used one.
        const rows = new Set(bars.map((b) => b.row));
        for (const r of rows) if (r > 0) expect(rows.has(r - 1)).toBe(true);
      }),
    );
  });

  it('keeps an instant off the row of a bar that starts at the same point', () => {
    const bar = (key: string, left: number, width: number, open = false) =>
      ({ key, kind: 'shell', label: '', detail: '', row: 0, left, width, open }) as const;
    // The counterexample CI found: an instant and an open bar at the same left edge.
    expect(stack([bar('i', 0.9, 0), bar('o', 0.9, 0, true)]).map((b) => b.row)).toEqual([0, 1]);
    expect(stack([bar('o', 0.9, 0, true), bar('i', 0.9, 0)]).map((b) => b.row)).toEqual([0, 1]);
    // Two instants at one point, then a bar that starts where a finished one ends: shares its row.
    expect(stack([bar('i1', 0.5, 0), bar('i2', 0.5, 0)]).map((b) => b.row)).toEqual([0, 1]);
    expect(stack([bar('a', 0.1, 0.4), bar('b', 0.5, 0.2)]).map((b) => b.row)).toEqual([0, 0]);
    // An instant right where a bar ends is drawn after it: same row.
    expect(stack([bar('a', 0.1, 0.4), bar('i', 0.5, 0)]).map((b) => b.row)).toEqual([0, 0]);
  });

  it('says on the foreground bar that a turn was cancelled', () => {
    const cancelled: SessionHistory = {
      ...history,
      turns: [
        { promptId: 'p1', generation: 1, start: s(0), end: s(20), stopReason: 'end_turn' },
        { promptId: 'p2', generation: 2, start: s(70), end: s(80), stopReason: 'cancelled' },
      ],
      activity: [...history.activity.slice(0, 3), { state: 'generating', from: s(70), to: s(80) }],
    };
    const fg = timelineOf(cancelled, s(100)).lanes.find((l) => l.key === 'foreground')!.bars;
    expect(fg[0]).toMatchObject({ kind: 'generating', label: 'generating' });
    expect(fg[0]!.detail).not.toMatch(/cancelled/);
    expect(fg[3]).toMatchObject({ kind: 'generating stopped', label: 'generating · cancelled' });
    expect(fg[3]!.detail).toBe('generating, 10:43:10–10:43:20 (10.0 s), turn cancelled');
  });
});
