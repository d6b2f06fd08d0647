import fc from 'fast-check';
import type { Capabilities, StreamEntry } from '@baton/protocol';
import {
  SETTLED_PROMPTS_KEPT,
  decide,
  evolve,
  fold,
  initialTaskState,
  promptIdOfKey,
  promptOf,
  taskView,
  toolOwnership,
  type Timer,
} from '../src';
import { decide as refDecide } from './reference/decide';
import { fold as refFold } from './reference/fold';
import { initialTaskState as refInitialTaskState } from './reference/state';
import { taskView as refTaskView } from './reference/views';
import { CLAUDE_CAPS, GENERIC_CAPS, Owner } from './owner';

/**
 * The optimized fold against the naive one it replaced (test/reference: the domain core as it was
 * before the performance work, which recomputed and diffed the views on every entry and kept every
 * remembered prompt in full records). Same stream in, same updates out, same views and the same
 * decisions after every entry. The generator makes long prompt histories (hundreds of prompts per
 * session, so the memory of settled prompts overflows and retried keys hit both remembered and
 * forgotten prompts), tool lineage that piles up, and the churn of executions, claims and queues.
 */
const CAPS: Capabilities[] = [
  CLAUDE_CAPS,
  GENERIC_CAPS,
  { ...CLAUDE_CAPS, unambiguousCompletionKinds: ['subagent'] },
  { ...GENERIC_CAPS, promptQueueing: true },
];

const action = fc.oneof(
  { weight: 2, arbitrary: fc.record({ t: fc.constant('start' as const), caps: fc.nat(3) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('end' as const),
      reason: fc.constantFrom('completed', 'failed', 'crashed', 'cancelled') as fc.Arbitrary<
        'completed' | 'failed' | 'crashed' | 'cancelled'
      >,
      lost: fc.boolean(),
    }),
  },
  {
    weight: 18,
    arbitrary: fc.record({
      t: fc.constant('submit' as const),
      // Mostly fresh keys; some retries of a key some way back (remembered or forgotten by now).
      back: fc.oneof(
        { weight: 4, arbitrary: fc.constant(-1) },
        { weight: 1, arbitrary: fc.nat(2 * SETTLED_PROMPTS_KEPT + 8) },
      ),
      origin: fc.constantFrom('human', 'human', 'wakeup', 'agent') as fc.Arbitrary<'human'>,
    }),
  },
  {
    weight: 8,
    arbitrary: fc.record({
      t: fc.constant('dispatch' as const),
      ok: fc.constantFrom(true, true, true, false),
      steer: fc.boolean(),
    }),
  },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('output' as const) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('idle' as const),
      origin: fc.constantFrom('human', 'human', 'task-notification'),
      stale: fc.constantFrom(false, false, false, true),
    }),
  },
  { weight: 6, arbitrary: fc.record({ t: fc.constant('turnEnd' as const), stale: fc.boolean() }) },
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('tool' as const),
      id: fc.nat(40),
      parent: fc.nat(6),
      evidence: fc.constantFrom(undefined, 'foreground', 'background') as fc.Arbitrary<
        'foreground' | 'background' | undefined
      >,
      status: fc.constantFrom(undefined, 'in_progress', 'completed', 'failed') as fc.Arbitrary<
        'completed' | undefined
      >,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('bgStart' as const),
      n: fc.nat(3),
      kind: fc.constantFrom('subagent', 'shell', 'monitor'),
      attested: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('bgEnd' as const),
      n: fc.nat(3),
      how: fc.constantFrom('work', 'tool', 'kind', 'candidates'),
      candidates: fc.uniqueArray(
        fc.tuple(fc.constantFrom('subagent', 'shell', 'monitor'), fc.nat(3)),
        { minLength: 1, maxLength: 4, selector: ([k, n]) => `${k}${n}` },
      ),
      mayBeNone: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('yield' as const), n: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('late' as const) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constantFrom('cancelEntry' as const, 'sendNow' as const),
      back: fc.nat(12),
      byId: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('autoRun' as const), on: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('cancel' as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('configure' as const),
      admission: fc.constantFrom('coarse', 'handoff') as fc.Arbitrary<'coarse'>,
      steering: fc.boolean(),
      capacity: fc.constantFrom(0, 3, 10),
      abandonedTurn: fc.constantFrom(undefined, 'stop_execution', 'continue') as fc.Arbitrary<
        'continue' | undefined
      >,
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('reset' as const) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('watchdog' as const) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('stall' as const) }) },
  // Issue 14: liveness and the task's lifecycle.
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant('forceRelease' as const), why: fc.boolean() }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('request' as const),
      // The next execution (mostly), the live one (a request that raced its start), another one.
      which: fc.constantFrom('next', 'next', 'next', 'live', 'other'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ t: fc.constant('startTimeout' as const), stale: fc.boolean() }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('cancelGrace' as const),
      stale: fc.boolean(),
      cancelFirst: fc.boolean(),
    }),
  },
  {
    // Commands that reach the owner together, decided in one batch (task-wide ones first).
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('batch' as const),
      op: fc.constantFrom(
        'task.archive',
        ...Array.from({ length: 4 }, () => 'task.unarchive' as const),
      ) as fc.Arbitrary<'task.archive' | 'task.unarchive'>,
      then: fc.constantFrom('session.reset', 'session.force_release', 'execution.request'),
    }),
  },
  // A prompt the agent never starts: the watchdog finds it silent since dispatch.
  { weight: 1, arbitrary: fc.record({ t: fc.constant('silent' as const) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('quiet' as const), stale: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('afterTurn' as const) }) },
  {
    // A human prompt over a yield, and the claim's dispatch fails after the held-open turn moved.
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('handoff' as const),
      n: fc.nat(3),
      meanwhile: fc.constantFrom('none', 'output', 'idle', 'outputIdle', 'end', 'release'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('task' as const),
      op: fc.constantFrom(
        'task.archive',
        ...Array.from({ length: 9 }, () => 'task.unarchive' as const),
      ) as fc.Arbitrary<'task.archive' | 'task.unarchive'>,
    }),
  },
);
const step = fc.record({
  session: fc.constantFrom('s1', 's1', 's1', 's1', 's2'),
  action,
  deleteRarely: fc.nat(1500),
  /** The task itself is deleted in about one history in five: everything after meets a tombstone. */
  deleteTaskRarely: fc.noBias(fc.nat(2500)),
  /** What the worker does about an execution it is told to stop: later, stop it, or also restart. */
  worker: fc.nat(5),
});
type Step = typeof step extends fc.Arbitrary<infer S> ? S : never;
const history = fc.array(step, { minLength: 400, maxLength: 800 });

