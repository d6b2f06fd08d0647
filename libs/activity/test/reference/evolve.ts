import type {
  Capabilities,
  EntryOf,
  ExecutionStopReason,
  StreamEntry,
  TaskEntry,
  TaskStatus,
} from '@baton/protocol';
import {
  MAX_DISPATCH_ATTEMPTS,
  SETTLED_PROMPTS_KEPT,
  initialSessionState,
  type ExecutionEndReason,
  type PendingCommand,
  type PromptRecord,
  type PromptStatus,
  type Registration,
  type SessionState,
  type TaskState,
  type ToolOwnership,
  type Turn,
} from './state';

// Reference copy of the domain core as it was before the performance work (commit 6bca40a), kept
// as the naive oracle that test/equivalence.spec.ts compares the optimized fold with. One change:
// the memory rule below (forgetUnremembered) is stated as intended. The liveness semantics of
// issue 14 (task lifecycle, force-release, execution requests, cancel timeout, quiet decay, the
// abandoned-turn policy, held-open turns behind a handoff claim) were written into it separately,
// from the semantics, in the same naive style: every change spelled out as a new object.

/**
 * evolve(state, entry) → state: the whole fold. Pure: no clock, no I/O, no randomness; the same
 * entries give the same state on every replica. An entry for another task is a programming error.
 */
export function evolve(state: TaskState, entry: StreamEntry): TaskState {
  if (entry.taskId !== state.taskId) {
    throw new Error(`entry of task ${entry.taskId} folded into task ${state.taskId}`);
  }
  if (!('sessionId' in entry)) return evolveTask(state, entry);
  const before = state.sessions[entry.sessionId] ?? newSession(state, entry.sessionId);
  const after = evolveSession(before, entry, state.status);
  if (after === before && state.sessions[entry.sessionId]) return state;
  return { ...state, sessions: { ...state.sessions, [entry.sessionId]: after } };
}

/** A session first named in a deleted task is deleted from the start: nothing revives the task. */
function newSession(state: TaskState, id: string): SessionState {
  const s = initialSessionState(id);
  return state.status === 'deleted' ? { ...s, deleted: true } : s;
}

// ----- task-wide entries --------------------------------------------------------------------------

function evolveTask(state: TaskState, e: TaskEntry): TaskState {
  switch (e.type) {
    case 'task.archive':
    case 'task.unarchive':
    case 'task.delete':
      if (state.pending.some((p) => p.data.commandId === e.data.commandId)) return state;
      return { ...state, pending: [...state.pending, { type: e.type, data: e.data }] };
    case 'task.command_rejected':
      return { ...state, pending: taskAnswered(state, e.data.commandId) };
    case 'task.unarchived':
      // Nothing brings a deleted task back.
      return {
        ...state,
        pending: taskAnswered(state, e.data.commandId),
        status: state.status === 'deleted' ? 'deleted' : 'active',
      };
    case 'task.archived':
    case 'task.deleted': {
      const status: TaskStatus =
        state.status === 'deleted' || e.type === 'task.deleted' ? 'deleted' : 'archived';
      const sessions: Record<string, SessionState> = {};
      for (const [id, s] of Object.entries(state.sessions))
        sessions[id] = forgetUnremembered(closeSession(s, status));
      return { ...state, pending: taskAnswered(state, e.data.commandId), status, sessions };
    }
  }
}

function taskAnswered(state: TaskState, commandId: string | undefined): TaskState['pending'] {
  if (commandId === undefined) return state.pending;
  return state.pending.filter((p) => p.data.commandId !== commandId);
}

/**
 * A session of a task that is archived or deleted: every prompt still waiting (queued, or claimed
 * and not yet with the agent) is removed, a handoff claim gives back the turn the agent still
 * holds, nothing waits for a worker, and the live execution is to be stopped. Deleting also
 * deletes the session, and with it everything its execution owned.
 */
function closeSession(s: SessionState, status: 'archived' | 'deleted'): SessionState {
  let next = s;
  for (const id of s.queue) next = setPrompt(next, id, 'removed');
  if (s.turn && s.turn.phase === 'claimed') next = setPrompt(next, s.turn.promptId, 'removed');
  if (s.steer && s.steer.phase === 'claimed') next = setPrompt(next, s.steer.promptId, 'removed');
  next = {
    ...next,
    queue: s.queue.length > 0 ? [] : s.queue,
    turn: s.turn && s.turn.phase === 'claimed' ? s.turn.predecessor : s.turn,
    steer: s.steer && s.steer.phase === 'claimed' ? null : s.steer,
    requestedExecution: null,
  };
  if (status === 'deleted') next = retireExecution({ ...next, deleted: true });
  return stopExecution(next, status === 'deleted' ? 'task_deleted' : 'task_archived');
}

