import type {
  Attention,
  BackgroundWork,
  ParkedView,
  PermissionRequestView,
  PromptOrigin,
  QueueReason,
  QueueView,
  ForegroundActivity,
  QueueEntryView,
  SessionActivityView,
  SessionState as CoarseState,
  SessionView,
  TaskActivityView,
  TaskView,
} from '@baton/protocol';
import type { Registration, SessionState, TaskState } from './state';
import { waitsForPerson } from './state';

/** Registrations that count: a presumed-ended one is hidden from every view. */
export function liveRegistrations(s: SessionState): readonly Registration[] {
  return s.background.some((r) => r.presumedEnded)
    ? s.background.filter((r) => !r.presumedEnded)
    : s.background;
}

/**
 * Background work known to run: live, and not possibly finished. An unattributed completion that
 * may have been any of several items leaves each of them listed (possibly finished) and
 * registered, but nothing about them is known to run any more, so the headline stops claiming it.
 */
export function knownRunning(s: SessionState): boolean {
  for (const r of s.background) if (!r.presumedEnded && !r.work.possiblyFinished) return true;
  return false;
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

/**
 * The headline's tier. An agent waiting for a person's answer sends nothing: it is not shown
 * generating (`waitingForPerson` says what it waits for). Within a turn, `background` keeps
 * meaning what a client's admission reads from it (the turn yielded to attested work), so a
 * waiting turn that did not yield shows null.
 */
export function foregroundActivity(s: SessionState): ForegroundActivity {
  if (s.deleted) return null;
  const waiting = waitsForPerson(s);
  if ((s.generating || s.steer) && !waiting) return 'generating';
  if (s.turn) return yieldedToAttestedWork(s) ? 'background' : waiting ? null : 'generating';
  return knownRunning(s) ? 'background' : null;
}

/** Running means a turn: output outside any turn is shown (foregroundActivity), never a turn. */
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
    !s.deleted &&
    s.config.steering &&
    s.execution?.phase === 'ready' &&
    s.execution.stopping === null &&
    s.execution.capabilities?.promptQueueing === true &&
    s.turn?.phase === 'dispatched' &&
    s.steer === null &&
    s.queue.length === 0 &&
    // Read off the turn, not the headline: a permission wait changes what is shown, not admission.
    !yieldedToAttestedWork(s)
  );
}

export type Gate =
  | { readonly open: true; readonly mode: 'turn' | 'handoff' }
  | { readonly open: false; readonly reason: QueueReason };

const OPEN_TURN: Gate = Object.freeze({ open: true, mode: 'turn' });
const OPEN_HANDOFF: Gate = Object.freeze({ open: true, mode: 'handoff' });
const closedGates = new Map<QueueReason, Gate>();
const closed = (reason: QueueReason): Gate => {
  let g = closedGates.get(reason);
  if (!g) closedGates.set(reason, (g = Object.freeze({ open: false, reason })));
  return g;
};

/**
 * Check-and-claim, as one pure read: the admission decision that passes it is also the claim,
 * and nothing passes again until that claim is dispatched and its turn ends, fails or is released.
 * Output outside any turn never holds it by itself: it is shown, and decays after a quiet period.
 */
export function admissionGate(s: SessionState, origin: PromptOrigin): Gate {
  const x = s.execution;
  if (!x || x.phase !== 'ready' || x.stopping !== null) {
    if (x && x.phase !== 'ended' && x.stopping !== null) return closed('execution_stopping');
    return closed(s.requested ? 'waiting_for_worker' : 'no_execution');
  }
  if (!s.turn && !s.steer) return OPEN_TURN;
  // A human successor may take an attested, generation-matched yield; synthetic prompts never do.
  if (origin === 'human' && yieldedToAttestedWork(s)) return OPEN_HANDOFF;
  return closed('busy');
}

/** Why the head of the queue does not run now (null: nothing queued, or it is about to run). */
export function queueBlockedBy(s: SessionState): QueueReason | null {
  if (s.queue.length === 0 || s.deleted) return null;
  const head = s.prompts[s.queue[0]!]!;
  if (!s.autoRun && !head.sendNow) return 'auto_run_off';
  const g = admissionGate(s, head.origin);
  return g.open ? null : g.reason;
}

/**
 * What a person should know about a session that is not simply running or promptable: waiting
 * states first (they change by themselves), then a stalled turn, then the last failure (until
 * the next turn or execution), then queued prompts with no execution to run on.
 */
export function attention(s: SessionState): Attention | null {
  if (s.deleted) return null;
  const x = s.execution;
  if (x && x.phase !== 'ended' && x.stopping !== null) {
    return {
      kind: 'waiting',
      reason: 'execution_stopping',
      message: `execution ${x.id} is being stopped (${x.stopping.replace(/_/g, ' ')})`,
      executionId: x.id,
    };
  }
  // The agent asked permission and waits: nothing moves until a person answers (or the timeout).
  if (waitsForPerson(s)) {
    const open = s.permissions.filter((p) => p.answer === null);
    const first = open[0]!;
    const what = first.title ?? first.toolKind ?? 'a tool call';
    return {
      kind: 'needs_person',
      reason: 'permission_requested',
      message:
        open.length === 1
          ? `the agent asks permission: ${what}`
          : `the agent asks permission (${open.length} requests): ${what}, …`,
      ...(s.turn ? { promptId: s.turn.promptId } : {}),
      ...(x ? { executionId: x.id } : {}),
    };
  }
  const t = s.turn;
  if (t && t.stalled) {
    return {
      kind: 'needs_operator',
      reason: 'turn_stalled',
      message: 'the agent has been silent on the running prompt: wait, cancel it, or force-release',
      promptId: t.promptId,
    };
  }
  if (s.requested) {
    return {
      kind: 'waiting',
      reason: 'waiting_for_worker',
      message: `execution ${s.requested.executionId} waits for a free worker`,
      executionId: s.requested.executionId,
    };
  }
  // A failure explains the missing execution better than "start one" does; the queue's blockedBy
  // still says what its prompts wait for.
  const f = s.failure;
  if (f) {
    const ids = {
      ...(f.promptId !== undefined ? { promptId: f.promptId } : {}),
      ...(f.executionId !== undefined ? { executionId: f.executionId } : {}),
    };
    return { kind: 'failed', reason: f.reason, message: FAILURE_MESSAGES[f.reason], ...ids };
  }
  if (s.queue.length > 0 && (!x || x.phase === 'ended')) {
    return {
      kind: 'needs_operator',
      reason: 'no_execution',
      message: 'queued prompts wait for an execution: start one',
    };
  }
  return null;
}

