// Reference copy (before the performance work) for test/equivalence.spec.ts: the naive oracle.
import type {
  Attention,
  BackgroundWork,
  ForegroundActivity,
  PromptOrigin,
  QueueReason,
  QueueEntryView,
  QueueView,
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

/** Running means a turn (or a steer): output outside any turn is shown, but is no turn. */
export function coarseState(s: SessionState): CoarseState {
  if (s.deleted) return 'cancelled';
  if (s.turn || s.steer) return 'running';
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
    // An execution being stopped takes no prompt, a steer no more than a turn.
    s.execution.stopping === null &&
    s.execution.capabilities?.promptQueueing === true &&
    s.turn?.phase === 'dispatched' &&
    s.steer === null &&
    s.queue.length === 0 &&
    foregroundActivity(s) === 'generating'
  );
}

export type Gate =
  | { readonly open: true; readonly mode: 'turn' | 'handoff' }
  | { readonly open: false; readonly reason: QueueReason };

/**
 * Check-and-claim, as one pure read: the admission decision that passes it is also the claim,
 * and nothing passes again until that claim is dispatched and its turn ends, fails or is released.
 * Only a turn (or a steer) holds it: output outside any turn is shown, never waited for.
 */
export function gate(s: SessionState, origin: PromptOrigin): Gate {
  const x = s.execution;
  if (x && x.phase !== 'ended' && x.stopping !== null)
    return { open: false, reason: 'execution_stopping' };
  if (!x || x.phase !== 'ready')
    return { open: false, reason: s.requestedExecution ? 'waiting_for_worker' : 'no_execution' };
  if (!s.turn && !s.steer) return { open: true, mode: 'turn' };
  // A human successor may take an attested, generation-matched yield; synthetic prompts never do.
  if (origin === 'human' && yieldedToAttestedWork(s)) return { open: true, mode: 'handoff' };
  return { open: false, reason: 'busy' };
}

/** Why the head of the queue does not run now; null when nothing is queued or it can run. */
export function blockedBy(s: SessionState): QueueReason | null {
  if (s.deleted || s.queue.length === 0) return null;
  const head = s.prompts[s.queue[0]!]!;
  if (!s.autoRun && !head.sendNow) return 'auto_run_off';
  const g = gate(s, head.origin);
  return g.open ? null : g.reason;
}

const FAILED: Record<NonNullable<SessionState['failure']>['reason'], string> = {
  turn_abandoned: 'the agent never started the last prompt (no event by the stall threshold)',
  cancel_timeout: 'the agent did not answer a cancel in time: its execution was stopped',
  force_released: 'an operator force-released the session: its execution was stopped',
  no_worker: 'no worker started the requested execution in time',
};

/**
 * What a person should know about a session, most pressing first: an execution being stopped,
 * a silent turn, an execution waiting for a worker, the session's last failure, and last queued
 * prompts with no execution to run on.
 */
export function attention(s: SessionState): Attention | null {
  if (s.deleted) return null;
  const x = s.execution;
  const live = x !== null && x.phase !== 'ended';
  if (live && x.stopping !== null) {
    const why = x.stopping.split('_').join(' ');
    return {
      kind: 'waiting',
      reason: 'execution_stopping',
      message: `execution ${x.id} is being stopped (${why})`,
      executionId: x.id,
    };
  }
  if (s.turn && s.turn.stalled) {
    return {
      kind: 'needs_operator',
      reason: 'turn_stalled',
      message: 'the agent has been silent on the running prompt: wait, cancel it, or force-release',
      promptId: s.turn.promptId,
    };
  }
  if (s.requestedExecution !== null) {
    return {
      kind: 'waiting',
      reason: 'waiting_for_worker',
      message: `execution ${s.requestedExecution} waits for a free worker`,
      executionId: s.requestedExecution,
    };
  }
  // The last failure explains a missing execution better than "start one" does.
  const f = s.failure;
  if (f !== null) {
    const a: Attention = { kind: 'failed', reason: f.reason, message: FAILED[f.reason] };
    return {
      ...a,
      ...(f.promptId !== undefined ? { promptId: f.promptId } : {}),
      ...(f.executionId !== undefined ? { executionId: f.executionId } : {}),
    };
  }
  if (!live && s.queue.length > 0) {
    return {
      kind: 'needs_operator',
      reason: 'no_execution',
      message: 'queued prompts wait for an execution: start one',
    };
  }
  return null;
}

export function sessionActivity(s: SessionState): SessionActivityView {
  return {
    state: coarseState(s),
    foregroundActivity: foregroundActivity(s),
    activeSubagentCount: activeSubagentCount(s),
    supportsSteering: supportsSteering(s),
    runningGeneration: s.turn ? s.turn.generation : null,
    admission: s.config.admission,
    attention: attention(s),
  };
}

export function queueView(s: SessionState): QueueView {
  return {
    autoRun: s.autoRun,
    capacity: s.config.queueCapacity,
    entries: queueEntries(s),
    blockedBy: blockedBy(s),
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
    queue: queueView(s),
    backgroundWork: backgroundWork(s),
    permissions: [],
    parked: null,
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
    if (a.foregroundActivity && (!foreground || RANK[a.foregroundActivity] > RANK[foreground])) {
      foreground = a.foregroundActivity;
    }
  }
  // Permission requests are not modelled here: no session ever waits for a person.
  return { foregroundActivity: foreground, activeSubagentCount: count, sessionsNeedingPerson: 0 };
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
    status: t.status,
    seq: t.seq,
    activity: taskActivity(t),
    sessions: visibleSessions(t).map(sessionView),
  };
}
