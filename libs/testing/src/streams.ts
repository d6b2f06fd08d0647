// Generated task streams for the reducer's property tests: abstract steps resolved against the
// current state and played through libs/activity's in-memory owner (fold + decide), so the
// updates are exactly those the projector publishes for the same entries.
import fc from 'fast-check';
import type { TaskView, Update } from '@baton/protocol';
import { taskView, type SessionState, type TaskState } from '@baton/activity';
import { stepUpdate } from '@baton/client';
import { CLAUDE_CAPS, GENERIC_CAPS, Owner, PERMISSION_OPTIONS } from './owner';

/**
 * One kind of generated step, `{ t, ...fields }`, drawn `weight` times as often as a kind of
 * weight 1. The fields are drawn in the order given, after `t`, so a seed draws the same steps as
 * the record written out.
 */
export function stepKind<T extends string, F extends object = Record<never, never>>(
  weight: number,
  t: T,
  fields?: { [K in keyof F]: fc.Arbitrary<F[K]> },
): fc.WeightedArbitrary<{ t: T } & F> {
  const record = fc.record({ t: fc.constant(t), ...fields } as Record<
    string,
    fc.Arbitrary<unknown>
  >);
  return { weight, arbitrary: record as fc.Arbitrary<{ t: T } & F> };
}

const KEYS = ['k1', 'k2', 'k3', 'k4', 'k5'];
// An integer-like id on purpose: it sorts first among a JS object's keys, which fixes view order.
const SESSIONS = ['s1', 's1', 's2', '7'];

const step = fc.record({
  session: fc.constantFrom(...SESSIONS),
  a: fc.oneof(
    stepKind(3, 'start', { claude: fc.boolean() }),
    stepKind(1, 'end'),
    stepKind(1, 'lost'),
    stepKind(6, 'submit', {
      key: fc.constantFrom(...KEYS),
      retry: fc.boolean(),
    }),
    stepKind(4, 'dispatch', { ok: fc.boolean() }),
    stepKind(2, 'output'),
    stepKind(3, 'idle'),
    stepKind(3, 'turnEnd'),
    stepKind(4, 'bgStart', {
      n: fc.nat(3),
      kind: fc.constantFrom('subagent', 'shell', 'monitor'),
      relabel: fc.boolean(),
    }),
    stepKind(3, 'bgEnd', {
      n: fc.nat(3),
      identified: fc.boolean(),
    }),
    stepKind(1, 'cancelEntry', {
      key: fc.constantFrom(...KEYS),
    }),
    stepKind(1, 'sendNow', { key: fc.constantFrom(...KEYS) }),
    stepKind(1, 'autoRun', { enabled: fc.boolean() }),
    stepKind(1, 'cancel'),
    stepKind(1, 'configure', {
      handoff: fc.boolean(),
      steering: fc.boolean(),
      capacity: fc.constantFrom(0, 1, 3, 10),
    }),
    stepKind(1, 'reset'),
    stepKind(3, 'watchdog'),
    stepKind(1, 'delete', { rare: fc.nat(6) }),
    // Liveness (no session stranded): timers, an operator, execution requests, and the task's
    // status.
    stepKind(2, 'lifecycle', {
      op: fc.constantFrom(
        'cancelGrace',
        'quiet',
        'forceRelease',
        'request',
        'expire',
        'archive',
        'unarchive',
        'deleteTask',
      ),
    }),
    // Permissions: the agent asks permission; a person answers, the timeout denies, the worker
    // hands the answer over.
    stepKind(2, 'permission', {
      n: fc.nat(2),
      op: fc.constantFrom('ask', 'ask', 'answer', 'timeout', 'resolve'),
    }),
    // Parking: the agent's ACP session, the owner's park, the worker closing the agent.
    stepKind(1, 'park', {
      close: fc.boolean(),
    }),
  ),
});
export type Step = typeof step extends fc.Arbitrary<infer S> ? S : never;
export const streams = fc.array(step, { minLength: 1, maxLength: 60, size: 'max' });

/** The state after each entry and the updates its fold published, in stream order. */
export interface Checkpoint {
  readonly state: TaskState;
  readonly updates: readonly Update[];
}