// ----- one session --------------------------------------------------------------------------------

export function evolveSession(
  s: SessionState,
  e: Exclude<StreamEntry, TaskEntry>,
  task: TaskStatus = 'active',
): SessionState {
  const next = step(s, e, task);
  return next === s ? s : forgetUnremembered(next);
}

/**
 * The memory rule, stated naively: a prompt is remembered while it is open (pending, queued),
 * while it holds a claim, or while it is among the SETTLED_PROMPTS_KEPT most recently settled.
 * (The fold before the performance work forgot the oldest settled id even when that prompt had
 * been requeued or still held its claim, losing a live record; this reference does not.)
 */
function forgetUnremembered(s: SessionState): SessionState {
  const claimed = new Set(
    [s.turn, s.steer].flatMap((c) => (c && c.phase === 'claimed' ? [c.promptId] : [])),
  );
  const kept = new Set(s.settled);
  const forget = Object.values(s.prompts).filter(
    (p) => SETTLED.has(p.status) && !claimed.has(p.promptId) && !kept.has(p.promptId),
  );
  if (forget.length === 0) return s;
  const prompts = { ...s.prompts };
  const promptByKey = { ...s.promptByKey };
  for (const p of forget) {
    delete prompts[p.promptId];
    delete promptByKey[p.idempotencyKey];
  }
  return { ...s, prompts, promptByKey };
}

