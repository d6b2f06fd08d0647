import {
  isTaskEntry,
  type Capabilities,
  type EntryOf,
  type ExecutionStopReason,
  type PermissionResolver,
  type SessionEntry,
  type StreamEntry,
  type TaskEntry,
  type TaskStatus,
} from '@baton/protocol';
import {
  MAX_DISPATCH_ATTEMPTS,
  NO_ENTRIES,
  NO_IDS,
  RESOLVED_PERMISSIONS_KEPT,
  SETTLED_PROMPTS_KEPT,
  initialSessionState,
  promptIdOfKey,
  promptOf,
  sortedIndexOf,
} from './state';
import type {
  ExecutionEndReason,
  ExecutionState,
  PendingCommand,
  PendingTaskCommand,
  PermissionAnswer,
  PermissionRequest,
  PromptRecord,
  ResolvedPermission,
  PromptStatus,
  Registration,
  SessionState,
  SettledPrompt,
  SettledStatus,
  TaskState,
  ToolOwnership,
  Turn,
} from './state';

/**
 * evolve(state, entry) → state: the whole fold. Pure: no clock, no I/O, no randomness; the same
 * entries give the same state on every replica. An entry for another task is a programming error.
 */
export function evolve(state: TaskState, entry: StreamEntry): TaskState {
  if (entry.taskId !== state.taskId) {
    throw new Error(`entry of task ${entry.taskId} folded into task ${state.taskId}`);
  }
  if (isTaskEntry(entry)) return evolveTask(state, entry);
  const before = sessionOf(state, entry.sessionId);
  const after = evolveSession(before, entry, state.status);
  if (after === before && state.sessions[entry.sessionId]) return state;
  const sessions: Record<string, SessionState> = Object.assign({}, state.sessions);
  sessions[entry.sessionId] = after;
  return withSessions(state, state.seq, sessions);
}

/** A task with other sessions (and seq), everything else shared. */
export function withSessions(
  state: TaskState,
  seq: number,
  sessions: Readonly<Record<string, SessionState>>,
): TaskState {
  return { taskId: state.taskId, seq, status: state.status, pending: state.pending, sessions };
}

/** The session an entry is about: a session first named in a deleted task is born deleted. */
export function sessionOf(state: TaskState, sessionId: string): SessionState {
  const s = state.sessions[sessionId];
  if (s) return s;
  const fresh = initialSessionState(sessionId);
  if (state.status !== 'deleted') return fresh;
  const d = copySession(fresh);
  d.deleted = true;
  return d;
}

/**
 * A task-wide entry. Archiving or deleting closes every session: its queue and undelivered claims
 * are discarded (each prompt told why) and its live execution is stopped; deleting also deletes
 * every session, for good.
 */
function evolveTask(state: TaskState, e: TaskEntry): TaskState {
  const taskOf = (status: TaskStatus, pending: readonly PendingTaskCommand[]) => ({
    taskId: state.taskId,
    seq: state.seq,
    status,
    pending,
    sessions: state.sessions,
  });
  switch (e.type) {
    case 'task.archive':
    case 'task.unarchive':
    case 'task.delete':
      for (const p of state.pending) if (p.data.commandId === e.data.commandId) return state;
      return taskOf(state.status, appended(state.pending, { type: e.type, data: e.data }));
    case 'task.command_rejected':
      return taskOf(state.status, taskAnswered(state.pending, e.data.commandId));
    case 'task.unarchived':
      return taskOf(
        state.status === 'deleted' ? 'deleted' : 'active',
        taskAnswered(state.pending, e.data.commandId),
      );
    case 'task.archived':
    case 'task.deleted': {
      const status: TaskStatus =
        e.type === 'task.deleted' || state.status === 'deleted' ? 'deleted' : 'archived';
      const reason = status === 'deleted' ? 'task_deleted' : 'task_archived';
      const sessions: Record<string, SessionState> = {};
      for (const id in state.sessions) sessions[id] = closeSession(state.sessions[id]!, reason);
      return {
        taskId: state.taskId,
        seq: state.seq,
        status,
        pending: taskAnswered(state.pending, e.data.commandId),
        sessions,
      };
    }
  }
}

function taskAnswered(
  pending: readonly PendingTaskCommand[],
  commandId: string | undefined,
): readonly PendingTaskCommand[] {
  if (commandId === undefined || !pending.some((p) => p.data.commandId === commandId))
    return pending;
  const kept = pending.filter((p) => p.data.commandId !== commandId);
  return kept.length === 0 ? NO_IDS : kept;
}

/** A session of an archived or deleted task: nothing waits, nothing runs. */
function closeSession(s: SessionState, reason: 'task_archived' | 'task_deleted'): SessionState {
  const claimed = (t: Turn | null) => t !== null && t.phase === 'claimed';
  const live = s.execution !== null && s.execution.phase !== 'ended';
  // Unchanged parts stay the same objects: what is published is found by identity.
  if (
    s.queue.length === 0 &&
    !claimed(s.turn) &&
    !claimed(s.steer) &&
    s.requested === null &&
    (reason === 'task_archived' || s.deleted) &&
    (!live || s.execution!.stopping !== null)
  )
    return s;
  const d = copySession(s);
  for (const id of s.queue) setPrompt(d, id, 'removed');
  if (s.queue.length > 0) d.queue = NO_IDS;
  for (const claim of [s.turn, s.steer]) {
    if (claim && claim.phase === 'claimed') setPrompt(d, claim.promptId, 'removed');
  }
  if (d.turn && d.turn.phase === 'claimed') d.turn = d.turn.predecessor;
  if (d.steer && d.steer.phase === 'claimed') d.steer = null;
  if (d.requested !== null) d.requested = null;
  if (reason === 'task_deleted' && !s.deleted) {
    d.deleted = true;
    retireExecution(d);
  }
  stop(d, reason);
  closeSettled(d);
  return d;
}

