import fc from 'fast-check';
import { Update, type TaskView } from '@baton/protocol';
import { initialTaskState } from '@baton/activity';
import { applyUpdate, stepUpdate, UpdateGapError } from '../src';
import { expectEveryCaseReached, play, snapshotOf, streams } from '@baton/testing';

const RUNS = { numRuns: 300 };

describe('applyUpdate over the updates libs/activity folds from generated streams', () => {
  it('the generator reaches every update type (or the properties below prove little)', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(streams, (steps) => {
        for (const u of play(steps).owner.updates) {
          seen.add(u.type === 'prompt.decided' ? `decided:${u.data.decision.outcome}` : u.type);
          if (u.type === 'session.activity' && u.data.activeSubagentCount === 0)
            seen.add('count:0');
        }
      }),
      { numRuns: 300, seed: 7 },
    );
    const types = Update.options
      .map((o) => o.shape.type.value)
      .filter((t) => t !== 'prompt.decided');
    expectEveryCaseReached(seen, [
      ...types,
      'decided:admitted',
      'decided:queued',
      'decided:rejected',
      'decided:removed',
    ]);
  });

  it('rebuilds taskView(state) exactly after every entry, from the first snapshot', () => {
    fc.assert(
      fc.property(streams, (steps) => {
        const { checkpoints } = play(steps);
        let view = snapshotOf(initialTaskState('t1'));
        for (const { state, updates } of checkpoints) {
          for (const u of updates) {
            // What the client receives went through the wire schema.
            view = applyUpdate(view, Update.parse(JSON.parse(JSON.stringify(u))));
          }
          expect(view).toEqual(snapshotOf(state));
        }
      }),
      RUNS,
    );
  });

  it('starting from any later snapshot (a resume or a resync) reaches the same final view', () => {
    fc.assert(
      fc.property(streams, fc.nat(), (steps, cut) => {
        const { checkpoints, owner } = play(steps);
        const states = [initialTaskState('t1'), ...checkpoints.map((c) => c.state)];
        let view = snapshotOf(states[cut % states.length]!);
        for (const u of owner.updates) view = applyUpdate(view, u); // earlier ones are duplicates
        expect(view).toEqual(snapshotOf(owner.state));
      }),
      RUNS,
    );
  });

  it('ignores duplicates and reports a gap without changing the view', () => {
    fc.assert(
      fc.property(streams, fc.nat(), (steps, pick) => {
        const { owner } = play(steps);
        const updates = owner.updates;
        if (updates.length < 2) return;
        let view: TaskView = snapshotOf(initialTaskState('t1'));
        const skip = 1 + (pick % (updates.length - 1)); // never the first one
        for (let i = 0; i < skip; i++) {
          view = applyUpdate(view, updates[i]!);
          expect(applyUpdate(view, updates[i]!)).toBe(view);
          if (i > 0) expect(stepUpdate(view, updates[i - 1]!).kind).toBe('duplicate');
        }
        if (skip + 1 < updates.length) {
          const r = stepUpdate(view, updates[skip + 1]!);
          expect(r).toEqual({ kind: 'gap', view, expected: skip + 1 });
          expect(() => applyUpdate(view, updates[skip + 1]!)).toThrow(UpdateGapError);
        }
      }),
      RUNS,
    );
  });
});
