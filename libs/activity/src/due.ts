import type { Timer } from './decide';
import type { TaskState } from './state';
import { parkable, waitsForPerson } from './state';

/** How long each wait the owner's clocks bound may last before its timer is due (ms). */
export interface TimerBounds {
  /** A dispatched turn the agent is silent on. */
  readonly stallMs: number;
  /** A cancel the agent has not answered. */
  readonly cancelGraceMs: number;
  /** An `ask` permission request nobody answered. */
  readonly permissionTimeoutMs: number;
  /** An idle session's execution, before it is parked (0: never park). */
  readonly parkIdleMs: number;
  /** Output outside any turn. */
  readonly quietMs: number;
  /** A requested execution no worker has started. */
  readonly executionStartMs: number;
}

/** The owner's local, monotonic clocks: the only time the domain ever sees. */
export interface OwnerClocks {
  readonly now: number;
  /** When the owner loaded the task: the agent's silence counts from there at most. */
  readonly loadedAt: number;
  /** When the owner last folded an agent fact, per session. */
  readonly lastAgentAt: ReadonlyMap<string, number>;
  /** When the owner first saw each open wait, by wait key (what the previous call returned). */
  readonly waitingSince: ReadonlyMap<string, number>;
}

export interface DueTimers {
  /** The timers whose bound has passed, for decide to turn into decisions (or nothing). */
  readonly timers: Timer[];
  /** The open waits and since when they are seen: the clocks for the next call. */
  readonly waitingSince: Map<string, number>;
}

/**
 * Which timers are due now: the stall watchdog, the cancel grace, the quiet period of output
 * outside a turn, the permission timeout, the park period and the start bound of a requested
 * execution. Every wait the state holds open has one of these bounds, so a session that fails
 * toward busy is never busy forever. A wait's clock starts when the owner first sees it; a new
 * owner starts the clocks afresh, so a bound is at most its period plus one failover.
 */
export function dueTimers(state: TaskState, bounds: TimerBounds, clocks: OwnerClocks): DueTimers {
  const { now } = clocks;
  const timers: Timer[] = [];
  const waitingSince = new Map<string, number>();
  const waited = (key: string, ms: number): boolean => {
    const since = clocks.waitingSince.get(key) ?? now;
    waitingSince.set(key, since);
    return now - since >= ms;
  };
  for (const id in state.sessions) {
    const s = state.sessions[id]!;
    const t = s.turn;
    const lastAgent = clocks.lastAgentAt.get(s.id) ?? clocks.loadedAt;
    if (t && t.phase === 'dispatched') {
      // A turn already stalled says nothing new until the agent speaks again, and an agent that
      // waits for a person's answer is silent because of us.
      if (
        !(t.heardFromAgent && t.stalled) &&
        !waitsForPerson(s) &&
        now - lastAgent >= bounds.stallMs
      )
        timers.push({ type: 'watchdog', sessionId: s.id, admissionGeneration: t.generation });
      if (t.cancel && waited(`c/${s.id}/${t.generation}`, bounds.cancelGraceMs))
        timers.push({ type: 'cancel_grace', sessionId: s.id, admissionGeneration: t.generation });
    }
    if (s.generating && !t && !s.steer && now - lastAgent >= bounds.quietMs)
      timers.push({ type: 'quiet', sessionId: s.id, foregroundEpoch: s.foregroundEpoch });
    for (const p of s.permissions) {
      if (p.answer !== null) continue;
      if (waited(`a/${s.id}/${p.requestId}`, bounds.permissionTimeoutMs))
        timers.push({ type: 'permission_timeout', sessionId: s.id, requestId: p.requestId });
    }
    // Idle (nothing going on, no agent fact) for the park period: its agent closes, its slot is
    // freed, its ACP session kept.
    const x = s.execution;
    if (
      bounds.parkIdleMs > 0 &&
      x &&
      parkable(s) &&
      waited(`k/${s.id}/${x.id}`, bounds.parkIdleMs) &&
      now - lastAgent >= bounds.parkIdleMs
    )
      timers.push({ type: 'park', sessionId: s.id, executionId: x.id });
    if (s.requested) {
      const executionId = s.requested.executionId;
      if (waited(`x/${s.id}/${executionId}`, bounds.executionStartMs))
        timers.push({ type: 'execution_start', sessionId: s.id, executionId });
    }
  }
  return { timers, waitingSince };
}