class RecordingOwner extends Owner {
  readonly checkpoints: Checkpoint[] = [];
  override append(entry: Parameters<Owner['append']>[0]): void {
    const before = this.updates.length;
    super.append(entry);
    this.checkpoints.push({ state: this.state, updates: this.updates.slice(before) });
  }
}

/**
 * The owner's park timer fires for a session's live execution (generation `gen`), after the agent
 * reported its ACP session if it had not; with `close`, the worker then closes the parked agent.
 */
export function park(
  owner: Owner,
  sid: string,
  gen: number,
  { loadable, close }: { loadable: boolean; close: boolean },
): void {
  const live = owner.execution(sid, `${sid}-e${gen}`, gen);
  if (owner.state.sessions[sid]?.agentSession?.executionId !== `${sid}-e${gen}`)
    live.fact('agent.session', { acpSessionId: `acp-${sid}-${gen}`, loadable, loaded: false });
  owner.fire('park', sid, { executionId: `${sid}-e${gen}` });
  if (close && owner.state.sessions[sid]?.execution?.stopping === 'parked') live.end('completed');
}

/** Steps both generators (this one and libs/activity's properties) take alike. */
export type CommonStep =
  | { t: 'cancel' | 'reset' | 'forceRelease' | 'request' | 'quiet' | 'startExpiry' | 'watchdog' }
  | { t: 'autoRun'; enabled: boolean }
  | {
      t: 'configure';
      admission: 'coarse' | 'handoff';
      steering: boolean;
      capacity: number;
      abandonedTurn?: 'stop_execution' | 'continue';
    };

/**
 * A person's or an operator's command, or one of the owner's clocks, for session `sid` whose live
 * execution is generation `gen`; `s` is the session as the step found it.
 */
export function playCommon(
  owner: Owner,
  sid: string,
  gen: number,
  s: SessionState | undefined,
  a: CommonStep,
): void {
  switch (a.t) {
    case 'cancel':
      owner.command(sid, 'session.cancel', {});
      break;
    case 'reset':
      owner.command(sid, 'session.reset', {});
      break;
    case 'forceRelease':
      owner.command(sid, 'session.force_release', {});
      break;
    case 'request':
      owner.command(sid, 'execution.request', { executionId: `${sid}-e${gen + 1}` });
      break;
    case 'autoRun':
      owner.command(sid, 'queue.set_auto_run', { enabled: a.enabled });
      break;
    case 'configure':
      owner.command(sid, 'session.configure', {
        admission: a.admission,
        steering: a.steering,
        queueCapacity: a.capacity,
        ...(a.abandonedTurn !== undefined ? { abandonedTurn: a.abandonedTurn } : {}),
      });
      break;
    case 'quiet':
      if (s) owner.fire('quiet', sid, { foregroundEpoch: s.foregroundEpoch });
      break;
    case 'startExpiry':
      if (s?.requested)
        owner.fire('execution_start', sid, { executionId: s.requested.executionId });
      break;
    case 'watchdog':
      if (s?.turn) owner.fire('watchdog', sid, { admissionGeneration: s.turn.generation });
      break;
  }
}