function step(s: SessionState, e: Exclude<StreamEntry, TaskEntry>, task: TaskStatus): SessionState {
  switch (e.type) {
    // Permission requests and parking (issue 18) are not modelled by this reference: the
    // equivalence generator makes none; test/properties.spec.ts, permissions.spec.ts and
    // parking.spec.ts cover them.
    case 'permission.requested':
    case 'permission.resolved':
    case 'permission.respond':
    case 'permission.answered':
    case 'agent.session':
    case 'execution.parked':
      return s;
    // ----- facts -------------------------------------------------------------------------------
    case 'execution.started': {
      if (e.generation <= s.lastGeneration) return s; // a late predecessor
      // Where nothing may run (a deleted task or session, an archived task), the execution is
      // recorded only so that it is stopped.
      const stopping: ExecutionStopReason | null =
        task === 'deleted'
          ? 'task_deleted'
          : s.deleted
            ? 'session_deleted'
            : task === 'archived'
              ? 'task_archived'
              : null;
      const startsRequested = s.requestedExecution === e.executionId;
      const lateStart =
        s.failure !== null &&
        s.failure.reason === 'no_worker' &&
        s.failure.executionId === e.executionId;
      return {
        ...retireExecution(s),
        lastGeneration: e.generation,
        execution: {
          id: e.executionId,
          generation: e.generation,
          phase: 'starting',
          capabilities: null,
          endReason: null,
          hadTurn: false,
          stopping,
        },
        requestedExecution: startsRequested ? null : s.requestedExecution,
        failure: lateStart ? null : s.failure,
      };
    }
    case 'capabilities.negotiated':
      if (!isLive(s, e)) return s;
      return { ...s, execution: { ...s.execution!, phase: 'ready', capabilities: e.data } };
    case 'execution.ended':
      // Even a deleted session's execution ends (its stop is then no longer owed).
      if (!isCurrent(s, e.executionId)) return s;
      return endExecution(s, e.data.reason);
    case 'prompt.dispatched':
      if (!isLive(s, e)) return s;
      return onDispatched(s, e.data.promptId, e.data.admissionGeneration);
    case 'prompt.dispatch_failed':
      if (!isLive(s, e)) return s;
      return onDispatchFailed(s, e.data.promptId, e.data.admissionGeneration);
    case 'foreground.output':
      if (!isLive(s, e)) return s;
      return foregroundOutput(s);
    case 'foreground.idle':
      if (!isLive(s, e)) return s;
      return onIdle(s, e.data.origin, e.data.admissionGeneration);
    case 'turn.ended':
      if (!isLive(s, e)) return s;
      return onTurnEnded(heardFromAgent(s), e.data.admissionGeneration);
    case 'tool.started':
    case 'tool.updated':
      if (!isLive(s, e)) return s;
      return onTool(heardFromAgent(s), e);
    case 'background.started':
      if (!isLive(s, e)) return s;
      return onBackgroundStarted(heardFromAgent(s), e);
    case 'background.ended':
      if (!isLive(s, e)) return s;
      return onBackgroundEnded(heardFromAgent(s), e);

    // ----- commands: recorded until the owner decides them ------------------------------------
    case 'prompt.submit': {
      const d = e.data;
      if (s.promptByKey[d.idempotencyKey] !== undefined || s.prompts[d.promptId]) return s;
      const record: PromptRecord = {
        promptId: d.promptId,
        idempotencyKey: d.idempotencyKey,
        origin: d.origin,
        text: d.text,
        status: 'pending',
        dispatchAttempts: 0,
        sendNow: false,
      };
      return {
        ...s,
        prompts: { ...s.prompts, [d.promptId]: record },
        promptByKey: { ...s.promptByKey, [d.idempotencyKey]: d.promptId },
        pending: [...s.pending, { type: e.type, data: d }],
      };
    }
    case 'queue.cancel':
    case 'queue.send_now':
    case 'queue.set_auto_run':
    case 'session.cancel':
    case 'session.reset':
    case 'session.delete':
    case 'session.configure':
    case 'session.force_release':
    case 'execution.request':
      if (s.pending.some((p) => p.data.commandId === e.data.commandId)) return s;
      return { ...s, pending: [...s.pending, { type: e.type, data: e.data } as PendingCommand] };

    // ----- decisions ---------------------------------------------------------------------------
    case 'prompt.admitted': {
      const d = e.data;
      // The record settles (its text goes); the claim carries the text until dispatch.
      const text = s.prompts[d.promptId]?.text ?? null;
      let next = answered(s, d.commandId);
      next = setPrompt(next, d.promptId, 'admitted');
      next = {
        ...next,
        queue: without(next.queue, d.promptId),
        admissionGeneration: d.admissionGeneration,
      };
      const turn: Turn = {
        promptId: d.promptId,
        generation: d.admissionGeneration,
        mode: d.mode,
        phase: 'claimed',
        claimEpoch: next.foregroundEpoch,
        yielded: false,
        heardFromAgent: false,
        stalled: false,
        cancel: null,
        // A handoff takes over the held-open turn only once the agent has it; until then the
        // claim keeps that turn, which is the session's turn again if the claim never gets there.
        predecessor: d.mode === 'handoff' ? next.turn : null,
        text,
      };
      // A new turn supersedes the last failure; a steer runs inside the current turn.
      return d.mode === 'steer' ? { ...next, steer: turn } : { ...next, turn, failure: null };
    }
    case 'prompt.queued': {
      const next = setPrompt(answered(s, e.data.commandId), e.data.promptId, 'queued');
      return next.queue.includes(e.data.promptId)
        ? next
        : { ...next, queue: [...next.queue, e.data.promptId] };
    }
    case 'prompt.rejected':
    case 'prompt.removed': {
      const next = answered(s, e.data.commandId);
      const status = e.type === 'prompt.rejected' ? 'rejected' : 'removed';
      return {
        ...setPrompt(next, e.data.promptId, status),
        queue: without(next.queue, e.data.promptId),
      };
    }
    case 'prompt.released': {
      const next = answered(s, e.data.commandId);
      const slot = claimSlot(next, e.data.promptId, e.data.admissionGeneration);
      if (!slot || next[slot]!.phase !== 'claimed') return next;
      const claim = next[slot]!;
      return requeueAtHead({ ...next, [slot]: claim.predecessor }, claim.promptId, claim.text);
    }
    case 'prompt.promoted': {
      const next = answered(s, e.data.commandId);
      const record = next.prompts[e.data.promptId];
      if (!record || record.status !== 'queued') return next;
      return {
        ...next,
        queue: [e.data.promptId, ...without(next.queue, e.data.promptId)],
        prompts: { ...next.prompts, [e.data.promptId]: { ...record, sendNow: true } },
      };
    }
    case 'queue.auto_run_set':
      return { ...answered(s, e.data.commandId), autoRun: e.data.enabled };
    case 'turn.cancel_requested': {
      const next = answered(s, e.data.commandId);
      if (!next.turn || next.turn.generation !== e.data.admissionGeneration) return next;
      return { ...next, turn: { ...next.turn, cancel: e.data.reason } };
    }
    case 'command.rejected':
      return answered(s, e.data.commandId);
    case 'session.configured': {
      const { admission, steering, queueCapacity, abandonedTurn } = e.data;
      return {
        ...answered(s, e.data.commandId),
        config: { admission, steering, queueCapacity, abandonedTurn },
      };
    }
    case 'session.was_reset':
      // Explicit reset owns full cleanup of activity and stops the execution; the queue and the
      // running turn stay.
      return stopExecution(
        { ...answered(s, e.data.commandId), background: [], tools: {}, generating: false },
        'session_reset',
      );
    case 'session.deleted': {
      let next: SessionState = { ...answered(s, e.data.commandId), deleted: true };
      for (const id of next.queue) next = setPrompt(next, id, 'removed');
      // A claim the agent never got goes with the queue.
      for (const claim of [s.turn, s.steer]) {
        if (claim && claim.phase === 'claimed') next = setPrompt(next, claim.promptId, 'removed');
      }
      next = { ...retireExecution(next), queue: [], requestedExecution: null, failure: null };
      return stopExecution(next, 'session_deleted');
    }
    case 'session.force_released': {
      // An operator ends whatever holds the session now: a prompt the agent has is cancelled, a
      // claim it never got goes back to the head of the queue; its activity is cleared and its
      // execution stopped.
      let next = answered(s, e.data.commandId);
      const held = [s.turn, s.turn ? s.turn.predecessor : null, s.steer];
      const cancelled = held.filter((t) => t !== null && t.phase === 'dispatched');
      for (const t of held) {
        if (!t) continue;
        next =
          t.phase === 'claimed'
            ? requeueAtHead(next, t.promptId, t.text)
            : setPrompt(next, t.promptId, 'force_released');
      }
      next = {
        ...next,
        turn: null,
        steer: null,
        background: [],
        tools: {},
        generating: false,
        failure:
          cancelled.length > 0
            ? { reason: 'force_released', promptId: cancelled[0]!.promptId }
            : { reason: 'force_released' },
      };
      if (cancelled.length > 0) next = markHadTurn(next);
      return stopExecution(next, 'force_released');
    }
    case 'execution.lost':
      if (!isCurrent(s, e.data.executionId)) return s;
      return endExecution(s, 'lost');
    case 'turn.stalled': {
      // Advised once per silence: the running turn is marked stalled until the agent speaks.
      const t = s.turn;
      const silences =
        t !== null &&
        t.generation === e.data.admissionGeneration &&
        t.phase === 'dispatched' &&
        !t.stalled;
      if (!silences && e.data.admissionGeneration <= s.stallAdvised) return s;
      return {
        ...s,
        stallAdvised: Math.max(s.stallAdvised, e.data.admissionGeneration),
        turn: silences ? { ...t, stalled: true } : t,
      };
    }
    case 'turn.abandoned': {
      if (!s.turn || s.turn.generation !== e.data.admissionGeneration) return s;
      const next: SessionState = {
        ...setPrompt(onTurnEnded(s, e.data.admissionGeneration), e.data.promptId, 'abandoned'),
        failure: { reason: 'turn_abandoned', promptId: e.data.promptId },
      };
      return e.data.then === 'stop_execution' ? stopExecution(next, 'turn_abandoned') : next;
    }
    case 'turn.cancel_timed_out': {
      const t = s.turn;
      if (!t || t.generation !== e.data.admissionGeneration || t.phase !== 'dispatched') return s;
      // The turn ends without the agent; a steer the agent has goes down with it (and is told), one
      // it never got waits (claimed) for the execution's end to requeue it.
      let ended = setPrompt(s, t.promptId, 'cancel_timed_out');
      if (s.steer && s.steer.phase === 'dispatched')
        ended = setPrompt(ended, s.steer.promptId, 'cancel_timed_out');
      else if (s.steer) ended = requeueAtHead(ended, s.steer.promptId, s.steer.text);
      const next: SessionState = {
        ...ended,
        turn: null,
        steer: null,
        generating: false,
        failure: { reason: 'cancel_timeout', promptId: t.promptId },
      };
      return stopExecution(markHadTurn(next), 'cancel_timeout');
    }
    case 'foreground.quiesced':
      // Only output outside any turn decays, and only the burst the timer was raised for.
      if (!s.generating || s.turn || s.steer || s.foregroundEpoch !== e.data.foregroundEpoch)
        return s;
      return { ...s, generating: false };
    case 'execution.requested': {
      const next = answered(s, e.data.commandId);
      // A request folded after its execution already started waits for nothing.
      const started = s.execution !== null && s.execution.id === e.data.executionId;
      return {
        ...next,
        requestedExecution: started ? s.requestedExecution : e.data.executionId,
        failure: s.failure && s.failure.reason === 'no_worker' ? null : s.failure,
      };
    }
    case 'execution.request_expired':
      if (s.requestedExecution !== e.data.executionId) return s;
      return {
        ...s,
        requestedExecution: null,
        failure: { reason: 'no_worker', executionId: e.data.executionId },
      };
  }
}

