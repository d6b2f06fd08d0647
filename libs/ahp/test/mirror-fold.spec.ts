import fc from 'fast-check';
import { taskView } from '@baton/activity';
import type { BackgroundWork, SessionView, Update } from '@baton/protocol';
import { CLAUDE_CAPS, Owner } from '@baton/testing';
import {
  ChatMirror,
  reduceBackgroundWork,
  type ChatAction,
  type ChatWithBackgroundWork,
} from '../src';

const NOW = '2026-11-30T00:00:00.000Z';

type Op =
  | { kind: 'start'; work: number; shell: boolean }
  | { kind: 'finish'; work: number }
  | { kind: 'restart' }
  | { kind: 'prompt'; n: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('start' as const), work: fc.nat(5), shell: fc.boolean() }),
  fc.record({ kind: fc.constant('finish' as const), work: fc.nat(5) }),
  fc.constant({ kind: 'restart' as const }),
  fc.record({ kind: fc.constant('prompt' as const), n: fc.nat(1000) }),
);

/** Plays ops through the real fold; returns every update and the session's view after each op. */
function play(ops: Op[]): { updates: Update[][]; views: (SessionView | undefined)[] } {
  const o = new Owner('t1');
  let generation = 1;
  let x = o.execution('s1', 'e1', generation);
  x.start(CLAUDE_CAPS);
  const updates: Update[][] = [];
  const views: (SessionView | undefined)[] = [];
  for (const step of ops) {
    const before = o.updates.length;
    if (step.kind === 'start') {
      if (step.shell) x.shell(`w${step.work}`);
      else x.subagent(`w${step.work}`);
    } else if (step.kind === 'finish') x.finished(`w${step.work}`);
    else if (step.kind === 'restart') {
      x.end();
      generation += 1;
      x = o.execution('s1', `e${generation}`, generation);
      x.start(CLAUDE_CAPS);
    } else o.submit('s1', `k${step.n}`);
    updates.push(o.updates.slice(before));
    views.push(taskView(o.state).sessions.find((s) => s.sessionId === 's1'));
  }
  return { updates, views };
}

function reduce(state: ChatWithBackgroundWork, actions: ChatAction[]): ChatWithBackgroundWork {
  return actions.reduce((s, a) => reduceBackgroundWork(s, a), state);
}

const byId = (list: readonly BackgroundWork[] | undefined) =>
  [...(list ?? [])].sort((a, b) => a.id.localeCompare(b.id));

describe('ChatMirror (AHP chat channel)', () => {
  it('turns the updates of a session into AHP actions that rebuild its backgroundWork', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const { updates, views } = play(ops);
        const mirror = new ChatMirror('t1', 's1', NOW);
        let chat: ChatWithBackgroundWork = mirror.state();
        expect(chat.backgroundWork).toBeUndefined();
        updates.forEach((batch, i) => {
          for (const u of batch) {
            const actions = mirror.applyGroup([u], NOW);
            for (const a of actions) {
              // Never a Removed for an id the client was not told about.
              if (a.type === 'chat/backgroundWorkRemoved')
                expect(chat.backgroundWork?.some((w) => w.id === a.id)).toBe(true);
            }
            chat = reduce(chat, actions);
          }
          const view = views[i];
          if (view && view.backgroundWork.length > 0) {
            expect(chat.backgroundWork).toEqual(view.backgroundWork);
          } else expect(chat.backgroundWork ?? []).toEqual([]);
        });
      }),
      { numRuns: 200 },
    );
  });

  it('reconciles a client that missed updates with the current view', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 40 }), fc.nat(), (ops, cutAt) => {
        const { views } = play(ops);
        const cut = views[cutAt % views.length];
        const last = views[views.length - 1];
        const mirror = new ChatMirror('t1', 's1', NOW);
        mirror.sync(cut, NOW);
        let chat: ChatWithBackgroundWork = mirror.state();
        const actions = mirror.sync(last, NOW);
        chat = reduce(chat, actions);
        expect(byId(chat.backgroundWork as BackgroundWork[])).toEqual(byId(last?.backgroundWork));
        // Reconciling again says nothing: the mirror is what the client has.
        expect(mirror.sync(last, NOW)).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });

  it('sends activity and queue changes as x-baton actions, once per change', () => {
    const mirror = new ChatMirror('t1', 's1', NOW);
    const activity = {
      state: 'idle' as const,
      foregroundActivity: null,
      activeSubagentCount: 0,
      supportsSteering: false,
      runningGeneration: null,
      admission: 'coarse' as const,
      attention: null,
    };
    const u = (seq: number): Update => ({
      v: 1,
      taskId: 't1',
      seq,
      type: 'session.activity',
      data: { sessionId: 's1', ...activity },
    });
    expect(mirror.applyGroup([u(1)], NOW)).toEqual([{ type: 'x-baton/sessionActivity', activity }]);
    expect(mirror.applyGroup([u(2)], NOW)).toEqual([]);
    expect(
      mirror.applyGroup([{ ...u(3), data: { ...u(3).data, sessionId: 'other' } } as Update], NOW),
    ).toEqual([]);
    const state = mirror.state();
    expect(state._meta).toEqual({ 'x-baton': { taskId: 't1', sessionId: 's1', activity } });
  });
});