export function play(steps: readonly Step[]): { owner: Owner; checkpoints: Checkpoint[] } {
  const owner = new RecordingOwner();
  const gens: Record<string, number> = {};
  const uses: Record<string, number> = {};
  for (const { session: sid, a } of steps) {
    const s = owner.state.sessions[sid];
    const gen = gens[sid] ?? 0;
    const live = owner.execution(sid, `${sid}-e${gen}`, gen);
    const turn = s?.turn ?? s?.steer ?? null;
    switch (a.t) {
      case 'start':
        gens[sid] = gen + 1;
        owner
          .execution(sid, `${sid}-e${gen + 1}`, gen + 1)
          .start(a.claude ? CLAUDE_CAPS : GENERIC_CAPS);
        break;
      case 'end':
        if (gen > 0) live.end('completed');
        break;
      case 'lost':
        if (gen > 0) owner.fire('execution_lease_expired', sid, { executionId: `${sid}-e${gen}` });
        break;
      case 'submit': {
        // A retry reuses the key under a fresh prompt id, as a second gateway would.
        const n = (uses[`${sid}/${a.key}`] = (uses[`${sid}/${a.key}`] ?? 0) + (a.retry ? 0 : 1));
        owner.submit(sid, a.key, 'human', `${sid}-${a.key}-${n}-${a.retry ? 'r' : 'f'}`);
        break;
      }
      case 'dispatch':
        if (gen > 0 && turn) live.deliver(turn, a.ok);
        break;
      case 'output':
        if (gen > 0) live.output();
        break;
      case 'idle':
        if (gen > 0) live.idle('human', s?.turn?.generation);
        break;
      case 'turnEnd':
        if (gen > 0 && s?.turn) live.endTurn(s.turn.generation);
        break;
      case 'bgStart':
        if (gen > 0) {
          const id = `${a.kind}:${sid}-e${gen}:${a.n}`;
          const base = {
            id,
            label: a.relabel ? `${id} (renamed)` : id,
            startedAt: '2026-11-30T00:00:00Z',
          };
          const work =
            a.kind === 'subagent'
              ? { ...base, kind: 'subagent' as const, chat: `ahp-chat:/${id}` }
              : a.kind === 'shell'
                ? { ...base, kind: 'shell' as const, command: 'make' }
                : { ...base, kind: a.kind, target: 'x' };
          live.fact('background.started', { attested: true, toolCallId: `launch-${a.n}`, work });
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
      case 'cancelEntry':
      case 'sendNow': {
        const promptId = s?.promptByKey[a.key] ?? `${sid}-unknown`;
        owner.command(sid, a.t === 'cancelEntry' ? 'queue.cancel' : 'queue.send_now', { promptId });
        break;
      }
      case 'park':
        if (gen > 0) park(owner, sid, gen, { loadable: gen % 2 === 1, close: a.close });
        break;
      case 'permission': {
        const requestId = `${sid}-e${gen}-r${a.n}`;
        if (a.op === 'ask' && gen > 0)
          live.fact('permission.requested', {
            requestId,
            title: `tool ${a.n}`,
            options: PERMISSION_OPTIONS,
            policy: 'ask',
          });
        if (a.op === 'answer')
          owner.command(sid, 'permission.respond', { requestId, optionId: 'allow' });
        if (a.op === 'timeout') owner.fire('permission_timeout', sid, { requestId });
        const p = s?.permissions.find((r) => r.requestId === requestId);
        if (a.op === 'resolve' && gen > 0 && p?.answer) live.resolved(requestId, p.answer);
        break;
      }
      case 'configure':
        owner.command(sid, 'session.configure', {
          admission: a.handoff ? 'handoff' : 'coarse',
          steering: a.steering,
          queueCapacity: a.capacity,
        });
        break;
      case 'lifecycle':
        switch (a.op) {
          case 'cancelGrace':
            owner.command(sid, 'session.cancel', {});
            if (owner.state.sessions[sid]?.turn)
              owner.fire('cancel_grace', sid, {
                admissionGeneration: owner.state.sessions[sid]!.turn!.generation,
              });
            break;
          case 'quiet':
          case 'forceRelease':
          case 'request':
            playCommon(owner, sid, gen, s, { t: a.op });
            break;
          case 'expire':
            playCommon(owner, sid, gen, s, { t: 'startExpiry' });
            break;
          case 'archive':
            owner.taskCommand('task.archive');
            break;
          case 'unarchive':
            owner.taskCommand('task.unarchive');
            break;
          case 'deleteTask':
            // Rare in effect: most histories then keep going on a tombstone.
            if (steps.length % 5 === 0) owner.taskCommand('task.delete');
            break;
        }
        break;
      case 'delete':
        if (a.rare === 0) owner.command(sid, 'session.delete', {});
        break;
      default:
        playCommon(owner, sid, gen, s, a);
    }
  }
  return { owner, checkpoints: owner.checkpoints };
}

/** A snapshot as a client receives it: JSON, as it crossed the wire. */
export const snapshotOf = (state: TaskState): TaskView =>
  JSON.parse(JSON.stringify(taskView(state))) as TaskView;

/** The views a client that applied each update on its own, ignoring its group, would show. */
export function viewsOneByOne(from: TaskView, updates: readonly Update[]): TaskView[] {
  const views: TaskView[] = [];
  let view = from;
  for (const u of updates) {
    const r = stepUpdate(view, u);
    if (r.kind === 'applied') views.push((view = r.view));
  }
  return views;
}