const FAILURE_MESSAGES: Record<NonNullable<SessionState['failure']>['reason'], string> = {
  turn_abandoned: 'the agent never started the last prompt (no event by the stall threshold)',
  cancel_timeout: 'the agent did not answer a cancel in time: its execution was stopped',
  force_released: 'an operator force-released the session: its execution was stopped',
  no_worker: 'no worker started the requested execution in time',
};

/** Whether `a` and `b` hold different values (by identity) in any of the fields `keys`. */
export function differIn<T>(a: T, b: T, keys: readonly (keyof T)[]): boolean {
  for (const k of keys) if (a[k] !== b[k]) return true;
  return false;
}

const ATTENTION_FIELDS = [
  'kind',
  'reason',
  'message',
  'promptId',
  'executionId',
] as const satisfies readonly (keyof Attention)[];

export function sameAttention(a: Attention | null, b: Attention | null): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  return !differIn(a, b, ATTENTION_FIELDS);
}

/**
 * Every field a session's activity (sessionActivity, activityLane) is a function of. Evolve shares
 * what it did not change, so while `after` holds the same objects as `before` in all of them, the
 * activity is the same and need not be derived again.
 */
const ACTIVITY_INPUTS = [
  'deleted',
  'requested',
  'failure',
  'generating',
  'turn',
  'steer',
  'execution',
  'background',
  'config',
  'queue',
  'permissions',
  'usage',
] as const satisfies readonly (keyof SessionState)[];

export function activityInputsMoved(before: SessionState, after: SessionState): boolean {
  return differIn(before, after, ACTIVITY_INPUTS);
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
    waitingForPerson: waitsForPerson(s),
    // Undefined (left out of JSON) until reported: views of agents that never report are as
    // they were. Always present as a key, so every view has one shape.
    usage: s.deleted ? undefined : s.usage,
  };
}

export function queueView(s: SessionState): QueueView {
  return {
    autoRun: s.autoRun,
    capacity: s.config.queueCapacity,
    entries: queueEntries(s),
    blockedBy: queueBlockedBy(s),
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

/** The permission requests waiting for a person, oldest first. */
export function permissionsView(s: SessionState): PermissionRequestView[] {
  const x = s.execution;
  if (s.deleted || !x) return [];
  const out: PermissionRequestView[] = [];
  for (const p of s.permissions) {
    if (p.answer !== null) continue;
    out.push({
      requestId: p.requestId,
      ...(p.toolCallId !== null ? { toolCallId: p.toolCallId } : {}),
      ...(p.title !== null ? { title: p.title } : {}),
      ...(p.toolKind !== null ? { toolKind: p.toolKind } : {}),
      options: p.options.map((o) => ({ optionId: o.optionId, name: o.name, kind: o.kind })),
      executionId: x.id,
    });
  }
  return out;
}

/** The parked session's ACP session and how its execution was started; null unless parked. */
export function parkedView(s: SessionState): ParkedView | null {
  const a = s.agentSession;
  if (s.deleted || !s.parked || !a) return null;
  const l = a.launch;
  return {
    executionId: a.executionId,
    acpSessionId: a.acpSessionId,
    loadable: a.loadable,
    ...(l && l.profile !== null ? { profile: l.profile } : {}),
    ...(l && l.recording !== null ? { recording: l.recording } : {}),
    ...(l && l.speed !== null ? { speed: l.speed } : {}),
    ...(l && l.workspace !== null ? { workspace: l.workspace } : {}),
  };
}

export function sessionView(s: SessionState): SessionView {
  return {
    sessionId: s.id,
    activity: sessionActivity(s),
    queue: queueView(s),
    backgroundWork: backgroundWork(s),
    permissions: permissionsView(s),
    parked: parkedView(s),
  };
}

const RANK = { generating: 2, background: 1 } as const;

/**
 * Most active wins (generating > background > null); subagent counts are summed, and so are the
 * sessions waiting for a person.
 */
export function aggregate(
  activities: Iterable<
    Pick<TaskActivityView, 'foregroundActivity' | 'activeSubagentCount'> & {
      readonly needsPerson?: boolean;
    }
  >,
): TaskActivityView {
  let foreground: ForegroundActivity = null;
  let count = 0;
  let needing = 0;
  for (const a of activities) {
    count += a.activeSubagentCount;
    foreground = moreActive(foreground, a.foregroundActivity);
    if (a.needsPerson) needing++;
  }
  return {
    foregroundActivity: foreground,
    activeSubagentCount: count,
    sessionsNeedingPerson: needing,
  };
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
      needsPerson: waitsForPerson(s),
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
