import type { SessionHistory } from '@baton/protocol';
import fc from 'fast-check';
import { timelineOf } from '../src/timeline';

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