/** Plays steps through an owner (the optimized fold and decide) and returns the stream it wrote. */
function play(steps: readonly Step[]): readonly StreamEntry[] {
  const owner = new Owner();
  const gens: Record<string, number> = {};
  const keys: Record<string, string[]> = {};
  let fresh = 0;
  owner.command('s1', 'session.configure', { admission: 'handoff', abandonedTurn: 'continue' });
  owner.command('s2', 'session.configure', { steering: true, queueCapacity: 0 });
  for (const { session: sid, action: a, deleteRarely, deleteTaskRarely, worker } of steps) {
    const x = owner.state.sessions[sid]?.execution;
    if (x && x.phase !== 'ended' && x.stopping !== null && worker > 0) {
      owner.execution(sid, x.id, x.generation).end('cancelled');
      if (worker >= 2) {
        gens[sid] = (gens[sid] ?? 0) + 1;
        owner.execution(sid, `${sid}-e${gens[sid]}`, gens[sid]).start(CAPS[worker - 2]);
      }
    }
    const s = owner.state.sessions[sid];
    const gen = gens[sid] ?? 0;
    const exec = (g: number) => owner.execution(sid, `${sid}-e${g}`, g);
    const live = exec(gen);
    const used = (keys[sid] ??= []);
    if (deleteRarely === 0) owner.command(sid, 'session.delete', {});
    if (deleteTaskRarely === 0) owner.taskCommand('task.delete');
    if (
      gen === 0 &&
      a.t !== 'start' &&
      a.t !== 'submit' &&
      a.t !== 'configure' &&
      a.t !== 'request' &&
      a.t !== 'startTimeout' &&
      a.t !== 'task'
    ) {
      gens[sid] = 1;
      exec(1).start(CAPS[0]);
      continue;
    }
    switch (a.t) {
      case 'start':
        gens[sid] = gen + 1;
        exec(gen + 1).start(CAPS[a.caps]);
        break;
      case 'end':
        if (a.lost)
          owner.decideNow({
            type: 'execution_lease_expired',
            sessionId: sid,
            executionId: `${sid}-e${gen}`,
          });
        else live.end(a.reason);
        break;
      case 'submit': {
        const key =
          a.back >= 0 && used.length > 0
            ? used[Math.max(0, used.length - 1 - a.back)]!
            : `k${++fresh}`;
        if (!used.includes(key)) used.push(key);
        owner.submit(sid, key, a.origin, `${sid}-p${++fresh}`);
        break;
      }
      case 'dispatch': {
        const claim = (a.steer ? s?.steer : null) ?? s?.turn ?? s?.steer;
        if (!claim) live.dispatch('never-claimed', 99);
        else if (a.ok) live.dispatch(claim.promptId, claim.generation);
        else
          live.fact('prompt.dispatch_failed', {
            promptId: claim.promptId,
            admissionGeneration: claim.generation,
            error: 'x',
          });
        break;
      }
      case 'output':
        live.output();
        break;
      case 'idle':
        live.idle(a.origin, a.stale ? 0 : s?.turn?.generation);
        break;
      case 'turnEnd':
        live.endTurn(
          a.stale || !s?.turn ? Math.max(0, (s?.admissionGeneration ?? 1) - 1) : s.turn.generation,
        );
        break;
      case 'tool':
        live.fact(a.status === undefined ? 'tool.started' : 'tool.updated', {
          toolCallId: `tool-${a.id}`,
          ...(a.parent < 3 ? { parentToolCallId: `tool-${a.parent}` } : {}),
          ...(a.evidence ? { ownership: a.evidence } : {}),
          ...(a.status ? { status: a.status } : {}),
        });
        break;
      case 'bgStart': {
        const id = `${a.kind}:${sid}-e${gen}:${a.n}`;
        const base = { id, label: id, startedAt: '2026-11-30T00:00:00Z' };
        live.fact('background.started', {
          attested: a.attested,
          toolCallId: `tool-${a.n}`,
          work:
            a.kind === 'subagent'
              ? { ...base, kind: 'subagent' as const, chat: `ahp-chat:/${id}` }
              : a.kind === 'shell'
                ? { ...base, kind: 'shell' as const, command: 'make' }
                : { ...base, kind: a.kind },
        });
        break;
      }
      case 'bgEnd':
        live.fact(
          'background.ended',
          a.how === 'work'
            ? { workId: `subagent:${sid}-e${gen}:${a.n}`, status: 'completed' }
            : a.how === 'tool'
              ? { toolCallId: `tool-${a.n}`, status: 'completed' }
              : a.how === 'candidates'
                ? {
                    status: 'unknown',
                    candidates: a.candidates.map(([k, n]) => `${k}:${sid}-e${gen}:${n}`),
                    ...(a.mayBeNone ? { mayBeNone: true } : {}),
                  }
                : { kind: 'subagent', status: 'completed' },
        );
        break;
      case 'yield':
        if (s?.turn) {
          live.subagent(`subagent:${sid}-e${gen}:${a.n}`, true, `tool-${a.n}`);
          live.idle('human', s.turn.generation);
        }
        break;
      case 'handoff': {
        const t = s?.turn;
        if (!t) break;
        if (t.phase === 'claimed') live.dispatch(t.promptId, t.generation);
        live.subagent(`subagent:${sid}-e${gen}:${a.n}`, true, `tool-${a.n}`);
        live.idle('human', t.generation);
        owner.submit(sid, `k${++fresh}`, 'human', `${sid}-p${++fresh}`);
        const claim = owner.state.sessions[sid]?.turn;
        if (!claim || claim.mode !== 'handoff' || claim.phase !== 'claimed') break;
        if (a.meanwhile === 'output' || a.meanwhile === 'outputIdle') live.output();
        if (a.meanwhile === 'idle' || a.meanwhile === 'outputIdle')
          live.idle('human', t.generation);
        if (a.meanwhile === 'end') live.endTurn(t.generation);
        if (a.meanwhile === 'release')
          owner.command(sid, 'queue.send_now', {
            promptId: owner.state.sessions[sid]?.queue[0] ?? claim.promptId,
          });
        else
          live.fact('prompt.dispatch_failed', {
            promptId: claim.promptId,
            admissionGeneration: claim.generation,
            error: 'x',
          });
        break;
      }
      case 'late':
        if (gen > 1) {
          const old = exec(gen - 1);
          old.output();
          old.fact('tool.started', { toolCallId: 'tool-1', ownership: 'foreground' });
          old.subagent(`subagent:${sid}-e${gen - 1}:late`);
          old.endTurn(s?.turn?.generation ?? 1);
        }
        break;
      case 'cancelEntry':
      case 'sendNow': {
        const promptId = a.byId
          ? (s?.queue[a.back % Math.max(1, s.queue.length)] ?? `${sid}-unknown`)
          : `${sid}-p${Math.max(1, fresh - a.back)}`;
        if (a.t === 'cancelEntry') owner.command(sid, 'queue.cancel', { promptId });
        else
          owner.command(sid, 'queue.send_now', {
            promptId,
            ...(a.back % 3 === 0 ? {} : { observedGeneration: s?.turn?.generation ?? 0 }),
          });
        break;
      }
      case 'autoRun':
        owner.command(sid, 'queue.set_auto_run', { enabled: a.on });
        break;
      case 'cancel':
        owner.command(sid, 'session.cancel', {});
        break;
      case 'configure':
        owner.command(sid, 'session.configure', {
          admission: a.admission,
          steering: a.steering,
          queueCapacity: a.capacity,
          ...(a.abandonedTurn ? { abandonedTurn: a.abandonedTurn } : {}),
        });
        break;
      case 'forceRelease':
        owner.command(sid, 'session.force_release', a.why ? { reason: 'stuck' } : {});
        break;
      case 'request':
        owner.command(sid, 'execution.request', {
          executionId:
            a.which === 'next'
              ? `${sid}-e${gen + 1}`
              : a.which === 'live'
                ? `${sid}-e${gen}`
                : `${sid}-x${fresh}`,
        });
        break;
      case 'startTimeout':
        owner.decideNow({
          type: 'execution_start',
          sessionId: sid,
          executionId: a.stale || !s?.requested ? `${sid}-e${gen}` : s.requested.executionId,
        });
        break;
      case 'cancelGrace': {
        if (!s?.turn) break;
        const { generation } = s.turn;
        if (a.cancelFirst && s.turn.phase === 'dispatched' && !s.turn.cancel)
          owner.command(sid, 'session.cancel', {});
        owner.decideNow({
          type: 'cancel_grace',
          sessionId: sid,
          admissionGeneration: generation - (a.stale ? 1 : 0),
        });
        break;
      }
      case 'batch':
        owner.autoDecide = false;
        owner.submit(sid, `k${++fresh}`, 'human', `${sid}-p${++fresh}`);
        owner.taskCommand(a.op);
        owner.submit(sid, `k${++fresh}`, 'agent', `${sid}-p${++fresh}`);
        if (a.then === 'execution.request')
          owner.command(sid, a.then, { executionId: `${sid}-e${gen + 1}` });
        else owner.command(sid, a.then, {});
        owner.autoDecide = true;
        owner.decideNow();
        break;
      case 'silent': {
        const t = s?.turn;
        if (!t) break;
        if (t.phase === 'claimed') live.dispatch(t.promptId, t.generation);
        owner.decideNow({ type: 'watchdog', sessionId: sid, admissionGeneration: t.generation });
        break;
      }
      case 'quiet':
        owner.decideNow({
          type: 'quiet',
          sessionId: sid,
          foregroundEpoch: (s?.foregroundEpoch ?? 0) - (a.stale ? 1 : 0),
        });
        break;
      case 'afterTurn':
        // The agent carries on after its turn ended: output no turn holds, which decays.
        if (s?.turn) live.endTurn(s.turn.generation);
        live.output();
        break;
      case 'task':
        owner.taskCommand(a.op);
        break;
      case 'reset':
        owner.command(sid, 'session.reset', {});
        break;
      case 'watchdog':
      case 'stall':
        if (s?.turn) {
          if (a.t === 'stall') live.output();
          owner.decideNow({
            type: 'watchdog',
            sessionId: sid,
            admissionGeneration: s.turn.generation,
          });
        }
        break;
    }
  }
  return owner.entries;
}