/**
 * How a session changes, without mutating it: each entry that changes something makes one fresh
 * copy of the session (a Draft, see copySession) and sets the fields it changes on that copy
 * before anyone else can see it; everything it does not change is shared with the old session.
 * An entry that changes nothing returns the session itself.
 */
export function evolveSession(
  s: SessionState,
  e: SessionEntry,
  task: TaskStatus = 'active',
): SessionState {
  const d = step(s, e, task);
  if (d === null) return s;
  if (d.prompts !== s.prompts || d.turn !== s.turn || d.steer !== s.steer) closeSettled(d);
  return d;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
/** A session copy that the current entry owns and changes in place until it returns it. */
type Draft = Mutable<SessionState>;

/**
 * A fresh copy of a session, written out field by field: V8 (Node 20) copies a 23-field object
 * spread (`{ ...s, x }`) about 20 times slower than this literal, and the literal gives every
 * session (a snapshot's too) one hidden class.
 */
function copySession(s: SessionState): Draft {
  return {
    id: s.id,
    deleted: s.deleted,
    config: s.config,
    lastGeneration: s.lastGeneration,
    execution: s.execution,
    admissionGeneration: s.admissionGeneration,
    turn: s.turn,
    steer: s.steer,
    generating: s.generating,
    foregroundEpoch: s.foregroundEpoch,
    tools: s.tools,
    foregroundTools: s.foregroundTools,
    childTools: s.childTools,
    background: s.background,
    queue: s.queue,
    autoRun: s.autoRun,
    prompts: s.prompts,
    promptByKey: s.promptByKey,
    settled: s.settled,
    pending: s.pending,
    stallAdvised: s.stallAdvised,
    requested: s.requested,
    failure: s.failure,
    permissions: s.permissions,
    resolvedPermissions: s.resolvedPermissions,
    agentSession: s.agentSession,
    parked: s.parked,
  };
}

function copyTurn(t: Turn): Mutable<Turn> {
  return {
    promptId: t.promptId,
    generation: t.generation,
    mode: t.mode,
    phase: t.phase,
    claimEpoch: t.claimEpoch,
    yielded: t.yielded,
    heardFromAgent: t.heardFromAgent,
    stalled: t.stalled,
    cancel: t.cancel,
    predecessor: t.predecessor,
    text: t.text,
  };
}

function copyExecution(x: ExecutionState): Mutable<ExecutionState> {
  return {
    id: x.id,
    generation: x.generation,
    phase: x.phase,
    capabilities: x.capabilities,
    endReason: x.endReason,
    hadTurn: x.hadTurn,
    stopping: x.stopping,
    launch: x.launch,
  };
}

function copyPrompt(p: PromptRecord): Mutable<PromptRecord> {
  return {
    promptId: p.promptId,
    idempotencyKey: p.idempotencyKey,
    origin: p.origin,
    text: p.text,
    status: p.status,
    dispatchAttempts: p.dispatchAttempts,
    sendNow: p.sendNow,
  };
}

/** The changed session, or null when the entry changes nothing. */
function step(s: SessionState, e: SessionEntry, task: TaskStatus): Draft | null {
  switch (e.type) {
    // ----- facts -------------------------------------------------------------------------------
    case 'execution.started': {
      if (e.generation <= s.lastGeneration) return null; // a late predecessor
      const d = copySession(s);
      retireExecution(d);
      d.lastGeneration = e.generation;
      // An execution that starts where nothing may run is recorded only to be stopped: a closed
      // task or a deleted session is never revived by it.
      const stopping: ExecutionStopReason | null =
        task === 'deleted'
          ? 'task_deleted'
          : s.deleted
            ? 'session_deleted'
            : task === 'archived'
              ? 'task_archived'
              : null;
      const { profile, recording, speed, workspace } = e.data;
      d.execution = {
        id: e.executionId,
        generation: e.generation,
        phase: 'starting',
        capabilities: null,
        endReason: null,
        hadTurn: false,
        stopping,
        launch:
          profile === undefined
            ? null
            : {
                profile,
                recording: recording ?? null,
                speed: speed ?? null,
                workspace: workspace ?? null,
              },
      };
      // A new execution: the session is no longer parked (its agent session comes with it).
      d.parked = false;
      if (s.requested && s.requested.executionId === e.executionId) d.requested = null;
      // A late start of an execution whose request expired: it runs after all.
      if (s.failure && s.failure.reason === 'no_worker' && s.failure.executionId === e.executionId)
        d.failure = null;
      return d;
    }
    case 'capabilities.negotiated': {
      if (!isLive(s, e)) return null;
      const d = copySession(s);
      const x = copyExecution(s.execution!);
      x.phase = 'ready';
      x.capabilities = e.data;
      d.execution = x;
      return d;
    }
    case 'execution.ended': {
      // A deleted session's execution ends too (its stop is then no longer owed).
      if (!isCurrent(s, e.executionId)) return null;
      const d = copySession(s);
      endExecution(d, e.data.reason);
      return d;
    }
    case 'prompt.dispatched':
      if (!isLive(s, e)) return null;
      return onDispatched(s, e.data.promptId, e.data.admissionGeneration);
    case 'prompt.dispatch_failed':
      if (!isLive(s, e)) return null;
      return onDispatchFailed(s, e.data.promptId, e.data.admissionGeneration);
    case 'foreground.output': {
      // Most entries of a stream are this, and most of them change nothing.
      if (!isLive(s, e) || !outputChanges(s)) return null;
      const d = copySession(s);
      output(d);
      return d;
    }
    case 'foreground.idle':
      if (!isLive(s, e)) return null;
      return onIdle(s, e.data.origin, e.data.admissionGeneration);
    case 'turn.ended':
      if (!isLive(s, e)) return null;
      return onTurnEnded(s, e.data.admissionGeneration, true);
    case 'tool.started':
    case 'tool.updated':
      if (!isLive(s, e)) return null;
      return onTool(s, e);
    case 'background.started': {
      if (!isLive(s, e)) return null;
      const d = copySession(s);
      heard(d);
      onBackgroundStarted(d, e);
      return d;
    }
    case 'background.ended': {
      if (!isLive(s, e)) return null;
      const background = backgroundAfterEnd(s, e);
      if (background === s.background && !countsAsEvent(s)) return null;
      const d = copySession(s);
      heard(d);
      d.background = background;
      return d;
    }

    case 'agent.session': {
      if (!isLive(s, e)) return null;
      const d = copySession(s);
      d.agentSession = {
        executionId: e.executionId,
        acpSessionId: e.data.acpSessionId,
        loadable: e.data.loadable,
        launch: s.execution!.launch,
      };
      return d;
    }
    case 'permission.requested': {
      if (!isLive(s, e)) return null;
      const r = e.data;
      const known =
        s.permissions.some((p) => p.requestId === r.requestId) ||
        s.resolvedPermissions.some((p) => p.requestId === r.requestId);
      // Only `ask` requests wait for anyone: the worker answers the others at once.
      if ((known || r.policy !== 'ask') && !countsAsEvent(s)) return null;
      const d = copySession(s);
      heard(d);
      if (known || r.policy !== 'ask') return d;
      const request: PermissionRequest = {
        requestId: r.requestId,
        toolCallId: r.toolCallId ?? null,
        title: r.title ?? null,
        toolKind: r.toolKind ?? null,
        options: r.options,
        answer: null,
      };
      // A request waits for a person, who may well be away: not a stall of the turn.
      d.permissions = appended(s.permissions, request);
      return d;
    }
    case 'permission.resolved': {
      if (!isLive(s, e)) return null;
      const r = e.data;
      const open = s.permissions.some((p) => p.requestId === r.requestId);
      const remembered = s.resolvedPermissions.some((p) => p.requestId === r.requestId);
      if (!open && remembered && !countsAsEvent(s)) return null;
      const d = copySession(s);
      heard(d);
      if (open) d.permissions = s.permissions.filter((p) => p.requestId !== r.requestId);
      if (d.permissions.length === 0) d.permissions = NO_IDS;
      if (!remembered)
        d.resolvedPermissions = rememberPermission(d.resolvedPermissions, {
          requestId: r.requestId,
          outcome: r.outcome,
          optionId: r.optionId ?? null,
          by: r.by,
        });
      return d;
    }

    // ----- commands: recorded until the owner decides them ------------------------------------
    case 'prompt.submit': {
      const c = e.data;
      if (promptIdOfKey(s, c.idempotencyKey) !== undefined || promptOf(s, c.promptId)) return null;
      const d = copySession(s);
      d.prompts = withEntry(s.prompts, c.promptId, {
        promptId: c.promptId,
        idempotencyKey: c.idempotencyKey,
        origin: c.origin,
        text: c.text,
        status: 'pending',
        dispatchAttempts: 0,
        sendNow: false,
      });
      d.promptByKey = withEntry(s.promptByKey, c.idempotencyKey, c.promptId);
      d.pending = appended(s.pending, { type: e.type, data: c });
      return d;
    }
    case 'queue.cancel':
    case 'queue.send_now':
    case 'queue.set_auto_run':
    case 'session.cancel':
    case 'session.reset':
    case 'session.delete':
    case 'session.configure':
    case 'session.force_release':
    case 'permission.respond':
    case 'execution.request': {
      for (const p of s.pending) if (p.data.commandId === e.data.commandId) return null;
      const d = copySession(s);
      d.pending = appended(s.pending, { type: e.type, data: e.data } as PendingCommand);
      return d;
    }

    // ----- decisions ---------------------------------------------------------------------------
    case 'prompt.admitted': {
      const a = e.data;
      const d = copySession(s);
      // The record settles (its text goes); the claim carries the text until dispatch.
      const text = s.prompts[a.promptId]?.text ?? null;
      answered(d, a.commandId);
      setPrompt(d, a.promptId, 'admitted');
      d.queue = without(d.queue, a.promptId);
      d.admissionGeneration = a.admissionGeneration;
      const turn: Turn = {
        promptId: a.promptId,
        generation: a.admissionGeneration,
        mode: a.mode,
        phase: 'claimed',
        claimEpoch: d.foregroundEpoch,
        yielded: false,
        heardFromAgent: false,
        stalled: false,
        cancel: null,
        // A handoff replaces the held-open turn once it reaches the agent (its late end is then
        // stale by generation); until then it keeps that turn, to restore it if it never does.
        predecessor: a.mode === 'handoff' ? d.turn : null,
        text,
      };
      if (a.mode === 'steer') d.steer = turn;
      else {
        d.turn = turn;
        d.failure = null;
      }
      return d;
    }
    case 'prompt.queued': {
      const d = copySession(s);
      answered(d, e.data.commandId);
      setPrompt(d, e.data.promptId, 'queued');
      // Only an open prompt has the record a queue entry is shown from.
      if (!d.queue.includes(e.data.promptId) && d.prompts[e.data.promptId])
        d.queue = appended(d.queue, e.data.promptId);
      return d;
    }
    case 'prompt.rejected':
    case 'prompt.removed': {
      const d = copySession(s);
      answered(d, e.data.commandId);
      setPrompt(d, e.data.promptId, e.type === 'prompt.rejected' ? 'rejected' : 'removed');
      d.queue = without(d.queue, e.data.promptId);
      return d;
    }
    case 'prompt.released': {
      const d = copySession(s);
      answered(d, e.data.commandId);
      const slot = claimSlot(d, e.data.promptId, e.data.admissionGeneration);
      if (!slot || d[slot]!.phase !== 'claimed') return d;
      const claim = d[slot]!;
      d[slot] = claim.predecessor;
      requeueAtHead(d, e.data.promptId, claim.text);
      return d;
    }
    case 'prompt.promoted': {
      const d = copySession(s);
      answered(d, e.data.commandId);
      const record = d.prompts[e.data.promptId];
      if (!record || record.status !== 'queued') return d;
      d.queue = toHead(d.queue, e.data.promptId);
      const promoted = copyPrompt(record);
      promoted.sendNow = true;
      d.prompts = withEntry(d.prompts, e.data.promptId, promoted);
      return d;
    }
    case 'queue.auto_run_set': {
      const d = copySession(s);
      answered(d, e.data.commandId);
      d.autoRun = e.data.enabled;
      return d;
    }
    case 'turn.cancel_requested': {
      const d = copySession(s);
      answered(d, e.data.commandId);
      if (d.turn && d.turn.generation === e.data.admissionGeneration) {
        const t = copyTurn(d.turn);
        t.cancel = e.data.reason;
        d.turn = t;
        // ACP: a cancelled turn's pending permission requests are answered `cancelled`.
        answerOpenPermissions(d, 'turn_cancelled');
      }
      return d;
    }
    case 'permission.answered': {
      const d = copySession(s);
      answered(d, e.data.commandId);
      const at = s.permissions.findIndex((p) => p.requestId === e.data.requestId);
      if (at === -1 || s.permissions[at]!.answer !== null) return d;
      const answer: PermissionAnswer = {
        outcome: e.data.outcome,
        optionId: e.data.optionId ?? null,
        by: e.data.by,
        subject: e.data.subject ?? null,
      };
      d.permissions = s.permissions.map((p, i) => (i === at ? withAnswer(p, answer) : p));
      return d;
    }
    case 'command.rejected': {
      const d = copySession(s);
      answered(d, e.data.commandId);
      return d;
    }
    case 'session.configured': {
      const { admission, steering, queueCapacity, abandonedTurn } = e.data;
      const d = copySession(s);
      answered(d, e.data.commandId);
      d.config = { admission, steering, queueCapacity, abandonedTurn };
      return d;
    }
    case 'session.was_reset': {
      // Explicit reset owns full cleanup of activity; the queue and the running turn stay.
      const d = copySession(s);
      answered(d, e.data.commandId);
      d.background = NO_IDS;
      d.tools = NO_ENTRIES;
      d.foregroundTools = NO_IDS;
      d.childTools = NO_IDS;
      d.generating = false;
      stop(d, 'session_reset');
      return d;
    }
    case 'session.deleted': {
      const d = copySession(s);
      answered(d, e.data.commandId);
      d.deleted = true;
      for (const id of d.queue) setPrompt(d, id, 'removed');
      // A claim the agent never got is discarded with the queue, and its prompt told so.
      for (const claim of [s.turn, s.steer])
        if (claim && claim.phase === 'claimed') setPrompt(d, claim.promptId, 'removed');
      retireExecution(d);
      d.queue = NO_IDS;
      d.requested = null;
      d.failure = null;
      stop(d, 'session_deleted');
      return d;
    }
    case 'session.force_released': {
      const d = copySession(s);
      answered(d, e.data.commandId);
      // The failure names the prompt whose turn it ended: the running turn, or the turn a
      // pending handoff claim would have replaced (a claim itself goes back to the queue).
      let ended: string | undefined;
      for (const t of [s.turn, s.turn?.predecessor ?? null, s.steer]) {
        if (!t) continue;
        if (t.phase === 'claimed') requeueAtHead(d, t.promptId, t.text);
        else {
          setPrompt(d, t.promptId, 'force_released');
          ended ??= t.promptId;
        }
      }
      d.turn = null;
      d.steer = null;
      d.background = NO_IDS;
      d.tools = NO_ENTRIES;
      d.foregroundTools = NO_IDS;
      d.childTools = NO_IDS;
      d.generating = false;
      d.failure =
        ended !== undefined
          ? { reason: 'force_released', promptId: ended }
          : { reason: 'force_released' };
      if (ended !== undefined) markHadTurn(d);
      stop(d, 'force_released');
      return d;
    }
    case 'execution.lost': {
      if (!isCurrent(s, e.data.executionId)) return null;
      const d = copySession(s);
      endExecution(d, 'lost');
      return d;
    }
    case 'turn.stalled': {
      const t = s.turn;
      const stalls =
        t !== null &&
        t.generation === e.data.admissionGeneration &&
        t.phase === 'dispatched' &&
        !t.stalled;
      if (!stalls && e.data.admissionGeneration <= s.stallAdvised) return null;
      const d = copySession(s);
      d.stallAdvised = Math.max(s.stallAdvised, e.data.admissionGeneration);
      if (stalls) {
        const turn = copyTurn(t);
        turn.stalled = true;
        d.turn = turn;
      }
      return d;
    }
    case 'turn.abandoned': {
      if (!s.turn || s.turn.generation !== e.data.admissionGeneration) return null;
      const d = onTurnEnded(s, e.data.admissionGeneration, false)!;
      setPrompt(d, e.data.promptId, 'abandoned');
      d.failure = { reason: 'turn_abandoned', promptId: e.data.promptId };
      if (e.data.then === 'stop_execution') stop(d, 'turn_abandoned');
      return d;
    }
    case 'turn.cancel_timed_out': {
      const t = s.turn;
      if (!t || t.generation !== e.data.admissionGeneration || t.phase !== 'dispatched')
        return null;
      const d = copySession(s);
      setPrompt(d, t.promptId, 'cancel_timed_out');
      d.turn = null;
      // A steer already in the agent goes down with the turn, and is told so; one it never got
      // goes back to the head of the queue (the execution is stopped: nothing runs it there).
      const steer = s.steer;
      if (steer && steer.phase === 'dispatched') setPrompt(d, steer.promptId, 'cancel_timed_out');
      else if (steer) requeueAtHead(d, steer.promptId, steer.text);
      d.steer = null;
      d.generating = false;
      d.failure = { reason: 'cancel_timeout', promptId: t.promptId };
      markHadTurn(d);
      stop(d, 'cancel_timeout');
      return d;
    }
    case 'foreground.quiesced': {
      if (
        !s.generating ||
        s.turn !== null ||
        s.steer !== null ||
        s.foregroundEpoch !== e.data.foregroundEpoch
      )
        return null;
      const d = copySession(s);
      d.generating = false;
      return d;
    }
    case 'execution.requested': {
      const d = copySession(s);
      answered(d, e.data.commandId);
      // A request folded after its execution already started (the command raced the worker)
      // waits for nothing.
      if (s.execution === null || s.execution.id !== e.data.executionId)
        d.requested = { executionId: e.data.executionId };
      if (s.failure && s.failure.reason === 'no_worker') d.failure = null;
      return d;
    }
    case 'execution.parked': {
      const x = s.execution;
      if (!x || x.id !== e.data.executionId || x.phase === 'ended' || x.stopping !== null)
        return null;
      const d = copySession(s);
      stop(d, 'parked');
      return d;
    }
    case 'execution.request_expired': {
      if (!s.requested || s.requested.executionId !== e.data.executionId) return null;
      const d = copySession(s);
      d.requested = null;
      d.failure = { reason: 'no_worker', executionId: e.data.executionId };
      return d;
    }
  }
}

/** The owner is to stop the live execution (and owes the worker the stop until it ends). */
function stop(d: Draft, reason: ExecutionStopReason): void {
  const x = d.execution;
  if (!x || x.phase === 'ended' || x.stopping !== null) return;
  answerOpenPermissions(d, 'execution_ended');
  const stopping = copyExecution(x);
  stopping.stopping = reason;
  d.execution = stopping;
}

/** Every request nobody answered yet is settled as cancelled (a cancel, a stop). */
function answerOpenPermissions(d: Draft, by: PermissionResolver): void {
  if (!d.permissions.some((p) => p.answer === null)) return;
  const answer: PermissionAnswer = { outcome: 'cancelled', optionId: null, by, subject: null };
  d.permissions = d.permissions.map((p) => (p.answer === null ? withAnswer(p, answer) : p));
}

function withAnswer(p: PermissionRequest, answer: PermissionAnswer): PermissionRequest {
  return {
    requestId: p.requestId,
    toolCallId: p.toolCallId,
    title: p.title,
    toolKind: p.toolKind,
    options: p.options,
    answer,
  };
}

function rememberPermission(
  resolved: readonly ResolvedPermission[],
  r: ResolvedPermission,
): readonly ResolvedPermission[] {
  return appended(
    resolved.length < RESOLVED_PERMISSIONS_KEPT
      ? resolved
      : resolved.slice(resolved.length - RESOLVED_PERMISSIONS_KEPT + 1),
    r,
  );
}

function markHadTurn(d: Draft): void {
  if (d.execution && !d.execution.hadTurn) {
    const x = copyExecution(d.execution);
    x.hadTurn = true;
    d.execution = x;
  }
}

// ---------------------------------------------------------------------------------------------

/** Facts count only from the live execution: late entries of a predecessor change nothing. */
function isLive(s: SessionState, e: { executionId: string }): boolean {
  return !s.deleted && isCurrent(s, e.executionId);
}

/** The session's execution, not ended (it may belong to a deleted session, to be stopped). */
function isCurrent(s: SessionState, executionId: string): boolean {
  return s.execution !== null && s.execution.id === executionId && s.execution.phase !== 'ended';
}

/**
 * A dispatched turn the agent is silent on: nothing heard since dispatch (what the watchdog
 * abandons), or stalled since. The next agent fact is news for it.
 */
function quiet(t: Turn | null): t is Turn {
  return t !== null && t.phase === 'dispatched' && (!t.heardFromAgent || t.stalled);
}

/** An agent fact after dispatch: the first one is what the stall watchdog waits for. */
function countsAsEvent(s: SessionState): boolean {
  return quiet(s.turn);
}

function heard(d: Draft): void {
  if (!quiet(d.turn)) return;
  const t = copyTurn(d.turn);
  t.heardFromAgent = true;
  t.stalled = false;
  d.turn = t;
}

/** The held-open turn a pending handoff claim would restore, when it has yielded. */
function yieldedPredecessor(t: Turn | null): boolean {
  return t !== null && t.predecessor !== null && t.predecessor.yielded;
}

function outputChanges(s: SessionState): boolean {
  const t = s.turn;
  return !s.generating || (t !== null && (t.yielded || quiet(t) || yieldedPredecessor(t)));
}

/** Foreground output: generating (a new foreground epoch if it was not), and the turn heard from. */
function output(d: Draft): void {
  if (!d.generating) d.foregroundEpoch += 1;
  d.generating = true;
  const t = d.turn;
  if (t !== null && (t.yielded || quiet(t) || yieldedPredecessor(t))) {
    const turn = copyTurn(t);
    turn.yielded = false;
    turn.heardFromAgent = t.heardFromAgent || t.phase === 'dispatched';
    turn.stalled = false;
    // The turn a handoff claim replaces is generating again: no longer yielded.
    if (yieldedPredecessor(t)) {
      const p = copyTurn(t.predecessor!);
      p.yielded = false;
      turn.predecessor = p;
    }
    d.turn = turn;
  }
}

function onIdle(s: SessionState, origin: string, generation: number | undefined): Draft | null {
  const t = s.turn;
  const dispatched = t !== null && t.phase === 'dispatched';
  // Only the human cycle of the running prompt yields the foreground; autonomous cycles
  // (task notifications, wake-ups) end themselves and nothing else.
  const yields = dispatched && origin === 'human' && generation === t.generation;
  // The held-open turn behind a pending handoff claim yields again by its own human idle.
  const p = t !== null && t.phase === 'claimed' ? t.predecessor : null;
  const predecessorYields =
    p !== null && origin === 'human' && generation === p.generation && !p.yielded;
  if (
    !s.generating &&
    !predecessorYields &&
    (!dispatched || (t.heardFromAgent && !t.stalled && (t.yielded || !yields)))
  )
    return null;
  const d = copySession(s);
  d.generating = false;
  if (dispatched) {
    const turn = copyTurn(t);
    turn.heardFromAgent = true;
    turn.stalled = false;
    turn.yielded = t.yielded || yields;
    d.turn = turn;
  } else if (predecessorYields) {
    const turn = copyTurn(t!);
    const held = copyTurn(p);
    held.yielded = true;
    turn.predecessor = held;
    d.turn = turn;
  }
  return d;
}

function onDispatched(s: SessionState, promptId: string, generation: number): Draft | null {
  const slot = claimSlot(s, promptId, generation);
  if (!slot || s[slot]!.phase !== 'claimed') return null;
  const d = copySession(s);
  // The agent has the prompt: its text is no longer needed for (re-)delivery, and a handoff
  // has taken over the turn it replaces.
  const t = copyTurn(s[slot]!);
  t.phase = 'dispatched';
  t.text = null;
  t.predecessor = null;
  d[slot] = t;
  return d;
}

function onDispatchFailed(s: SessionState, promptId: string, generation: number): Draft | null {
  const slot = claimSlot(s, promptId, generation);
  if (!slot || s[slot]!.phase !== 'claimed') return null;
  const claim = s[slot]!;
  const d = copySession(s);
  // A handoff that never reached the agent gives the session back the turn the agent still
  // holds open, as it stands now (output, idles and its end since were folded into it).
  d[slot] = claim.predecessor;
  // Output after the claim means the agent is generating on its own: shown until its next idle
  // boundary (or the quiet period), though it no longer holds admission by itself.
  d.generating =
    claim.predecessor !== null
      ? s.generating
      : s.generating || s.foregroundEpoch !== claim.claimEpoch;
  const record = d.prompts[promptId]!;
  const counted = copyPrompt(record);
  counted.dispatchAttempts = record.dispatchAttempts + 1;
  d.prompts = withEntry(d.prompts, promptId, counted);
  if (counted.dispatchAttempts >= MAX_DISPATCH_ATTEMPTS) setPrompt(d, promptId, 'rejected');
  else requeueAtHead(d, promptId, claim.text);
  return d;
}

/** The end of a turn (or its abandonment by the watchdog, which is no agent event). */
function onTurnEnded(s: SessionState, generation: number, agentEvent: boolean): Draft | null {
  const endsSteer = s.steer !== null && s.steer.generation === generation;
  const endsTurn = s.turn !== null && s.turn.generation === generation;
  const endsHeld = s.turn !== null && s.turn.predecessor?.generation === generation;
  if (!endsSteer && !endsTurn && !endsHeld && !(agentEvent && countsAsEvent(s))) return null;
  const d = copySession(s);
  if (agentEvent) heard(d);
  if (endsSteer) d.steer = null;
  if (endsHeld) {
    // The held-open turn behind a pending handoff claim ended: nothing to restore any more.
    const t = copyTurn(d.turn!);
    t.predecessor = null;
    d.turn = t;
    d.generating = false;
    markHadTurn(d);
    return d;
  }
  if (!endsTurn) return d; // stale: a predecessor's end
  // A steer carries on as the foreground turn: delivered into this turn, it continues it; not
  // delivered yet, it reaches an agent whose turn is over, and is a turn of its own (left as a
  // steer, it would run with no turn to watch it).
  d.turn = d.steer;
  d.steer = null;
  d.generating = false;
  markHadTurn(d);
  return d;
}

function onTool(
  s: SessionState,
  e: EntryOf<'tool.started'> | EntryOf<'tool.updated'>,
): Draft | null {
  const { toolCallId, parentToolCallId, ownership: evidence, status } = e.data;
  const done = status === 'completed' || status === 'failed';
  let { tools, foregroundTools, childTools } = s;
  let owner: ToolOwnership | undefined;
  // A known tool keeps the ownership its first evidence gave it; completing forgets it.
  if (tools[toolCallId] !== undefined) {
    owner = 'background';
    if (done) tools = withoutKey(tools, toolCallId);
  } else {
    const fg = sortedIndexOf(foregroundTools, toolCallId);
    const child = fg >= 0 ? -1 : sortedIndexOf(childTools, toolCallId);
    if (fg >= 0) {
      owner = 'foreground';
      if (done) foregroundTools = removeAt(foregroundTools, fg);
    } else if (child >= 0) {
      owner = 'child';
      if (done) childTools = removeAt(childTools, child);
    } else {
      // Lineage wins over shape: a tool with any parent is never top-level foreground work,
      // whatever the parent's own ownership (or absence of it) is.
      owner = parentToolCallId !== undefined ? 'child' : evidence;
      // Recorded until it completes (a first frame that completes it records nothing).
      if (!done && owner === 'foreground')
        foregroundTools = insertAt(foregroundTools, -fg - 1, toolCallId);
      else if (!done && owner === 'child')
        childTools = insertAt(childTools, -child - 1, toolCallId);
      else if (!done && owner === 'background') tools = withEntry(tools, toolCallId, 'background');
    }
  }
  const same =
    tools === s.tools && foregroundTools === s.foregroundTools && childTools === s.childTools;
  if (same && !countsAsEvent(s) && !(owner === 'foreground' && outputChanges(s))) return null;
  const d = copySession(s);
  heard(d);
  d.tools = tools;
  d.foregroundTools = foregroundTools;
  d.childTools = childTools;
  if (owner === 'foreground' && outputChanges(d)) output(d);
  return d;
}

// Arrays are built at their exact size: one grown by push or spread keeps spare capacity (a
// two-item array then takes ~200 B instead of ~65 B), and states are held by the thousand.

function insertAt(sorted: readonly string[], at: number, id: string): readonly string[] {
  const out = new Array<string>(sorted.length + 1);
  for (let i = 0; i < at; i++) out[i] = sorted[i]!;
  out[at] = id;
  for (let i = at; i < sorted.length; i++) out[i + 1] = sorted[i]!;
  return out;
}

function removeAt<T>(list: readonly T[], at: number): readonly T[] {
  if (list.length === 1) return NO_IDS;
  const out = new Array<T>(list.length - 1);
  for (let i = 0; i < at; i++) out[i] = list[i]!;
  for (let i = at + 1; i < list.length; i++) out[i - 1] = list[i]!;
  return out;
}

function appended<T>(list: readonly T[], item: T): readonly T[] {
  const out = new Array<T>(list.length + 1);
  for (let i = 0; i < list.length; i++) out[i] = list[i]!;
  out[list.length] = item;
  return out;
}

/** A copy of a record with one entry set (Object.assign copies small records fastest in V8). */
function withEntry<V>(r: Readonly<Record<string, V>>, key: string, value: V): Record<string, V> {
  const out: Record<string, V> = Object.assign({}, r);
  out[key] = value;
  return out;
}

/** A copy without `key`, built afresh: `delete` would turn the copy into a slow dictionary. */
function withoutKey<V>(r: Readonly<Record<string, V>>, key: string): Readonly<Record<string, V>> {
  let out: Record<string, V> | null = null;
  for (const k in r) if (k !== key) (out ??= {})[k] = r[k]!;
  return out ?? NO_ENTRIES;
}

function attests(caps: Capabilities | null, kind: string): boolean {
  return caps !== null && caps.attestedKinds.includes(kind);
}

function onBackgroundStarted(d: Draft, e: EntryOf<'background.started'>): void {
  const { work, toolCallId, attested } = e.data;
  const registration: Registration = {
    work,
    toolCallId: toolCallId ?? null,
    attested: attested && attests(d.execution!.capabilities, work.kind),
    presumedEnded: false,
  };
  const index = d.background.findIndex((r) => r.work.id === work.id);
  d.background =
    index === -1
      ? appended(d.background, registration)
      : d.background.map((r, i) => (i === index ? registration : r));
}

/** The registrations after a completion (the same array when it retires nothing). */
function backgroundAfterEnd(
  s: SessionState,
  e: EntryOf<'background.ended'>,
): readonly Registration[] {
  const { workId, toolCallId, kind } = e.data;
  if (workId !== undefined || toolCallId !== undefined) {
    const background = s.background.filter(
      (r) =>
        !(
          (workId !== undefined && r.work.id === workId) ||
          (toolCallId !== undefined && r.toolCallId === toolCallId)
        ),
    );
    return background.length === s.background.length ? s.background : background;
  }
  if (e.data.candidates !== undefined) return unidentifiedEnd(s.background, e.data);
  // No identity: hide one registration from counts only when the adapter says the pairing is
  // unambiguous and exactly one candidate exists; it stays registered, so admission never relies on it.
  const caps = s.execution!.capabilities;
  if (kind === undefined || !caps || !caps.unambiguousCompletionKinds.includes(kind))
    return s.background;
  const candidates = s.background.filter((r) => r.work.kind === kind && !r.presumedEnded);
  if (candidates.length !== 1) return s.background;
  const target = candidates[0]!;
  return s.background.map((r) => (r === target ? { ...r, presumedEnded: true } : r));
}

/**
 * "Some work finished" without saying which: exactly one live unattested candidate (and the report
 * cannot be of none) is retired for display; otherwise each such candidate is marked possibly
 * finished.
 * Both stay registered, so admission never relaxes on it; an identified end or the execution's
 * end removes them.
 */
function unidentifiedEnd(
  background: readonly Registration[],
  { candidates, mayBeNone }: EntryOf<'background.ended'>['data'],
): readonly Registration[] {
  const named = new Set(candidates);
  // Attested work ends by its own identity: it is never a guess's candidate.
  const candidate = (r: Registration) => named.has(r.work.id) && !r.attested && !r.presumedEnded;
  let live = 0;
  for (const r of background) if (candidate(r)) live++;
  if (live === 0) return background;
  if (live === 1 && mayBeNone !== true)
    return background.map((r) => (candidate(r) ? { ...r, presumedEnded: true } : r));
  if (!background.some((r) => candidate(r) && !r.work.possiblyFinished)) return background;
  return background.map((r) =>
    candidate(r) && !r.work.possiblyFinished
      ? { ...r, work: { ...r.work, possiblyFinished: true as const } }
      : r,
  );
}

/** Everything the execution owned goes with it; a claim that never reached the agent is requeued. */
function retireExecution(d: Draft): void {
  const claims = [d.steer, d.turn];
  // The agent that asked is gone: its requests end with it, unanswered.
  if (d.permissions.length > 0) {
    let resolved = d.resolvedPermissions;
    for (const p of d.permissions) {
      if (!resolved.some((r) => r.requestId === p.requestId))
        resolved = rememberPermission(resolved, {
          requestId: p.requestId,
          outcome: 'cancelled',
          optionId: null,
          by: 'execution_ended',
        });
    }
    d.resolvedPermissions = resolved;
    d.permissions = NO_IDS;
  }
  d.tools = NO_ENTRIES;
  d.foregroundTools = NO_IDS;
  d.childTools = NO_IDS;
  d.background = NO_IDS;
  d.generating = false;
  d.turn = null;
  d.steer = null;
  for (const claim of claims) {
    if (claim && claim.phase === 'claimed' && !d.deleted && d.prompts[claim.promptId])
      requeueAtHead(d, claim.promptId, claim.text);
  }
}

function endExecution(d: Draft, reason: ExecutionEndReason): void {
  const x = copyExecution(d.execution!);
  // Closed for being idle, its ACP session kept: the next prompt or a resume loads it.
  if (x.stopping === 'parked' && d.agentSession?.executionId === x.id) d.parked = true;
  retireExecution(d);
  x.phase = 'ended';
  x.endReason = reason;
  d.execution = x;
}

function claimSlot(s: SessionState, promptId: string, generation: number): 'turn' | 'steer' | null {
  if (s.turn && s.turn.promptId === promptId && s.turn.generation === generation) return 'turn';
  if (s.steer && s.steer.promptId === promptId && s.steer.generation === generation) return 'steer';
  return null;
}

function answered(d: Draft, commandId: string | undefined): void {
  if (commandId === undefined) return;
  let kept: PendingCommand[] | null = null;
  for (let i = 0; i < d.pending.length; i++) {
    const p = d.pending[i]!;
    if (p.data.commandId === commandId) kept ??= d.pending.slice(0, i);
    else if (kept) kept.push(p);
  }
  if (kept) d.pending = kept.length === 0 ? NO_IDS : Array.from(kept);
}

function without(queue: readonly string[], id: string): readonly string[] {
  const at = queue.indexOf(id);
  return at === -1 ? queue : removeAt(queue, at);
}

/** The queue with `id` first (moved there if it was in it). */
function toHead(queue: readonly string[], id: string): readonly string[] {
  const rest = without(queue, id);
  const out = new Array<string>(rest.length + 1);
  out[0] = id;
  for (let i = 0; i < rest.length; i++) out[i + 1] = rest[i]!;
  return out;
}

/** Back to the head of the queue, with the text its claim carried. */
function requeueAtHead(d: Draft, promptId: string, text: string | null): void {
  setPrompt(d, promptId, 'queued', text);
  d.queue = toHead(d.queue, promptId);
}

function isSettled(status: PromptStatus): status is SettledStatus {
  return status !== 'pending' && status !== 'queued';
}

/**
 * Sets a prompt's status. A settled prompt drops its text and joins the bounded memory of settled
 * prompts (`settled`), so a retried idempotency key is answered without the session growing
 * forever. (An admitted prompt's text rides on its claim until dispatch, and comes back with it if
 * the claim is requeued: `text` then restores it.) Its open record stays until the entry is folded
 * (closeSettled), so that an admission can still take its claim from it.
 */
function setPrompt(
  d: Draft,
  promptId: string,
  status: PromptStatus,
  text: string | null = d.prompts[promptId]?.text ?? null,
): void {
  const record = d.prompts[promptId];
  const at = isSettled(status) ? rememberedAt(d, promptId) : -1;
  // A prompt only remembered as settled can only settle again (its full record is gone).
  if (!record) {
    if (at !== -1) d.settled = resettled(d.settled, at, status as SettledStatus);
    return;
  }
  const changed = copyPrompt(record);
  changed.status = status;
  changed.text = isSettled(status) ? null : text;
  d.prompts = withEntry(d.prompts, promptId, changed);
  if (!isSettled(status)) return;
  // Settled again after a requeue: the prompt keeps its place in the memory.
  if (at !== -1) {
    d.settled = resettled(d.settled, at, status);
    return;
  }
  // Settled for the first time (or again after it fell out of the memory): the newest.
  const entry: SettledPrompt = { promptId, idempotencyKey: record.idempotencyKey, status };
  const { settled } = d;
  d.settled = appended(
    settled.length < SETTLED_PROMPTS_KEPT
      ? settled
      : settled.slice(settled.length - SETTLED_PROMPTS_KEPT + 1),
    entry,
  );
}

function rememberedAt(s: SessionState, promptId: string): number {
  for (let i = s.settled.length - 1; i >= 0; i--) if (s.settled[i]!.promptId === promptId) return i;
  return -1;
}

function resettled(
  settled: readonly SettledPrompt[],
  at: number,
  status: SettledStatus,
): readonly SettledPrompt[] {
  const old = settled[at]!;
  if (old.status === status) return settled;
  const copy = settled.slice();
  copy[at] = { promptId: old.promptId, idempotencyKey: old.idempotencyKey, status };
  return copy;
}

/**
 * After an entry: a settled prompt that holds no claim leaves the open records (it is remembered
 * in `settled`, or forgotten if it already fell out of that memory).
 */
function closeSettled(d: Draft): void {
  let any = false;
  for (const id in d.prompts) if (closes(d, d.prompts[id]!)) any = true;
  if (!any) return;
  let prompts: Record<string, PromptRecord> | null = null;
  let promptByKey: Record<string, string> | null = null;
  for (const id in d.prompts) {
    const p = d.prompts[id]!;
    if (closes(d, p)) continue;
    (prompts ??= {})[id] = p;
    (promptByKey ??= {})[p.idempotencyKey] = id;
  }
  d.prompts = prompts ?? NO_ENTRIES;
  d.promptByKey = promptByKey ?? NO_ENTRIES;
}

function closes(s: SessionState, p: PromptRecord): boolean {
  return isSettled(p.status) && !claims(s.turn, p.promptId) && !claims(s.steer, p.promptId);
}

function claims(t: Turn | null, promptId: string): boolean {
  return t !== null && t.phase === 'claimed' && t.promptId === promptId;
}
