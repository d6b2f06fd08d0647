// The composer says "Send", "Queue" or "unavailable" from the session's view alone. Whatever the
// session went through, that prediction must be what the owner then decides for a human prompt:
// checked against the domain core itself (libs/activity), through the test owner that folds and
// decides exactly as the projector does.
import fc from 'fast-check';
import { sessionView } from '@baton/activity';
import type { PromptOutcome } from '@baton/protocol';
import { CLAUDE_CAPS, GENERIC_CAPS, Owner, playCommon, stepKind } from '@baton/testing';
import { composerMode, type ComposerMode } from '../src/model';

const S = 's1';

const action = fc.oneof(
  stepKind(3, 'start', { claude: fc.boolean() }),
  stepKind(1, 'startOnly'),
  stepKind(1, 'end', {
    reason: fc.constantFrom('completed', 'failed', 'cancelled') as fc.Arbitrary<'completed'>,
  }),
  stepKind(5, 'submit', {
    origin: fc.constantFrom('human', 'human', 'agent', 'wakeup') as fc.Arbitrary<'human'>,
  }),
  stepKind(5, 'dispatch'),
  stepKind(2, 'output'),
  stepKind(4, 'idle'),
  stepKind(3, 'turnEnd'),
  stepKind(4, 'bgStart', {
    n: fc.nat(2),
    kind: fc.constantFrom('shell', 'subagent'),
    attested: fc.boolean(),
  }),
  stepKind(3, 'bgEnd', { n: fc.nat(2) }),
  // A held-open Claude turn yielding to attested background work (where a handoff is possible).
  stepKind(3, 'yield', { n: fc.nat(2) }),
  stepKind(2, 'configure', {
    admission: fc.constantFrom('coarse', 'handoff') as fc.Arbitrary<'coarse'>,
    steering: fc.boolean(),
    capacity: fc.constantFrom(0, 1, 2, 10),
  }),
  stepKind(1, 'autoRun', { enabled: fc.boolean() }),
  stepKind(1, 'cancelHead'),
  stepKind(1, 'sendNowHead'),
  stepKind(1, 'cancel'),
);
type Action = typeof action extends fc.Arbitrary<infer A> ? A : never;

function play(owner: Owner, a: Action, ctx: { gen: number; prompts: number }): void {
  const s = owner.state.sessions[S];
  const live = owner.execution(S, `e${ctx.gen}`, ctx.gen);
  const turn = s?.turn ?? s?.steer ?? null;
  switch (a.t) {
    case 'start':
      ctx.gen++;
      owner.execution(S, `e${ctx.gen}`, ctx.gen).start(a.claude ? CLAUDE_CAPS : GENERIC_CAPS);
      return;
    case 'startOnly':
      ctx.gen++;
      owner
        .execution(S, `e${ctx.gen}`, ctx.gen)
        .fact('execution.started', { startedAt: '2026-11-30T00:00:00Z' });
      return;
    case 'end':
      if (ctx.gen > 0) live.end(a.reason);
      return;
    case 'submit':
      owner.submit(S, `k${++ctx.prompts}`, a.origin);
      return;
    case 'dispatch':
      if (ctx.gen > 0 && turn) live.dispatch(turn.promptId, turn.generation);
      return;
    case 'output':
      if (ctx.gen > 0) live.output();
      return;
    case 'idle':
      if (ctx.gen > 0) live.idle('human', s?.turn?.generation);
      return;
    case 'turnEnd':
      if (ctx.gen > 0 && s?.turn) live.endTurn(s.turn.generation);
      return;
    case 'bgStart':
      if (ctx.gen > 0) {
        const id = `${a.kind}:${ctx.gen}:${a.n}`;
        const base = { id, label: id, startedAt: '2026-11-30T00:00:00Z' };
        live.fact('background.started', {
          attested: a.attested,
          toolCallId: `launch-${a.n}`,
          work:
            a.kind === 'shell'
              ? { ...base, kind: 'shell', command: 'make' }
              : { ...base, kind: 'subagent', chat: `ahp-chat:/${id}` },
        });
      }
      return;
    case 'bgEnd':
      if (ctx.gen > 0)
        live.fact('background.ended', { toolCallId: `launch-${a.n}`, status: 'completed' });
      return;
    case 'yield':
      if (ctx.gen > 0 && s?.turn) {
        live.subagent(`subagent:${ctx.gen}:${a.n}`, true, `launch-${a.n}`);
        live.idle('human', s.turn.generation);
      }
      return;
    case 'configure':
    case 'autoRun':
    case 'cancel':
      playCommon(owner, S, ctx.gen, s, a);
      return;
    case 'cancelHead':
    case 'sendNowHead': {
      const head = s?.queue[0];
      if (!head) return;
      if (a.t === 'cancelHead') owner.command(S, 'queue.cancel', { promptId: head });
      else owner.command(S, 'queue.send_now', { promptId: head });
      return;
    }
  }
}