/** Folds the stream through both cores, comparing what each publishes and decides after every entry. */
function compare(entries: readonly StreamEntry[]): void {
  let st = initialTaskState('t1');
  let ref = refInitialTaskState('t1');
  const promptIds = new Set<string>();
  const keys = new Set<string>();
  // Compared as JSON first (cheap), with expect only on a difference (a readable diff).
  const same = (what: string, a: unknown, b: unknown) => {
    if (JSON.stringify(a) !== JSON.stringify(b)) expect([what, a]).toEqual([what, b]);
  };
  entries.forEach((e, i) => {
    const f = fold(st, e);
    const r = refFold(ref, e);
    st = f.state;
    ref = r.state;
    same(`updates of entry ${i} (${e.type})`, f.updates, r.updates);
    same(`task view after entry ${i}`, taskView(st), refTaskView(ref));
    same(`decisions after entry ${i}`, decide(st), refDecide(ref));
    if (e.type === 'prompt.submit') {
      promptIds.add(e.data.promptId);
      keys.add(e.data.idempotencyKey);
    }
    // What the sessions know of each tool and prompt, read through the new representation.
    for (const sid of 'sessionId' in e ? [e.sessionId] : Object.keys(st.sessions)) {
      const ns = st.sessions[sid]!;
      const rs = ref.sessions[sid]!;
      for (let t = 0; t <= 40; t++)
        same(
          `ownership of tool-${t} after entry ${i}`,
          toolOwnership(ns, `tool-${t}`),
          rs.tools[`tool-${t}`],
        );
      for (const id of promptIds)
        same(`prompt ${id} after entry ${i}`, promptOf(ns, id)?.status, rs.prompts[id]?.status);
      for (const k of keys)
        same(`key ${k} after entry ${i}`, promptIdOfKey(ns, k), rs.promptByKey[k]);
    }
    for (const s of Object.values(st.sessions)) {
      const timers: Timer[] = [
        { type: 'execution_lease_expired', sessionId: s.id, executionId: s.execution?.id ?? '-' },
        { type: 'quiet', sessionId: s.id, foregroundEpoch: s.foregroundEpoch },
        { type: 'quiet', sessionId: s.id, foregroundEpoch: s.foregroundEpoch - 1 },
        { type: 'execution_start', sessionId: s.id, executionId: s.requested?.executionId ?? '-' },
        { type: 'execution_start', sessionId: s.id, executionId: s.execution?.id ?? '-' },
      ];
      if (s.turn) {
        const admissionGeneration = s.turn.generation;
        timers.push({ type: 'watchdog', sessionId: s.id, admissionGeneration });
        timers.push({ type: 'cancel_grace', sessionId: s.id, admissionGeneration });
      }
      for (const t of timers)
        same(`${t.type} decisions after entry ${i}`, decide(st, t), refDecide(ref, t));
    }
  });
  // A snapshot of the optimized state restores to the same behaviour.
  expect(JSON.parse(JSON.stringify(st))).toEqual(st);
}

