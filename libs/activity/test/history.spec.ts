import fc from 'fast-check';
import type { ActivityInterval, StreamEntry } from '@baton/protocol';
import { activityLane, entryTime, taskHistory } from '../src';
import { CLAUDE_CAPS, GENERIC_CAPS, Owner, startedSession, runningSession } from '@baton/testing';

/** The stream as Redis would keep it: entry i at t0 + 100·i ms. */
const T0 = 1_800_000_000_000;
const stream = (o: Owner) => o.entries.map((entry, i) => ({ id: `${T0 + 100 * i}-0`, entry }));
const at = (o: Owner) => T0 + 100 * (o.entries.length - 1);
/** Time of the last entry of `type` so far. */
const when = (o: Owner, type: StreamEntry['type']) =>
  T0 + 100 * o.entries.findLastIndex((e) => e.type === type);

describe('task history', () => {
  it('tells a session’s day: generating, background, a queued prompt that waits, a cancel', () => {
    const { o, x } = startedSession(CLAUDE_CAPS);
    const started = when(o, 'execution.started');
    const a = o.submit('s1', 'a');
    x.dispatch(a, 1);
    x.output();
    x.subagent('w1');
    const subagentStart = at(o);
    x.idle('human', 1);
    x.endTurn(1); // the subagent works on: the session is in the background
    const aEnded = when(o, 'turn.ended');
    const b = o.submit('s1', 'b');
    x.dispatch(b, 2);
    const c = o.submit('s1', 'c'); // b runs: c waits in the queue
    const cSubmitted = when(o, 'prompt.submit');
    x.finished('w1');
    const subagentEnd = at(o);
    x.endTurn(2); // b ends: c is admitted, after its wait
    const bEnded = when(o, 'turn.ended');
    const cAdmitted = when(o, 'prompt.admitted');
    x.dispatch(c, 3);
    const cDispatched = at(o);
    o.command('s1', 'session.cancel', {});
    x.endTurn(3, 'cancelled');
    const cEnded = at(o);

    const h = taskHistory('t1', stream(o));
    expect(h.sessions.map((s) => s.sessionId)).toEqual(['s1']);
    const s = h.sessions[0]!;
    expect(s.executions).toEqual([
      { executionId: 'e1', requestedAt: null, start: started, end: null },
    ]);
    expect(s.turns.map((t) => [t.promptId, t.end, t.stopReason])).toEqual([
      [a, aEnded, 'end_turn'],
      [b, bEnded, 'end_turn'],
      [c, cEnded, 'cancelled'],
    ]);
    expect(s.background).toEqual([
      {
        id: 'w1',
        kind: 'subagent',
        label: 'agent w1',
        start: subagentStart,
        end: subagentEnd,
        endedBy: 'identified',
      },
    ]);
    expect(s.prompts.find((p) => p.promptId === c)).toMatchObject({
      submittedAt: cSubmitted,
      decision: 'queued',
      decidedAt: cSubmitted + 100,
      admittedAt: cAdmitted,
      queueWaitMs: cAdmitted - (cSubmitted + 100),
      dispatchedAt: cDispatched,
    });
    expect(s.activity.map((i) => i.state)).toEqual([
      'idle',
      'generating',
      'background',
      'generating',
      // b's end and c's admission are two entries: idle for the moment between them.
      'idle',
      'generating',
      'idle',
    ]);
    expect(s.activity[2]).toMatchObject({ from: aEnded });
  });

  it('a range starts from the state at its start and ends at its end', () => {
    const { o, x, p: a } = runningSession(GENERIC_CAPS, 'a');
    x.output();
    const mid = at(o) + 50;
    x.output();
    x.endTurn(1);
    const h = taskHistory('t1', stream(o), { from: mid });
    const s = h.sessions[0]!;
    // The turn was open when the range began: it starts there.
    expect(s.turns).toEqual([
      { promptId: a, generation: 1, start: mid, end: at(o), stopReason: 'end_turn' },
    ]);
    expect(s.activity[0]).toMatchObject({ from: mid, state: 'generating' });
    expect(s.executions[0]).toMatchObject({ executionId: 'e1', start: mid, end: null });
    // A prompt submitted before the range is not in it.
    expect(s.prompts).toEqual([]);
    const upTo = taskHistory('t1', stream(o), { to: mid });
    expect(upTo.sessions[0]!.turns[0]).toMatchObject({ promptId: a, end: null });
  });

  it('unidentified ends and the execution’s end are told apart from identified ones', () => {
    const { o, x } = startedSession(CLAUDE_CAPS);
    x.shell('sh1', false, 'tc1');
    x.fact('background.ended', { toolCallId: 'tc1', status: 'completed' });
    x.shell('sh2', false);
    x.end('completed');
    const s = taskHistory('t1', stream(o)).sessions[0]!;
    expect(s.background.map((b) => [b.id, b.endedBy])).toEqual([
      ['sh1', 'identified'],
      ['sh2', 'execution'],
    ]);
    expect(s.executions[0]).toMatchObject({ end: at(o), reason: 'completed' });
  });

  it('bounds every list and says so', () => {
    const o = new Owner();
    for (let i = 0; i < 20; i++) o.submit('s1', `k${i}`);
    const h = taskHistory('t1', stream(o), { maxItems: 5 });
    expect(h.sessions[0]!.prompts).toHaveLength(5);
    expect(h.truncated).toBe(true);
  });
});