// ---------------------------------------------------------------------------------------------

/** The session's execution, not ended (possibly a deleted session's, which is being stopped). */
function isCurrent(s: SessionState, executionId: string): boolean {
  return s.execution !== null && s.execution.id === executionId && s.execution.phase !== 'ended';
}

/** Facts count only from the live execution: late entries of a predecessor change nothing. */
function isLive(s: SessionState, e: { executionId: string }): boolean {
  return !s.deleted && isCurrent(s, e.executionId);
}

/** The owner is to stop the live execution; the first reason given is the one it gives. */
function stopExecution(s: SessionState, reason: ExecutionStopReason): SessionState {
  const x = s.execution;
  if (!x || x.phase === 'ended' || x.stopping !== null) return s;
  return { ...s, execution: { ...x, stopping: reason } };
}

function markHadTurn(s: SessionState): SessionState {
  return s.execution ? { ...s, execution: { ...s.execution, hadTurn: true } } : s;
}

/** Any agent fact: the dispatched turn has been heard from, and is not silent any more. */
function heardFromAgent(s: SessionState): SessionState {
  if (!s.turn || s.turn.phase !== 'dispatched') return s;
  if (s.turn.heardFromAgent && !s.turn.stalled) return s;
  return { ...s, turn: { ...s.turn, heardFromAgent: true, stalled: false } };
}

