import fc from 'fast-check';
import type { StreamEntry } from '@baton/protocol';
import {
  activeSubagentCount,
  backgroundWork,
  coarseState,
  decide,
  evolve,
  fold,
  initialTaskState,
  type TaskState,
} from '../src';
import { CLAUDE_CAPS, GENERIC_CAPS, Owner } from './owner';

/**
 * Generated interleavings of facts and commands from several executions of several sessions.
 * Actions are abstract and resolved against the current state, so that most of them are
 * plausible (dispatching the claim that exists) while some are stale or wrong on purpose (a
 * predecessor's late facts, a turn end of an old generation, a dispatch of a prompt never claimed).
 */
const KEYS = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8'];

const action = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('start' as const),
      caps: fc.constantFrom(CLAUDE_CAPS, GENERIC_CAPS, {
        ...CLAUDE_CAPS,
        unambiguousCompletionKinds: ['subagent'],
      }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('startOnly' as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('end' as const),
      reason: fc.constantFrom(
        'completed',
        'failed',
        'crashed',
        'cancelled',
      ) as fc.Arbitrary<'completed'>,
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('lost' as const) }) },
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('submit' as const),
      key: fc.constantFrom(...KEYS),
      origin: fc.constantFrom('human', 'human', 'wakeup', 'agent') as fc.Arbitrary<'human'>,
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant('dispatch' as const),
      ok: fc.constantFrom(true, true, true, false),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('output' as const) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant('idle' as const),
      origin: fc.constantFrom('human', 'human', 'human', 'task-notification'),
      stale: fc.constantFrom(false, false, false, true),
    }),
  },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('turnEnd' as const), stale: fc.boolean() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('tool' as const),
      id: fc.nat(4),
      parent: fc.boolean(),
      evidence: fc.constantFrom(undefined, 'foreground', 'background') as fc.Arbitrary<
        'foreground' | undefined
      >,
      done: fc.boolean(),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant('bgStart' as const),
      n: fc.nat(3),
      kind: fc.constantFrom('subagent', 'shell', 'monitor'),
      attested: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('bgEnd' as const),
      n: fc.nat(3),
      identified: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('late' as const) }) },
  // The background-yield pattern of a held-open Claude turn: attested work, then the human idle.
  {
    weight: 3,
    arbitrary: fc.record({ t: fc.constant('yieldToBackground' as const), n: fc.nat(3) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant('cancelEntry' as const), key: fc.constantFrom(...KEYS) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('sendNow' as const),
      key: fc.constantFrom(...KEYS),
      observed: fc.option(fc.nat(4), { nil: undefined }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant('autoRun' as const), enabled: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('cancel' as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('configure' as const),
      admission: fc.constantFrom('coarse', 'handoff') as fc.Arbitrary<'coarse'>,
      steering: fc.boolean(),
      capacity: fc.constantFrom(0, 2, 10),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('reset' as const) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('watchdog' as const) }) },
);
type Action =
  fc.Arbitrary<unknown> extends never
    ? never
    : typeof action extends fc.Arbitrary<infer A>
      ? A
      : never;
const step = fc.record({
  session: fc.constantFrom('s1', 's1', 's2'),
  action,
  deleteRarely: fc.nat(1000),
});
export const scenario = fc.array(step, { minLength: 1, maxLength: 80, size: 'max' });

interface Runner {
  owner: Owner;
  gens: Record<string, number>;
  keyUse: Record<string, number>;
}

export function run(
  steps: fc.Arbitrary<typeof step> extends never
    ? never
    : Array<{ session: string; action: Action; deleteRarely: number }>,
  onStep?: (r: Runner, before: TaskState) => void,
) {
  const owner = new Owner();
  const r: Runner = { owner, gens: {}, keyUse: {} };
  // s1 starts under the handoff policy, s2 under coarse with steering; `configure` steps change them.
  owner.command('s1', 'session.configure', { admission: 'handoff' });
  owner.command('s2', 'session.configure', { steering: true });
  for (const { session: sid, action: a, deleteRarely } of steps) {
    const before = owner.state;
    const s = owner.state.sessions[sid];
    const gen = r.gens[sid] ?? 0;
    const exec = (g: number) => owner.execution(sid, `${sid}-e${g}`, g);
    const live = exec(gen);
    const turn = s?.turn ?? s?.steer ?? null;
    if (deleteRarely === 0) owner.command(sid, 'session.delete', {});
    switch (a.t) {
      case 'start':
      case 'startOnly': {
        r.gens[sid] = gen + 1;
        const x = exec(gen + 1);
        if (a.t === 'start') x.start(a.caps);
        else x.fact('execution.started', { startedAt: '2026-11-30T00:00:00Z' });
        break;
      }
      case 'end':
        if (gen > 0) live.end(a.reason);
        break;
      case 'lost':
        if (gen > 0)
          owner.decideNow({
            type: 'execution_lease_expired',
            sessionId: sid,
            executionId: `${sid}-e${gen}`,
          });
        break;
      case 'submit': {
        // Reusing a key is a client retry: same key, fresh prompt id from another gateway.
        const use = (r.keyUse[`${sid}/${a.key}`] = (r.keyUse[`${sid}/${a.key}`] ?? 0) + 1);
        owner.submit(sid, a.key, a.origin, `${sid}-${a.key}-${use}`);
        break;
      }
      case 'dispatch':
        if (gen > 0 && turn) {
          if (a.ok) live.dispatch(turn.promptId, turn.generation);
          else
            live.fact('prompt.dispatch_failed', {
              promptId: turn.promptId,
              admissionGeneration: turn.generation,
              error: 'x',
            });
        } else if (gen > 0) {
          live.dispatch('never-claimed', 99);
        }
        break;
      case 'output':
        if (gen > 0) live.output();
        break;
      case 'idle':
        if (gen > 0) live.idle(a.origin, a.stale ? 0 : s?.turn?.generation);
        break;
      case 'turnEnd':
        if (gen > 0)
          live.endTurn(
            a.stale || !s?.turn
              ? Math.max(0, (s?.admissionGeneration ?? 1) - 1)
              : s.turn.generation,
          );
        break;
      case 'tool':
        if (gen > 0)
          live.fact(a.done ? 'tool.updated' : 'tool.started', {
            toolCallId: `tool-${a.id}`,
            ...(a.parent ? { parentToolCallId: 'tool-0' } : {}),
            ...(a.evidence ? { ownership: a.evidence } : {}),
            ...(a.done ? { status: 'completed' as const } : {}),
          });
        break;
      case 'bgStart':
        if (gen > 0) {
          const id = `${a.kind}:${sid}-e${gen}:${a.n}`;
          const base = { id, label: id, startedAt: '2026-11-30T00:00:00Z' };
          const work =
            a.kind === 'subagent'
              ? { ...base, kind: 'subagent' as const, chat: `ahp-chat:/${id}` }
              : a.kind === 'shell'
                ? { ...base, kind: 'shell' as const, command: 'make' }
                : { ...base, kind: a.kind };
          live.fact('background.started', {
            attested: a.attested,
            toolCallId: `launch-${a.n}`,
            work,
          });
        }
        break;
      case 'bgEnd':
        if (gen > 0)
          live.fact(
            'background.ended',
            a.identified
              ? { toolCallId: `launch-${a.n}`, status: 'completed' }
              : { kind: 'subagent', status: 'completed' },
          );
        break;
      case 'yieldToBackground':
        if (gen > 0 && s?.turn) {
          live.subagent(`subagent:${sid}-e${gen}:${a.n}`, true, `launch-${a.n}`);
          live.idle('human', s.turn.generation);
        }
        break;
      case 'late':
        if (gen > 1) {
          const old = exec(gen - 1);
          old.output();
          old.subagent(`subagent:${sid}-e${gen - 1}:late`);
          old.endTurn(s?.turn?.generation ?? 1);
          old.end('crashed');
        }
        break;
      case 'cancelEntry':
      case 'sendNow': {
        const promptId = s?.promptByKey[a.key] ?? `${sid}-unknown`;
        if (a.t === 'cancelEntry') owner.command(sid, 'queue.cancel', { promptId });
        else
          owner.command(sid, 'queue.send_now', {
            promptId,
            ...(a.observed !== undefined ? { observedGeneration: a.observed } : {}),
          });
        break;
      }
      case 'autoRun':
        owner.command(sid, 'queue.set_auto_run', { enabled: a.enabled });
        break;
      case 'cancel':
        owner.command(sid, 'session.cancel', {});
        break;
      case 'configure':
        owner.command(sid, 'session.configure', {
          admission: a.admission,
          steering: a.steering,
          queueCapacity: a.capacity,
        });
        break;
      case 'reset':
        owner.command(sid, 'session.reset', {});
        break;
      case 'watchdog':
        if (s?.turn)
          owner.decideNow({
            type: 'watchdog',
            sessionId: sid,
            admissionGeneration: s.turn.generation,
          });
        break;
    }
    onStep?.(r, before);
  }
  return r;
}

const foldAll = (entries: readonly StreamEntry[], from: TaskState = initialTaskState('t1')) =>
  entries.reduce((st, e) => fold(st, e).state, from);
const RUNS = { numRuns: 500 };

describe('properties of the domain core over generated interleavings', () => {
  it('the generator reaches every kind of decision (or the properties below prove little)', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(scenario, (steps) => {
        for (const e of run(steps).owner.entries) {
          seen.add(e.type === 'prompt.admitted' ? `admitted:${e.data.mode}` : e.type);
        }
      }),
      { numRuns: 500, seed: 42 },
    );
    for (const t of [
      'admitted:turn',
      'admitted:handoff',
      'admitted:steer',
      'prompt.queued',
      'prompt.rejected',
      'prompt.released',
      'prompt.removed',
      'prompt.promoted',
      'turn.cancel_requested',
      'command.rejected',
      'execution.lost',
      'turn.stalled',
      'turn.abandoned',
      'session.deleted',
      'prompt.dispatch_failed',
    ]) {
      expect([t, seen.has(t)]).toEqual([t, true]);
    }
  });

  it('1. determinism: folding twice is deep-equal; prefix → JSON snapshot → rest is the same state', () => {
    fc.assert(
      fc.property(scenario, fc.nat(), (steps, cut) => {
        const { owner } = run(steps);
        const entries = owner.entries;
        expect(foldAll(entries)).toEqual(owner.state);
        expect(foldAll(entries)).toEqual(foldAll(entries));
        const k = cut % (entries.length + 1);
        const snapshot = JSON.parse(JSON.stringify(foldAll(entries.slice(0, k)))) as TaskState;
        expect(foldAll(entries.slice(k), snapshot)).toEqual(owner.state);
        // The same updates, under the same sequence numbers, from a replica that replays.
        const replayed: unknown[] = [];
        entries.reduce((st, e) => {
          const f = fold(st, e);
          replayed.push(...f.updates);
          return f.state;
        }, initialTaskState('t1'));
        expect(replayed).toEqual(owner.updates);
        expect(owner.updates.map((u) => u.seq)).toEqual(owner.updates.map((_, i) => i + 1));
        // Deciding is a fixpoint: what was decided and folded needs no further decision.
        expect(decide(owner.state)).toEqual([]);
      }),
      RUNS,
    );
  });

  it('2. no overlap: never two admitted prompts on a session without a boundary between them', () => {
    fc.assert(
      fc.property(scenario, (steps) => {
        const { owner } = run(steps);
        // An independent model of "a prompt holds the foreground", read off the stream.
        const m: Record<
          string,
          {
            live: string | null;
            maxGen: number;
            open: number | null;
            dispatched: boolean;
            yielded: boolean;
            steer: number | null;
            steerDispatched: boolean;
          }
        > = {};
        for (const e of owner.entries) {
          if (!('sessionId' in e)) continue;
          const x = (m[e.sessionId] ??= {
            live: null,
            maxGen: 0,
            open: null,
            dispatched: false,
            yielded: false,
            steer: null,
            steerDispatched: false,
          });
          const fromLive = 'executionId' in e && e.executionId === x.live;
          const close = () =>
            Object.assign(x, {
              open: null,
              dispatched: false,
              yielded: false,
              steer: null,
              steerDispatched: false,
            });
          switch (e.type) {
            case 'execution.started':
              if (e.generation > x.maxGen) {
                x.maxGen = e.generation;
                x.live = e.executionId;
                close();
              }
              break;
            case 'execution.ended':
              if (fromLive) {
                x.live = null;
                close();
              }
              break;
            case 'execution.lost':
              if (e.data.executionId === x.live) {
                x.live = null;
                close();
              }
              break;
            case 'session.deleted':
              x.live = null;
              close();
              break;
            case 'prompt.admitted':
              if (e.data.mode === 'steer') {
                expect(x.steer).toBeNull();
                x.steer = e.data.admissionGeneration;
                x.steerDispatched = false;
                break;
              }
              if (x.open !== null) {
                // The only admission over an open turn: a handoff at its human, generation-matched yield.
                expect(e.data.mode).toBe('handoff');
                expect(x.dispatched && x.yielded).toBe(true);
              }
              Object.assign(x, {
                open: e.data.admissionGeneration,
                dispatched: false,
                yielded: false,
              });
              break;
            case 'prompt.dispatched':
              if (fromLive && e.data.admissionGeneration === x.open) x.dispatched = true;
              if (fromLive && e.data.admissionGeneration === x.steer) x.steerDispatched = true;
              break;
            case 'prompt.dispatch_failed':
              if (fromLive && e.data.admissionGeneration === x.open && !x.dispatched) x.open = null;
              if (fromLive && e.data.admissionGeneration === x.steer && !x.steerDispatched)
                x.steer = null;
              break;
            case 'prompt.released':
              if (e.data.admissionGeneration === x.open) x.open = null;
              break;
            case 'turn.abandoned':
              if (e.data.admissionGeneration === x.open)
                Object.assign(x, { open: null, dispatched: false, yielded: false });
              break;
            case 'turn.ended':
              if (!fromLive) break;
              if (e.data.admissionGeneration === x.steer && e.data.admissionGeneration !== x.open)
                x.steer = null;
              else if (e.data.admissionGeneration === x.open) {
                if (x.steer !== null && x.steerDispatched)
                  Object.assign(x, {
                    open: x.steer,
                    dispatched: true,
                    yielded: false,
                    steer: null,
                  });
                else Object.assign(x, { open: null, dispatched: false, yielded: false });
              }
              break;
            case 'foreground.idle':
              if (
                fromLive &&
                e.data.origin === 'human' &&
                e.data.admissionGeneration === x.open &&
                x.dispatched
              )
                x.yielded = true;
              break;
            case 'foreground.output':
              if (fromLive) x.yielded = false;
              break;
            case 'tool.started':
            case 'tool.updated':
              break;
          }
        }
      }),
      RUNS,
    );
  });

  it('3. nothing lost: every submitted prompt ends admitted, rejected with a reason, or still queued — never dispatched twice', () => {
    fc.assert(
      fc.property(scenario, (steps) => {
        const { owner } = run(steps);
        const firstOfKey = new Map<string, string>();
        const dispatchedOnce = new Set<string>();
        let st = initialTaskState('t1');
        for (const e of owner.entries) {
          if (
            e.type === 'prompt.submit' &&
            !firstOfKey.has(`${e.sessionId}/${e.data.idempotencyKey}`)
          ) {
            firstOfKey.set(`${e.sessionId}/${e.data.idempotencyKey}`, e.data.promptId);
          }
          if (e.type === 'prompt.admitted') expect(dispatchedOnce.has(e.data.promptId)).toBe(false);
          const s = 'sessionId' in e ? st.sessions[e.sessionId] : undefined;
          const claim = s?.turn ?? null;
          const steer = s?.steer ?? null;
          st = evolve(st, e);
          if (e.type === 'prompt.dispatched') {
            const took = [claim, steer].some(
              (c) =>
                c &&
                c.phase === 'claimed' &&
                c.promptId === e.data.promptId &&
                c.generation === e.data.admissionGeneration,
            );
            if (took) dispatchedOnce.add(e.data.promptId);
          }
        }
        const everAdmitted = new Set(
          owner.entries.flatMap((e) => (e.type === 'prompt.admitted' ? [e.data.promptId] : [])),
        );
        for (const [sessionKey, promptId] of firstOfKey) {
          const s = owner.state.sessions[sessionKey.split('/')[0]!]!;
          const record = s.prompts[promptId];
          const last = owner.decisionsFor(promptId).at(-1);
          expect(last).toBeDefined(); // every prompt got an answer
          if (!record) {
            // Forgotten only after it settled: its last answer says how.
            expect(['admitted', 'rejected', 'removed', 'failed', 'cancelled']).toContain(
              last!.outcome,
            );
            continue;
          }
          expect(record.status).not.toBe('pending');
          expect(last!.outcome).toBe(record.status);
          if (record.status === 'queued')
            expect(s.queue.filter((q) => q === promptId)).toHaveLength(1);
          else expect(s.queue).not.toContain(promptId);
          if (record.status === 'admitted') expect(everAdmitted.has(promptId)).toBe(true);
          if (record.status === 'rejected' || record.status === 'removed') {
            expect(last).toHaveProperty('reason');
          }
        }
        // Retried keys never made a second prompt.
        for (const s of Object.values(owner.state.sessions)) {
          for (const id of s.queue) expect(s.prompts[id]?.status).toBe('queued');
          expect(new Set(s.queue).size).toBe(s.queue.length);
        }
        for (const e of owner.entries) {
          if (
            e.type === 'prompt.submit' &&
            firstOfKey.get(`${e.sessionId}/${e.data.idempotencyKey}`) !== e.data.promptId
          ) {
            expect(owner.decisionsFor(e.data.promptId)).toEqual([]);
          }
        }
      }),
      RUNS,
    );
  });

  it('4. no stale liveness: no background registration outlives the end of its execution', () => {
    fc.assert(
      fc.property(scenario, (steps) => {
        run(steps, (r) => {
          for (const s of Object.values(r.owner.state.sessions)) {
            const live = s.execution && s.execution.phase !== 'ended' ? s.execution.id : null;
            for (const w of backgroundWork(s))
              expect(live !== null && w.id.includes(`:${live}:`)).toBe(true);
          }
        });
      }),
      RUNS,
    );
  });

  it('5. counts: activeSubagentCount equals the number of live subagent registrations', () => {
    fc.assert(
      fc.property(scenario, (steps) => {
        run(steps, (r) => {
          for (const s of Object.values(r.owner.state.sessions)) {
            expect(activeSubagentCount(s)).toBe(
              backgroundWork(s).filter((w) => w.kind === 'subagent').length,
            );
          }
          const lastCount = new Map<string, number>();
          for (const u of r.owner.updates)
            if (u.type === 'session.activity')
              lastCount.set(u.data.sessionId, u.data.activeSubagentCount);
          for (const s of Object.values(r.owner.state.sessions)) {
            if (!s.deleted && lastCount.has(s.id))
              expect(lastCount.get(s.id)).toBe(activeSubagentCount(s));
          }
        });
      }),
      RUNS,
    );
  });

  it('6. coarse policy: a running session never admits a prompt', () => {
    fc.assert(
      fc.property(scenario, (steps) => {
        const { owner } = run(steps);
        let st = initialTaskState('t1');
        for (const e of owner.entries) {
          if (e.type === 'prompt.admitted') {
            const s = st.sessions[e.sessionId]!;
            if (s.config.admission === 'coarse' && !s.config.steering)
              expect(coarseState(s)).not.toBe('running');
            if (e.data.mode === 'turn') expect(coarseState(s)).not.toBe('running');
          }
          st = evolve(st, e);
        }
      }),
      RUNS,
    );
  });
});
