import fc from 'fast-check';
import {
  coalesce,
  coalesceAll,
  flushAll,
  flushDue,
  initialCoalesceState,
  nextFlushAt,
  type CoalesceState,
  type FactBody,
} from '../src';

const PERIOD = 250;

const out = (chars?: number, channel: 'message' | 'thought' | 'plan' = 'message'): FactBody => ({
  type: 'foreground.output',
  data: chars === undefined ? { channel } : { channel, chars },
});
const tool = (id: string): FactBody => ({ type: 'tool.started', data: { toolCallId: id } });

describe('output coalescing', () => {
  it('reports the first output at once and sums the rest of the period into one fact', () => {
    let s = initialCoalesceState();
    let r = coalesce(s, out(5), 1_000, PERIOD);
    expect(r.facts).toEqual([out(5)]);
    s = r.state;
    for (const [t, n] of [
      [1_010, 3],
      [1_100, 4],
      [1_200, 1],
    ] as const) {
      r = coalesce(s, out(n), t, PERIOD);
      expect(r.facts).toEqual([]);
      s = r.state;
    }
    expect(nextFlushAt(s, PERIOD)).toBe(1_250);
    expect(flushDue(s, 1_249, PERIOD).facts).toEqual([]);
    r = flushDue(s, 1_250, PERIOD);
    expect(r.facts).toEqual([out(8)]);
    expect(nextFlushAt(r.state, PERIOD)).toBeUndefined();
  });

  it('flushes pending output before any other fact, keeping the wire order', () => {
    let r = coalesceAll(initialCoalesceState(), [out(1), out(2), out(3)], 0, PERIOD);
    expect(r.facts).toEqual([out(1)]);
    r = coalesce(r.state, tool('t1'), 10, PERIOD);
    expect(r.facts).toEqual([out(5), tool('t1')]);
    // The flush counted as an emission: output right after it waits for the next period.
    r = coalesce(r.state, out(7), 20, PERIOD);
    expect(r.facts).toEqual([]);
    expect(flushAll(r.state, 30).facts).toEqual([out(7)]);
  });

  it('names the latest channel and keeps chars unknown only when no chunk had any', () => {
    let r = coalesceAll(initialCoalesceState(), [out(1), out(undefined, 'plan')], 0, PERIOD);
    expect(r.state.pending).toEqual(out(undefined, 'plan'));
    r = coalesceAll(r.state, [out(2, 'thought')], 1, PERIOD);
    expect(r.state.pending).toEqual(out(2, 'thought'));
    r = coalesce(r.state, out(undefined, 'plan'), 2, PERIOD);
    expect(r.state.pending).toEqual(out(2, 'plan'));
  });

  type Step =
    | { kind: 'output'; chars: number | undefined; dt: number }
    | { kind: 'other'; dt: number }
    | { kind: 'tick'; dt: number };
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({
      kind: fc.constant('output' as const),
      chars: fc.option(fc.nat(50), { nil: undefined }),
      dt: fc.nat(120),
    }),
    fc.record({ kind: fc.constant('other' as const), dt: fc.nat(120) }),
    fc.record({ kind: fc.constant('tick' as const), dt: fc.nat(120) }),
  );

  /** Drives the coalescer like the worker: facts as they come, ticks when it wakes up. */
  const drive = (steps: Step[], period: number) => {
    let s: CoalesceState = initialCoalesceState();
    let now = 0;
    let others = 0;
    /** `forced`: output flushed early by another fact or by the end; exempt from the rate. */
    const emitted: { fact: FactBody; at: number; forced: boolean }[] = [];
    const push = (facts: FactBody[], forced = false) =>
      facts.forEach((fact) => emitted.push({ fact, at: now, forced }));
    for (const st of steps) {
      now += st.dt;
      // The worker's timer fires at the due time, never later than the next event.
      const due = nextFlushAt(s, period);
      if (due !== undefined && due <= now) {
        const saved = now;
        now = due;
        const r = flushDue(s, now, period);
        s = r.state;
        push(r.facts);
        now = saved;
      }
      if (st.kind === 'tick') {
        const r = flushDue(s, now, period);
        s = r.state;
        push(r.facts);
      } else {
        const fact = st.kind === 'output' ? out(st.chars) : tool(`t${others++}`);
        const r = coalesce(s, fact, now, period);
        s = r.state;
        push(r.facts, st.kind === 'other');
      }
    }
    push(flushAll(s, now).facts, true);
    return emitted;
  };

  /** Output chars per run of output between other facts, and the other facts in order. */
  const shape = (facts: FactBody[]) => {
    const runs: number[] = [0];
    const tools: string[] = [];
    for (const f of facts) {
      if (f.type === 'foreground.output') runs[runs.length - 1]! += f.data.chars ?? 0;
      else {
        tools.push(f.type === 'tool.started' ? f.data.toolCallId : f.type);
        runs.push(0);
      }
    }
    return { runs, tools };
  };

  it('loses no output, moves none past another fact, delays no other fact, and rate-limits output', () => {
    fc.assert(
      fc.property(
        fc.array(step, { maxLength: 80 }),
        fc.integer({ min: 1, max: 300 }),
        (steps, period) => {
          const emitted = drive(steps, period);
          // The same facts the steps put in, as the worker would have sent them uncoalesced.
          const input: FactBody[] = [];
          let n = 0;
          for (const st of steps) {
            if (st.kind === 'output') input.push(out(st.chars));
            if (st.kind === 'other') input.push(tool(`t${n++}`));
          }
          expect(shape(emitted.map((e) => e.fact))).toEqual(shape(input));
          // Every other fact went out at the time it came in.
          let now = 0;
          const arrivals: number[] = [];
          for (const st of steps) {
            now += st.dt;
            if (st.kind === 'other') arrivals.push(now);
          }
          expect(
            emitted.filter((e) => e.fact.type !== 'foreground.output').map((e) => e.at),
          ).toEqual(arrivals);
          // Unless another fact or the end forces it out, output is at least a period apart.
          let last: number | undefined;
          for (const e of emitted) {
            if (e.fact.type !== 'foreground.output') continue;
            if (!e.forced && last !== undefined) expect(e.at - last).toBeGreaterThanOrEqual(period);
            last = e.at;
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('never leaves output pending past its due time', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        let s = initialCoalesceState();
        let now = 0;
        for (const st of steps) {
          now += st.dt;
          s = coalesce(s, st.kind === 'output' ? out(st.chars) : tool('x'), now, PERIOD).state;
          const due = nextFlushAt(s, PERIOD);
          if (due !== undefined) {
            expect(due).toBeLessThanOrEqual(now + PERIOD);
            expect(flushDue(s, due, PERIOD).state.pending).toBeUndefined();
          }
        }
      }),
    );
  });
});

describe('usage coalescing', () => {
  const usage = (data: Extract<FactBody, { type: 'usage.reported' }>['data']): FactBody => ({
    type: 'usage.reported',
    data,
  });
  const ended: FactBody = { type: 'turn.ended', data: { admissionGeneration: 1, stopReason: 'x' } };

  it('passes the first report at once, keeps the latest of each field, and lets other facts by', () => {
    let r = coalesce(initialCoalesceState(), usage({ used: 1, size: 10 }), 0, PERIOD);
    expect(r.facts).toEqual([usage({ used: 1, size: 10 })]);
    r = coalesceAll(r.state, [usage({ used: 2 }), usage({ used: 3 }), out(4)], 10, PERIOD);
    // Output is not held back by pending usage, nor is usage flushed by it.
    expect(r.facts).toEqual([out(4)]);
    r = coalesce(r.state, tool('t'), 20, PERIOD);
    expect(r.facts).toEqual([tool('t')]);
    r = coalesce(r.state, usage({ cost: { amount: 1, currency: 'USD' } }), 30, PERIOD);
    expect(nextFlushAt(r.state, PERIOD)).toBe(PERIOD);
    expect(flushDue(r.state, PERIOD - 1, PERIOD).facts).toEqual([]);
    r = flushDue(r.state, PERIOD, PERIOD);
    expect(r.facts).toEqual([usage({ used: 3, cost: { amount: 1, currency: 'USD' } })]);
    expect(nextFlushAt(r.state, PERIOD)).toBeUndefined();
  });

  it('sends the pending report just before the turn ends, after pending output', () => {
    let r = coalesceAll(
      initialCoalesceState(),
      [usage({ used: 1 }), out(1), usage({ used: 2 }), out(2)],
      0,
      PERIOD,
    );
    expect(r.facts).toEqual([usage({ used: 1 }), out(1)]);
    r = coalesceAll(r.state, [usage({ tokens: { total: 9 } }), ended], 5, PERIOD);
    expect(r.facts).toEqual([out(2), usage({ used: 2, tokens: { total: 9 } }), ended]);
    expect(flushAll(r.state, 6).facts).toEqual([]);
  });

  it('is due at the earlier of pending output and pending usage, and flushAll ends both', () => {
    let r = coalesceAll(initialCoalesceState(), [out(1), usage({ used: 1 })], 0, 100);
    r = coalesce(r.state, usage({ used: 2 }), 50, 100);
    r = coalesce(r.state, out(2), 60, 100);
    expect(nextFlushAt(r.state, 100)).toBe(100);
    r = coalesce(r.state, out(3), 120, 100);
    // No timer flushed them: both are due now, output first.
    expect(flushDue(r.state, 120, 100).facts).toEqual([out(5), usage({ used: 2 })]);
    expect(flushAll(r.state, 120).facts).toEqual([out(5), usage({ used: 2 })]);
  });

  it('at every turn end and at the end, what was passed on adds up to what was reported', () => {
    type U = { kind: 'usage'; used: number; dt: number } | { kind: 'end' | 'tick'; dt: number };
    const stepU: fc.Arbitrary<U> = fc.oneof(
      fc.record({ kind: fc.constant('usage' as const), used: fc.nat(1_000), dt: fc.nat(120) }),
      fc.record({ kind: fc.constantFrom('end' as const, 'tick' as const), dt: fc.nat(120) }),
    );
    fc.assert(
      fc.property(fc.array(stepU, { maxLength: 60 }), fc.integer({ min: 1, max: 300 }), (us, p) => {
        let s = initialCoalesceState();
        let now = 0;
        let reported: number | undefined;
        let passed: number | undefined;
        let lastAt: number | undefined;
        const take = (facts: FactBody[], forced: boolean) => {
          for (const f of facts) {
            if (f.type !== 'usage.reported') continue;
            if (!forced && lastAt !== undefined) expect(now - lastAt).toBeGreaterThanOrEqual(p);
            lastAt = now;
            passed = f.data.used ?? passed;
          }
        };
        for (const u of us) {
          now += u.dt;
          if (u.kind === 'tick') {
            const r = flushDue(s, now, p);
            s = r.state;
            take(r.facts, false);
            continue;
          }
          if (u.kind === 'usage') reported = u.used;
          const r = coalesce(s, u.kind === 'usage' ? usage({ used: u.used }) : ended, now, p);
          s = r.state;
          take(r.facts, u.kind === 'end');
          if (u.kind === 'end') expect(passed).toBe(reported);
        }
        const r = flushAll(s, now);
        take(r.facts, true);
        expect(passed).toBe(reported);
      }),
      { numRuns: 300 },
    );
  });
});