/**
 * Foreground output: generating (a new foreground epoch if it was not). It is news from the agent
 * for a dispatched turn, and undoes any yield: the turn's, and that of the held-open turn behind a
 * handoff claim.
 */
function foregroundOutput(s: SessionState): SessionState {
  const t = s.turn;
  return {
    ...s,
    generating: true,
    foregroundEpoch: s.generating ? s.foregroundEpoch : s.foregroundEpoch + 1,
    turn: t && {
      ...t,
      yielded: false,
      heardFromAgent: t.heardFromAgent || t.phase === 'dispatched',
      stalled: false,
      predecessor: t.predecessor && { ...t.predecessor, yielded: false },
    },
  };
}

function onIdle(s: SessionState, origin: string, generation: number | undefined): SessionState {
  const t = s.turn;
  const next = { ...s, generating: false };
  if (t && t.phase === 'dispatched') {
    // Only the human cycle of the running prompt yields the foreground; autonomous cycles
    // (task notifications, wake-ups) end themselves and nothing else.
    const yields = origin === 'human' && generation === t.generation;
    return {
      ...next,
      turn: { ...t, heardFromAgent: true, stalled: false, yielded: t.yielded || yields },
    };
  }
  // The held-open turn behind a handoff claim yields by its own human idle.
  if (t && t.predecessor && origin === 'human' && generation === t.predecessor.generation) {
    return { ...next, turn: { ...t, predecessor: { ...t.predecessor, yielded: true } } };
  }
  return next;
}

function onDispatched(s: SessionState, promptId: string, generation: number): SessionState {
  const slot = claimSlot(s, promptId, generation);
  if (!slot || s[slot]!.phase !== 'claimed') return s;
  // The agent has the prompt: its text is no longer needed for (re-)delivery, and a handoff has
  // now replaced the turn it was claimed over.
  return { ...s, [slot]: { ...s[slot]!, phase: 'dispatched', text: null, predecessor: null } };
}