describe('the optimized fold against the naive reference', () => {
  it('publishes the same updates and decides the same over long generated histories', () => {
    fc.assert(
      fc.property(history, (steps) => {
        compare(play(steps));
      }),
      { numRuns: 50, endOnFailure: true },
    );
  });

  it('the generator overflows the memory of settled prompts and retries keys on both sides of it', () => {
    let overflowed = 0;
    let retriedForgotten = 0;
    let retriedRemembered = 0;
    fc.assert(
      fc.property(history, (steps) => {
        const entries = play(steps);
        const settled = new Map<string, number>();
        for (const e of entries) {
          if (e.type === 'prompt.admitted' || e.type === 'prompt.rejected')
            settled.set(e.sessionId, (settled.get(e.sessionId) ?? 0) + 1);
        }
        if ([...settled.values()].some((n) => n > SETTLED_PROMPTS_KEPT + 16)) overflowed++;
        const decided = new Set<string>();
        for (const e of entries) {
          if (
            e.type === 'prompt.admitted' ||
            e.type === 'prompt.queued' ||
            e.type === 'prompt.rejected'
          )
            decided.add(e.data.promptId);
        }
        const seen = new Set<string>();
        for (const e of entries) {
          if (e.type !== 'prompt.submit') continue;
          const k = `${e.sessionId}/${e.data.idempotencyKey}`;
          // A retry under a remembered key makes no new prompt; under a forgotten one it does.
          if (seen.has(k)) {
            if (decided.has(e.data.promptId)) retriedForgotten++;
            else retriedRemembered++;
          }
          seen.add(k);
        }
      }),
      { numRuns: 10, seed: 7 },
    );
    expect(overflowed).toBeGreaterThanOrEqual(4);
    expect(retriedForgotten).toBeGreaterThan(0);
    expect(retriedRemembered).toBeGreaterThan(0);
  });

  it("the generator reaches issue 14's entries: task lifecycle, force-release, execution requests, every new timer, both abandoned-turn policies", () => {
    const seen = new Map<string, number>();
    const count = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1);
    fc.assert(
      fc.property(history, (steps) => {
        const entries = play(steps);
        let st = initialTaskState('t1');
        for (const e of entries) {
          count(e.type);
          if (e.type === 'turn.abandoned') count(`turn.abandoned then ${e.data.then}`);
          if (e.type === 'prompt.rejected' || e.type === 'command.rejected')
            count(`${e.type} ${e.data.reason}`);
          const s = 'sessionId' in e ? st.sessions[e.sessionId] : undefined;
          // A handoff claim that never reached the agent gives back the turn it was claimed over.
          if (
            (e.type === 'prompt.dispatch_failed' || e.type === 'prompt.released') &&
            s?.turn?.promptId === e.data.promptId &&
            s.turn.predecessor
          )
            count('held-open turn restored');
          const before = st;
          st = evolve(st, e);
          for (const [id, after] of Object.entries(st.sessions)) {
            const was = before.sessions[id];
            if (after.execution?.stopping && !was?.execution?.stopping)
              count(`stopping ${after.execution.stopping}`);
          }
        }
      }),
      { numRuns: 20, seed: 7 },
    );
    const wanted = [
      'task.archive',
      'task.archived',
      'task.unarchive',
      'task.unarchived',
      'task.delete',
      'task.deleted',
      'task.command_rejected',
      'prompt.rejected task_archived',
      'prompt.rejected task_deleted',
      'command.rejected task_archived',
      'command.rejected task_deleted',
      'session.force_release',
      'session.force_released',
      'execution.request',
      'execution.requested',
      'execution.request_expired',
      'turn.cancel_timed_out',
      'foreground.quiesced',
      'turn.stalled',
      'turn.abandoned then continue',
      'turn.abandoned then stop_execution',
      'held-open turn restored',
      'stopping session_reset',
      'stopping session_deleted',
      'stopping task_archived',
      'stopping task_deleted',
      'stopping cancel_timeout',
      'stopping turn_abandoned',
      'stopping force_released',
    ];
    expect(wanted.filter((what) => !seen.has(what))).toEqual([]);
  });

  it('a decision about a prompt remembered only as settled changes what is remembered, as before', () => {
    const owner = new Owner();
    const x = owner.execution('s1', 'e1', 1);
    x.start();
    const a = owner.submit('s1', 'a');
    x.dispatch(a, 1);
    x.endTurn(1);
    // Not something an owner decides; a stream can still hold it, and both cores must agree.
    owner.append({
      v: 1,
      taskId: 't1',
      sessionId: 's1',
      writer: { role: 'projector', instance: 'p9', seq: 1 },
      type: 'prompt.removed',
      data: { promptId: a, reason: 'cancelled' },
    });
    expect(owner.decisionsFor(a).at(-1)).toEqual({ outcome: 'removed', reason: 'cancelled' });
    compare(owner.entries);
  });

  it('evolve, like fold, refuses an entry of another task', () => {
    expect(() =>
      evolve(initialTaskState('t1'), {
        v: 1,
        taskId: 't2',
        sessionId: 's',
        writer: { role: 'gateway', instance: 'g', seq: 1 },
        type: 'session.reset',
        data: { commandId: 'c' },
      }),
    ).toThrow(/task t2/);
  });
});