/** What the owner decides for one more human prompt, on a copy of the task. */
function decideProbe(owner: Owner): PromptOutcome {
  const probe = new Owner(owner.taskId);
  probe.state = structuredClone(owner.state);
  const promptId = probe.submit(S, 'probe', 'human', 'probe-prompt');
  const decision = probe.decisionsFor(promptId)[0];
  if (!decision) throw new Error('the owner did not decide the probe prompt');
  return decision;
}

function agrees(mode: ComposerMode, d: PromptOutcome): boolean {
  switch (mode.kind) {
    case 'send':
      return d.outcome === 'admitted' && d.mode === mode.how;
    case 'queue':
      // A running turn whose execution is not ready queues for `no_execution`: still "Queue".
      return (
        d.outcome === 'queued' &&
        d.position === mode.position &&
        (d.reason === mode.reason || (mode.reason === 'busy' && d.reason === 'no_execution'))
      );
    case 'unavailable':
      return mode.reason === 'queue_full' && d.outcome === 'rejected' && d.reason === 'queue_full';
  }
}

/** Plays generated histories, checking the page's mode against the owner's decision at each step. */
function explore(params: fc.Parameters<[Action[]]>): Set<string> {
  const seen = new Set<string>();
  fc.assert(
    fc.property(fc.array(action, { minLength: 1, maxLength: 40, size: 'max' }), (actions) => {
      const owner = new Owner();
      const ctx = { gen: 0, prompts: 0 };
      owner.command(S, 'session.configure', { admission: 'handoff' });
      for (const a of actions) {
        play(owner, a, ctx);
        const state = owner.state.sessions[S];
        if (!state || state.deleted) continue;
        const view = sessionView(state);
        const mode = composerMode(view, { canPrompt: true, online: true });
        const decision = decideProbe(owner);
        seen.add(mode.kind === 'send' ? `send:${mode.how}` : `${mode.kind}:${mode.reason}`);
        if (!agrees(mode, decision)) {
          throw new Error(
            `the page says ${JSON.stringify(mode)} but the owner decides ${JSON.stringify(decision)}\nview: ${JSON.stringify(view)}`,
          );
        }
      }
    }),
    params,
  );
  return seen;
}

describe("the composer's mode", () => {
  it("predicts the owner's decision for a human prompt in every reachable state", () => {
    explore({ numRuns: 300 });
  });

  it('is checked in every mode the page can show (a fixed seed: handoff is rare in a random 300)', () => {
    const seen = explore({ numRuns: 300, seed: 42 });
    expect([...seen].sort()).toEqual(
      expect.arrayContaining([
        'queue:busy',
        'queue:no_execution',
        'queue:queue_not_empty',
        'send:handoff',
        'send:steer',
        'send:turn',
        'unavailable:queue_full',
      ]),
    );
  });
});