function onDispatchFailed(s: SessionState, promptId: string, generation: number): SessionState {
  const slot = claimSlot(s, promptId, generation);
  if (!slot || s[slot]!.phase !== 'claimed') return s;
  const claim = s[slot]!;
  // A handoff that never got to the agent leaves the agent's held-open turn as the session's turn,
  // as it stands now. Otherwise output after the claim means the agent generates on its own.
  const outputSinceClaim = s.foregroundEpoch !== claim.claimEpoch;
  const next: SessionState = {
    ...s,
    [slot]: claim.predecessor,
    generating: claim.predecessor ? s.generating : s.generating || outputSinceClaim,
  };
  const record = next.prompts[promptId]!;
  const attempts = record.dispatchAttempts + 1;
  const counted = {
    ...next,
    prompts: { ...next.prompts, [promptId]: { ...record, dispatchAttempts: attempts } },
  };
  if (attempts >= MAX_DISPATCH_ATTEMPTS) return setPrompt(counted, promptId, 'rejected');
  return requeueAtHead(counted, promptId, claim.text);
}

/** A turn ends: by the agent (turn.ended) or by the watchdog (abandoned). */
function onTurnEnded(s: SessionState, generation: number): SessionState {
  let next = s;
  if (next.steer && next.steer.generation === generation) next = { ...next, steer: null };
  const t = next.turn;
  // The held-open turn behind a handoff claim ended: there is nothing to give back any more.
  if (t && t.predecessor && t.predecessor.generation === generation) {
    return markHadTurn({ ...next, turn: { ...t, predecessor: null }, generating: false });
  }
  if (!t || t.generation !== generation) return next; // stale: a predecessor's end
  // A steer carries on as the foreground turn: delivered, it continues this turn; not delivered
  // yet, it reaches an agent whose turn is over, and is a turn of its own.
  return markHadTurn({ ...next, turn: next.steer, steer: null, generating: false });
}

function onTool(
  s: SessionState,
  e: EntryOf<'tool.started'> | EntryOf<'tool.updated'>,
): SessionState {
  const { toolCallId, parentToolCallId, ownership: evidence, status } = e.data;
  let owner: ToolOwnership | undefined = s.tools[toolCallId];
  let next = s;
  if (owner === undefined) {
    // Lineage wins over shape: a tool with any parent is never top-level foreground work,
    // whatever the parent's own ownership (or absence of it) is.
    owner = parentToolCallId !== undefined ? 'child' : evidence;
    if (owner !== undefined) next = { ...next, tools: { ...next.tools, [toolCallId]: owner } };
  }
  if (owner === 'foreground') next = foregroundOutput(next);
  if (status === 'completed' || status === 'failed') {
    if (next.tools[toolCallId] !== undefined) {
      const tools = { ...next.tools };
      delete tools[toolCallId];
      next = { ...next, tools };
    }
  }
  return next;
}

function attests(caps: Capabilities | null, kind: string): boolean {
  return caps !== null && caps.attestedKinds.includes(kind);
}

function onBackgroundStarted(s: SessionState, e: EntryOf<'background.started'>): SessionState {
  const { work, toolCallId, attested } = e.data;
  const registration: Registration = {
    work,
    toolCallId: toolCallId ?? null,
    attested: attested && attests(s.execution!.capabilities, work.kind),
    presumedEnded: false,
  };
  const index = s.background.findIndex((r) => r.work.id === work.id);
  const background =
    index === -1
      ? [...s.background, registration]
      : s.background.map((r, i) => (i === index ? registration : r));
  return { ...s, background };
}

