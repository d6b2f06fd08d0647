import type {
  BackgroundWork,
  ForegroundActivity,
  QueueEntryView,
  SessionActivityView,
  SessionState as CoarseState,
  SessionView,
  TaskActivityView,
  TaskView,
} from '@baton/protocol';
import type { Registration, SessionState, TaskState } from './state';

/** Registrations that count: a presumed-ended one is hidden from every view. */
export function liveRegistrations(s: SessionState): readonly Registration[] {
  return s.background.some((r) => r.presumedEnded)
    ? s.background.filter((r) => !r.presumedEnded)
    : s.background;
}

/**
 * The handoff policy is in force only where configuration enables it AND the live execution
 * attests it; otherwise the session runs the coarse policy (a running session is busy).
 */
export function handoffActive(s: SessionState): boolean {
  return (
    s.config.admission === 'handoff' &&
    s.execution?.phase === 'ready' &&
    s.execution.capabilities?.handoff === true
  );
}

/** The foreground yielded to attested background work: the only state a handoff admits in. */
export function yieldedToAttestedWork(s: SessionState): boolean {
  const t = s.turn;
  return (
    t !== null &&
    t.phase === 'dispatched' &&
    t.yielded &&
    !s.generating &&
    s.steer === null &&
    handoffActive(s) &&
    liveRegistrations(s).some((r) => r.attested)
  );
}

export function foregroundActivity(s: SessionState): ForegroundActivity {
  if (s.deleted) return null;
  if (s.generating || s.steer) return 'generating';
  if (s.turn) return yieldedToAttestedWork(s) ? 'background' : 'generating';
  return liveRegistrations(s).length > 0 ? 'background' : null;
}

export function coarseState(s: SessionState): CoarseState {
  if (s.deleted) return 'cancelled';
  if (s.turn || s.steer || s.generating) return 'running';
  const x = s.execution;
  if (!x) return 'created';
  switch (x.phase) {
    case 'starting':
      return 'starting';
    case 'ready':
      return x.hadTurn ? 'waiting_for_input' : 'idle';
    case 'ended':
      return x.endReason === 'completed'
        ? 'completed'
        : x.endReason === 'cancelled'
          ? 'cancelled'
          : 'failed';
  }
}

export function activeSubagentCount(s: SessionState): number {
  let n = 0;
  for (const r of s.background) if (r.work.kind === 'subagent' && !r.presumedEnded) n++;
  return n;
}

/** Steering: configured, advertised by the agent (promptQueueing), and never ahead of a queue. */
export function supportsSteering(s: SessionState): boolean {
  return (
    s.config.steering &&
    s.execution?.phase === 'ready' &&
    s.execution.capabilities?.promptQueueing === true &&
    s.turn?.phase === 'dispatched' &&
    s.steer === null &&
    s.queue.length === 0 &&
    foregroundActivity(s) === 'generating'
  );
}

export function sessionActivity(s: SessionState): SessionActivityView {
  return {
    state: coarseState(s),
    foregroundActivity: foregroundActivity(s),
    activeSubagentCount: activeSubagentCount(s),
    supportsSteering: supportsSteering(s),
    runningGeneration: s.turn ? s.turn.generation : null,
    admission: s.config.admission,
  };
}

export function queueEntries(s: SessionState): QueueEntryView[] {
  return s.queue.map((id) => {
    const p = s.prompts[id]!;
    return { promptId: id, idempotencyKey: p.idempotencyKey, text: p.text ?? '', origin: p.origin };
  });
}

/** AHP ChatState.backgroundWork: the live entries in launch order. */
export function backgroundWork(s: SessionState): BackgroundWork[] {
  return liveRegistrations(s).map((r) => r.work);
}

export function sessionView(s: SessionState): SessionView {
  return {
    sessionId: s.id,
    activity: sessionActivity(s),
    queue: { autoRun: s.autoRun, capacity: s.config.queueCapacity, entries: queueEntries(s) },
    backgroundWork: backgroundWork(s),
  };
}

const RANK = { generating: 2, background: 1 } as const;

/** Most active wins (generating > background > null); subagent counts are summed. */
export function aggregate(
  activities: Iterable<Pick<TaskActivityView, 'foregroundActivity' | 'activeSubagentCount'>>,
): TaskActivityView {
  let foreground: ForegroundActivity = null;
  let count = 0;
  for (const a of activities) {
    count += a.activeSubagentCount;
    foreground = moreActive(foreground, a.foregroundActivity);
  }
  return { foregroundActivity: foreground, activeSubagentCount: count };
}

/** The more active of two tiers (generating > background > null). */
export function moreActive(a: ForegroundActivity, b: ForegroundActivity): ForegroundActivity {
  return b && (!a || RANK[b] > RANK[a]) ? b : a;
}

export function visibleSessions(t: TaskState): SessionState[] {
  return Object.values(t.sessions).filter((s) => !s.deleted);
}

export function taskActivity(t: TaskState): TaskActivityView {
  return aggregate(
    visibleSessions(t).map((s) => ({
      foregroundActivity: foregroundActivity(s),
      activeSubagentCount: activeSubagentCount(s),
    })),
  );
}

export function taskView(t: TaskState): TaskView {
  return {
    taskId: t.taskId,
    seq: t.seq,
    activity: taskActivity(t),
    sessions: visibleSessions(t).map(sessionView),
  };
}