// Generated histories: any interleaving of a session's life.
type Op =
  | { op: 'submit' }
  | { op: 'dispatch' }
  | { op: 'output' }
  | { op: 'idle' }
  | { op: 'endTurn' }
  | { op: 'subagent' }
  | { op: 'finish' }
  | { op: 'cancel' }
  | { op: 'restart' };
const op: fc.Arbitrary<Op> = fc.constantFrom<Op>(
  { op: 'submit' },
  { op: 'dispatch' },
  { op: 'output' },
  { op: 'idle' },
  { op: 'endTurn' },
  { op: 'subagent' },
  { op: 'finish' },
  { op: 'cancel' },
  { op: 'restart' },
);

function play(ops: Op[]): Owner {
  const o = new Owner();
  let gen = 1;
  let x = o.execution('s1', `e${gen}`, gen);
  x.start(CLAUDE_CAPS);
  let n = 0;
  const work: string[] = [];
  for (const step of ops) {
    const s = o.session('s1');
    switch (step.op) {
      case 'submit':
        o.submit('s1', `k${n++}`);
        break;
      case 'dispatch':
        if (s.turn && s.turn.phase === 'claimed') x.dispatch(s.turn.promptId, s.turn.generation);
        break;
      case 'output':
        x.output();
        break;
      case 'idle':
        x.idle('human', s.admissionGeneration);
        break;
      case 'endTurn':
        if (s.turn) x.endTurn(s.turn.generation);
        break;
      case 'subagent':
        work.push(`w${n++}`);
        x.subagent(work.at(-1)!);
        break;
      case 'finish':
        if (work.length > 0) x.finished(work.shift()!);
        break;
      case 'cancel':
        o.command('s1', 'session.cancel', {});
        break;
      case 'restart':
        x.end('completed');
        work.length = 0;
        gen++;
        x = o.execution('s1', `e${gen}`, gen);
        x.start(CLAUDE_CAPS);
        break;
    }
  }
  return o;
}

const contiguous = (as: ActivityInterval[]) =>
  as.every((a, i) => i === 0 || as[i - 1]!.to === a.from) &&
  as.slice(0, -1).every((a) => a.to !== null);

describe('history over generated histories', () => {
  it('activity is contiguous, ends in what the session shows, and a later range agrees with the whole', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), fc.nat(), (ops, cut) => {
        const o = play(ops);
        const entries = stream(o);
        const whole = taskHistory('t1', entries).sessions[0]!;
        expect(contiguous(whole.activity)).toBe(true);
        expect(whole.activity.at(-1)).toMatchObject({
          ...activityLane(o.session('s1')),
          to: null,
        });
        // Turns never overlap: each ends before the next one starts.
        for (let i = 1; i < whole.turns.length; i++) {
          expect(whole.turns[i - 1]!.end).not.toBeNull();
          expect(whole.turns[i - 1]!.end!).toBeLessThanOrEqual(whole.turns[i]!.start);
        }
        // Seen from any point on, the same intervals, cut at that point.
        const from = T0 + (cut % (entries.length * 100 + 1));
        const part = taskHistory('t1', entries, { from }).sessions[0];
        const expected = whole.activity
          .filter((a) => a.to === null || a.to > from)
          .map((a) => ({ ...a, from: Math.max(a.from, from) }));
        expect(part?.activity ?? []).toEqual(from > at(o) && !part ? [] : expected);
      }),
      {
        numRuns: 200,
        // A range that starts exactly at an entry which changes the lane (found by the property).
        examples: [
          [
            [
              { op: 'submit' },
              { op: 'restart' },
              { op: 'restart' },
              { op: 'subagent' },
              { op: 'cancel' },
              { op: 'output' },
              { op: 'subagent' },
              { op: 'output' },
            ],
            1621376607,
          ],
        ],
      },
    );
  });
});

describe('entryTime', () => {
  it('is the ms part of a stream id, as Number(id.slice(0, id.indexOf("-"))) reads it', () => {
    const id = fc.oneof(
      fc
        .tuple(fc.bigInt({ min: 0n, max: 10n ** 20n }), fc.nat())
        .map(([ms, seq]) => `${ms}-${seq}`),
      fc.string({ unit: fc.constantFrom('0', '1', '9', '-', 'a', ' ', '.', 'e') }),
    );
    fc.assert(
      fc.property(id, (id) => {
        expect(entryTime(id)).toBe(Number(id.slice(0, id.indexOf('-'))));
      }),
      { numRuns: 2_000 },
    );
  });
});