function onBackgroundEnded(s: SessionState, e: EntryOf<'background.ended'>): SessionState {
  const { workId, toolCallId, kind } = e.data;
  if (workId !== undefined || toolCallId !== undefined) {
    const background = s.background.filter(
      (r) =>
        !(
          (workId !== undefined && r.work.id === workId) ||
          (toolCallId !== undefined && r.toolCallId === toolCallId)
        ),
    );
    return background.length === s.background.length ? s : { ...s, background };
  }
  // "One of these finished": one live candidate (the report being of one for sure) is hidden;
  // several are each marked possibly finished. All stay registered: admission never relaxes.
  if (e.data.candidates !== undefined) {
    const named = e.data.candidates;
    const live = s.background.filter(
      (r) => named.includes(r.work.id) && !r.attested && !r.presumedEnded,
    );
    if (live.length === 0) return s;
    if (live.length === 1 && e.data.mayBeNone !== true) {
      return {
        ...s,
        background: s.background.map((r) => (r === live[0] ? { ...r, presumedEnded: true } : r)),
      };
    }
    if (live.every((r) => r.work.possiblyFinished === true)) return s;
    return {
      ...s,
      background: s.background.map((r) =>
        live.includes(r) && r.work.possiblyFinished !== true
          ? { ...r, work: { ...r.work, possiblyFinished: true as const } }
          : r,
      ),
    };
  }
  // No identity: hide one registration from counts only when the adapter says the pairing is
  // unambiguous and exactly one candidate exists; it stays registered, so admission never relies on it.
  const caps = s.execution!.capabilities;
  if (kind === undefined || !caps || !caps.unambiguousCompletionKinds.includes(kind)) return s;
  const candidates = s.background.filter((r) => r.work.kind === kind && !r.presumedEnded);
  if (candidates.length !== 1) return s;
  const target = candidates[0]!;
  return {
    ...s,
    background: s.background.map((r) => (r === target ? { ...r, presumedEnded: true } : r)),
  };
}

/** Everything the execution owned goes with it; a claim that never reached the agent is requeued. */
function retireExecution(s: SessionState): SessionState {
  let next: SessionState = {
    ...s,
    tools: {},
    background: [],
    generating: false,
    turn: null,
    steer: null,
  };
  for (const claim of [s.steer, s.turn]) {
    if (claim && claim.phase === 'claimed' && !s.deleted && s.prompts[claim.promptId])
      next = requeueAtHead(next, claim.promptId, claim.text);
  }
  return next;
}

function endExecution(s: SessionState, reason: ExecutionEndReason): SessionState {
  const next = retireExecution(s);
  return { ...next, execution: { ...s.execution!, phase: 'ended', endReason: reason } };
}

function claimSlot(s: SessionState, promptId: string, generation: number): 'turn' | 'steer' | null {
  if (s.turn && s.turn.promptId === promptId && s.turn.generation === generation) return 'turn';
  if (s.steer && s.steer.promptId === promptId && s.steer.generation === generation) return 'steer';
  return null;
}

function answered(s: SessionState, commandId: string | undefined): SessionState {
  if (commandId === undefined) return s;
  const pending = s.pending.filter((p) => p.data.commandId !== commandId);
  return pending.length === s.pending.length ? s : { ...s, pending };
}

function without(queue: readonly string[], id: string): readonly string[] {
  return queue.includes(id) ? queue.filter((q) => q !== id) : queue;
}

/** Back to the head of the queue, with the text its claim carried. */
function requeueAtHead(s: SessionState, promptId: string, text: string | null): SessionState {
  const next = setPrompt(s, promptId, 'queued', text);
  return { ...next, queue: [promptId, ...without(next.queue, promptId)] };
}

const SETTLED: ReadonlySet<PromptStatus> = new Set([
  'admitted',
  'rejected',
  'removed',
  'abandoned',
  'cancel_timed_out',
  'force_released',
]);

/**
 * Sets a prompt's status. A settled prompt drops its text and joins the bounded memory of settled
 * prompts, so a retried idempotency key is answered without the session growing forever. (An
 * admitted prompt's text rides on its claim until dispatch, and comes back with it if the claim
 * is requeued: `text` then restores it.)
 */
function setPrompt(
  s: SessionState,
  promptId: string,
  status: PromptStatus,
  text: string | null = s.prompts[promptId]?.text ?? null,
): SessionState {
  const record = s.prompts[promptId];
  if (!record) return s;
  const settles = SETTLED.has(status);
  const prompts = {
    ...s.prompts,
    [promptId]: { ...record, status, text: settles ? null : text },
  };
  if (!settles) return { ...s, prompts };
  const settled = s.settled.includes(promptId) ? s.settled : [...s.settled, promptId];
  if (settled.length <= SETTLED_PROMPTS_KEPT) return { ...s, prompts, settled };
  // Dropped from the memory here; forgotten by forgetUnremembered unless still open or claimed.
  return { ...s, prompts, settled: settled.slice(settled.length - SETTLED_PROMPTS_KEPT) };
}
