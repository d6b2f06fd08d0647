// Generated task streams for the reducer's property tests: abstract steps resolved against the
// current state and played through libs/activity's in-memory owner (fold + decide), so the
// updates are exactly those the projector publishes for the same entries.
import fc from 'fast-check';
import type { TaskView, Update } from '@baton/protocol';
import { taskView, type TaskState } from '@baton/activity';
import { CLAUDE_CAPS, GENERIC_CAPS, Owner, PERMISSION_OPTIONS } from './owner';

const KEYS = ['k1', 'k2', 'k3', 'k4', 'k5'];
// An integer-like id on purpose: it sorts first among a JS object's keys, which fixes view order.
const SESSIONS = ['s1', 's1', 's2', '7'];

const step = fc.record({
  session: fc.constantFrom(...SESSIONS),
  a: fc.oneof(
    { weight: 3, arbitrary: fc.record({ t: fc.constant('start' as const), claude: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('end' as const) }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('lost' as const) }) },
    {
      weight: 6,
      arbitrary: fc.record({
        t: fc.constant('submit' as const),
        key: fc.constantFrom(...KEYS),
        retry: fc.boolean(),
      }),
    },
    { weight: 4, arbitrary: fc.record({ t: fc.constant('dispatch' as const), ok: fc.boolean() }) },
    { weight: 2, arbitrary: fc.record({ t: fc.constant('output' as const) }) },
    { weight: 3, arbitrary: fc.record({ t: fc.constant('idle' as const) }) },
    { weight: 3, arbitrary: fc.record({ t: fc.constant('turnEnd' as const) }) },
    {
      weight: 4,
      arbitrary: fc.record({
        t: fc.constant('bgStart' as const),
        n: fc.nat(3),
        kind: fc.constantFrom('subagent', 'shell', 'monitor'),
        relabel: fc.boolean(),
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
    {
      weight: 1,
      arbitrary: fc.record({
        t: fc.constant('cancelEntry' as const),
        key: fc.constantFrom(...KEYS),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ t: fc.constant('sendNow' as const), key: fc.constantFrom(...KEYS) }),
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
        handoff: fc.boolean(),
        steering: fc.boolean(),
        capacity: fc.constantFrom(0, 1, 3, 10),
      }),
    },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('reset' as const) }) },
    { weight: 3, arbitrary: fc.record({ t: fc.constant('watchdog' as const) }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('delete' as const), rare: fc.nat(6) }) },
    // Issue 14's lifecycle: timers, an operator, execution requests, and the task's status.
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('lifecycle' as const),
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
    },
    // Issue 18: the agent asks permission; a person answers, the timeout denies, the worker
    // hands the answer over.
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('permission' as const),
        n: fc.nat(2),
        op: fc.constantFrom('ask', 'ask', 'answer', 'timeout', 'resolve'),
      }),
    },
    // Parking: the agent's ACP session, the owner's park, the worker closing the agent.
    {
      weight: 1,
      arbitrary: fc.record({
        t: fc.constant('park' as const),
        close: fc.boolean(),
      }),
    },
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
        if (gen > 0)
          owner.decideNow({
            type: 'execution_lease_expired',
            sessionId: sid,
            executionId: `${sid}-e${gen}`,
          });
        break;
      case 'submit': {
        // A retry reuses the key under a fresh prompt id, as a second gateway would.
        const n = (uses[`${sid}/${a.key}`] = (uses[`${sid}/${a.key}`] ?? 0) + (a.retry ? 0 : 1));
        owner.submit(sid, a.key, 'human', `${sid}-${a.key}-${n}-${a.retry ? 'r' : 'f'}`);
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
        }
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
      case 'autoRun':
        owner.command(sid, 'queue.set_auto_run', { enabled: a.enabled });
        break;
      case 'park':
        if (gen === 0) break;
        if (s?.agentSession?.executionId !== `${sid}-e${gen}`)
          live.fact('agent.session', {
            acpSessionId: `acp-${sid}-${gen}`,
            loadable: gen % 2 === 1,
            loaded: false,
          });
        owner.decideNow({ type: 'park', sessionId: sid, executionId: `${sid}-e${gen}` });
        if (a.close && owner.state.sessions[sid]?.execution?.stopping === 'parked')
          live.end('completed');
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
        if (a.op === 'timeout')
          owner.decideNow({ type: 'permission_timeout', sessionId: sid, requestId });
        const p = s?.permissions.find((r) => r.requestId === requestId);
        if (a.op === 'resolve' && gen > 0 && p?.answer)
          live.fact('permission.resolved', {
            requestId,
            outcome: p.answer.outcome,
            ...(p.answer.optionId !== null ? { optionId: p.answer.optionId } : {}),
            by: p.answer.by,
          });
        break;
      }
      case 'cancel':
        owner.command(sid, 'session.cancel', {});
        break;
      case 'configure':
        owner.command(sid, 'session.configure', {
          admission: a.handoff ? 'handoff' : 'coarse',
          steering: a.steering,
          queueCapacity: a.capacity,
        });
        break;
      case 'reset':
        owner.command(sid, 'session.reset', {});
        break;
      case 'lifecycle':
        switch (a.op) {
          case 'cancelGrace':
            owner.command(sid, 'session.cancel', {});
            if (owner.state.sessions[sid]?.turn)
              owner.decideNow({
                type: 'cancel_grace',
                sessionId: sid,
                admissionGeneration: owner.state.sessions[sid]!.turn!.generation,
              });
            break;
          case 'quiet':
            if (s)
              owner.decideNow({
                type: 'quiet',
                sessionId: sid,
                foregroundEpoch: s.foregroundEpoch,
              });
            break;
          case 'forceRelease':
            owner.command(sid, 'session.force_release', {});
            break;
          case 'request':
            owner.command(sid, 'execution.request', { executionId: `${sid}-e${gen + 1}` });
            break;
          case 'expire':
            if (s?.requested)
              owner.decideNow({
                type: 'execution_start',
                sessionId: sid,
                executionId: s.requested.executionId,
              });
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
      case 'watchdog':
        if (s?.turn)
          owner.decideNow({
            type: 'watchdog',
            sessionId: sid,
            admissionGeneration: s.turn.generation,
          });
        break;
      case 'delete':
        if (a.rare === 0) owner.command(sid, 'session.delete', {});
        break;
    }
  }
  return { owner, checkpoints: owner.checkpoints };
}

/** A snapshot as a client receives it: JSON, as it crossed the wire. */
export const snapshotOf = (state: TaskState): TaskView =>
  JSON.parse(JSON.stringify(taskView(state))) as TaskView;
