import type { Capabilities, EntryOf, StreamEntry } from '@baton/protocol';
import {
  MAX_DISPATCH_ATTEMPTS,
  SETTLED_PROMPTS_KEPT,
  initialSessionState,
  promptIdOfKey,
  sortedIndexOf,
  promptOf,
  type ExecutionEndReason,
  type PendingCommand,
  type PromptRecord,
  type PromptStatus,
  type Registration,
  type SessionState,
  type SettledPrompt,
  type SettledStatus,
  type TaskState,
  type Turn,
} from './state';

/**
 * evolve(state, entry) → state: the whole fold. Pure: no clock, no I/O, no randomness; the same
 * entries give the same state on every replica. An entry for another task is a programming error.
 */
export function evolve(state: TaskState, entry: StreamEntry): TaskState {
  if (entry.taskId !== state.taskId) {
    throw new Error(`entry of task ${entry.taskId} folded into task ${state.taskId}`);
  }
  const before = state.sessions[entry.sessionId] ?? initialSessionState(entry.sessionId);
  const after = evolveSession(before, entry);
  if (after === before && state.sessions[entry.sessionId]) return state;
  return { ...state, sessions: { ...state.sessions, [entry.sessionId]: after } };
}

export function evolveSession(s: SessionState, e: StreamEntry): SessionState {
  const next = step(s, e);
  if (next === s || (next.prompts === s.prompts && next.turn === s.turn && next.steer === s.steer))
    return next;
  return closeSettled(next);
}

function step(s: SessionState, e: StreamEntry): SessionState {
  switch (e.type) {
    // ----- facts -------------------------------------------------------------------------------
    case 'execution.started':
      if (s.deleted || e.generation <= s.lastGeneration) return s; // a late predecessor
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
        },
      };
    case 'capabilities.negotiated':
      if (!isLive(s, e)) return s;
      return { ...s, execution: { ...s.execution!, phase: 'ready', capabilities: e.data } };
    case 'execution.ended':
      if (!isLive(s, e)) return s;
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
      return onTurnEnded(countEvent(s), e.data.admissionGeneration);
    case 'tool.started':
    case 'tool.updated':
      if (!isLive(s, e)) return s;
      return onTool(countEvent(s), e);
    case 'background.started':
      if (!isLive(s, e)) return s;
      return onBackgroundStarted(countEvent(s), e);
    case 'background.ended':
      if (!isLive(s, e)) return s;
      return onBackgroundEnded(countEvent(s), e);

    // ----- commands: recorded until the owner decides them ------------------------------------
    case 'prompt.submit': {
      const d = e.data;
      if (promptIdOfKey(s, d.idempotencyKey) !== undefined || promptOf(s, d.promptId)) return s;
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
        cancelRequested: false,
        text,
      };
      // A handoff replaces the held-open turn: its late end is stale by generation.
      return d.mode === 'steer' ? { ...next, steer: turn } : { ...next, turn };
    }
    case 'prompt.queued': {
      const next = setPrompt(answered(s, e.data.commandId), e.data.promptId, 'queued');
      // Only an open prompt has the record a queue entry is shown from.
      return next.queue.includes(e.data.promptId) || !next.prompts[e.data.promptId]
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
      return requeueAtHead({ ...next, [slot]: null }, e.data.promptId, next[slot]!.text);
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
      return { ...next, turn: { ...next.turn, cancelRequested: true } };
    }
    case 'command.rejected':
      return answered(s, e.data.commandId);
    case 'session.configured': {
      const { admission, steering, queueCapacity } = e.data;
      return { ...answered(s, e.data.commandId), config: { admission, steering, queueCapacity } };
    }
    case 'session.was_reset':
      // Explicit reset owns full cleanup of activity; the queue and the running turn stay.
      return {
        ...answered(s, e.data.commandId),
        background: [],
        tools: {},
        foregroundTools: [],
        childTools: [],
        generating: false,
      };
    case 'session.deleted': {
      let next: SessionState = { ...answered(s, e.data.commandId), deleted: true };
      for (const id of next.queue) next = setPrompt(next, id, 'removed');
      return { ...retireExecution(next), queue: [] };
    }
    case 'execution.lost':
      if (!s.execution || s.execution.id !== e.data.executionId || s.execution.phase === 'ended')
        return s;
      return endExecution(s, 'lost');
    case 'turn.stalled':
      return { ...s, stallAdvised: Math.max(s.stallAdvised, e.data.admissionGeneration) };
    case 'turn.abandoned':
      if (!s.turn || s.turn.generation !== e.data.admissionGeneration) return s;
      return onTurnEnded(s, e.data.admissionGeneration);
  }
}

// ---------------------------------------------------------------------------------------------

/** Facts count only from the live execution: late entries of a predecessor change nothing. */
function isLive(s: SessionState, e: { executionId: string }): boolean {
  return (
    !s.deleted &&
    s.execution !== null &&
    s.execution.id === e.executionId &&
    s.execution.phase !== 'ended'
  );
}

function countEvent(s: SessionState): SessionState {
  if (!s.turn || s.turn.phase !== 'dispatched' || s.turn.heardFromAgent) return s;
  return { ...s, turn: { ...s.turn, heardFromAgent: true } };
}

/** Foreground output. Most entries of a stream are this, so an unchanged session is returned as is. */
function foregroundOutput(s: SessionState): SessionState {
  const t = s.turn;
  const turnChanges = t !== null && (t.yielded || (t.phase === 'dispatched' && !t.heardFromAgent));
  if (s.generating && !turnChanges) return s;
  return {
    ...s,
    generating: true,
    foregroundEpoch: s.generating ? s.foregroundEpoch : s.foregroundEpoch + 1,
    turn: turnChanges
      ? { ...t, yielded: false, heardFromAgent: t.heardFromAgent || t.phase === 'dispatched' }
      : t,
  };
}

function onIdle(s: SessionState, origin: string, generation: number | undefined): SessionState {
  const t = s.turn;
  const dispatched = t !== null && t.phase === 'dispatched';
  // Only the human cycle of the running prompt yields the foreground; autonomous cycles
  // (task notifications, wake-ups) end themselves and nothing else.
  const yields = dispatched && origin === 'human' && generation === t.generation;
  if (!s.generating && (!dispatched || (t.heardFromAgent && (t.yielded || !yields)))) return s;
  return {
    ...s,
    generating: false,
    turn: dispatched ? { ...t, heardFromAgent: true, yielded: t.yielded || yields } : t,
  };
}

function onDispatched(s: SessionState, promptId: string, generation: number): SessionState {
  const slot = claimSlot(s, promptId, generation);
  if (!slot || s[slot]!.phase !== 'claimed') return s;
  // The agent has the prompt: its text is no longer needed for (re-)delivery.
  return { ...s, [slot]: { ...s[slot]!, phase: 'dispatched', text: null } };
}

function onDispatchFailed(s: SessionState, promptId: string, generation: number): SessionState {
  const slot = claimSlot(s, promptId, generation);
  if (!slot || s[slot]!.phase !== 'claimed') return s;
  const claim = s[slot]!;
  // Output after the claim means the agent is generating on its own: the gate stays closed
  // until the next idle boundary instead of reopening under it.
  const outputSinceClaim = s.foregroundEpoch !== claim.claimEpoch;
  const next: SessionState = { ...s, [slot]: null, generating: s.generating || outputSinceClaim };
  const record = next.prompts[promptId]!;
  const attempts = record.dispatchAttempts + 1;
  const counted = {
    ...next,
    prompts: { ...next.prompts, [promptId]: { ...record, dispatchAttempts: attempts } },
  };
  if (attempts >= MAX_DISPATCH_ATTEMPTS) return setPrompt(counted, promptId, 'rejected');
  return requeueAtHead(counted, promptId, claim.text);
}

function onTurnEnded(s: SessionState, generation: number): SessionState {
  let next = s;
  if (next.steer && next.steer.generation === generation) next = { ...next, steer: null };
  if (!next.turn || next.turn.generation !== generation) return next; // stale: a predecessor's end
  // A steer delivered into this turn carries on as the foreground turn.
  const successor = next.steer && next.steer.phase === 'dispatched' ? next.steer : null;
  return {
    ...next,
    turn: successor,
    steer: successor ? null : next.steer,
    generating: false,
    execution:
      next.execution && !next.execution.hadTurn
        ? { ...next.execution, hadTurn: true }
        : next.execution,
  };
}

function onTool(
  s: SessionState,
  e: EntryOf<'tool.started'> | EntryOf<'tool.updated'>,
): SessionState {
  const { toolCallId, parentToolCallId, ownership: evidence, status } = e.data;
  const done = status === 'completed' || status === 'failed';
  // A known tool keeps the ownership its first evidence gave it; completing forgets it.
  if (s.tools[toolCallId] !== undefined)
    return done ? { ...s, tools: withoutKey(s.tools, toolCallId) } : s;
  const fg = sortedIndexOf(s.foregroundTools, toolCallId);
  if (fg >= 0) {
    const next = done ? { ...s, foregroundTools: removeAt(s.foregroundTools, fg) } : s;
    return foregroundOutput(next);
  }
  const child = sortedIndexOf(s.childTools, toolCallId);
  if (child >= 0) return done ? { ...s, childTools: removeAt(s.childTools, child) } : s;
  // Lineage wins over shape: a tool with any parent is never top-level foreground work,
  // whatever the parent's own ownership (or absence of it) is.
  const owner = parentToolCallId !== undefined ? 'child' : evidence;
  // Recorded until it completes (a first frame that completes it records nothing).
  if (owner === 'foreground') {
    return foregroundOutput(
      done ? s : { ...s, foregroundTools: insertAt(s.foregroundTools, -fg - 1, toolCallId) },
    );
  }
  if (done || owner === undefined) return s;
  return owner === 'child'
    ? { ...s, childTools: insertAt(s.childTools, -child - 1, toolCallId) }
    : { ...s, tools: { ...s.tools, [toolCallId]: owner } };
}

function insertAt(sorted: readonly string[], at: number, id: string): readonly string[] {
  const out = sorted.slice(0, at);
  out.push(id);
  for (let i = at; i < sorted.length; i++) out.push(sorted[i]!);
  return out;
}

function removeAt(sorted: readonly string[], at: number): readonly string[] {
  const out = sorted.slice(0, at);
  for (let i = at + 1; i < sorted.length; i++) out.push(sorted[i]!);
  return out;
}

/** A copy without `key`, built afresh: `delete` would turn the copy into a slow dictionary. */
function withoutKey<V>(r: Readonly<Record<string, V>>, key: string): Record<string, V> {
  const out: Record<string, V> = {};
  for (const k in r) if (k !== key) out[k] = r[k]!;
  return out;
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
    foregroundTools: [],
    childTools: [],
    background: [],
    generating: false,
    turn: null,
    steer: null,
  };
  for (const claim of [s.steer, s.turn]) {
    if (claim && claim.phase === 'claimed' && !s.deleted)
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

function isSettled(status: PromptStatus): status is SettledStatus {
  return status === 'admitted' || status === 'rejected' || status === 'removed';
}

/**
 * Sets a prompt's status. A settled prompt drops its text and joins the bounded memory of settled
 * prompts (`settled`), so a retried idempotency key is answered without the session growing
 * forever. (An admitted prompt's text rides on its claim until dispatch, and comes back with it if
 * the claim is requeued: `text` then restores it.) Its open record stays until the entry is folded
 * (closeSettled), so that an admission can still take its claim from it.
 */
function setPrompt(
  s: SessionState,
  promptId: string,
  status: PromptStatus,
  text: string | null = s.prompts[promptId]?.text ?? null,
): SessionState {
  const record = s.prompts[promptId];
  const settles = isSettled(status);
  const at = settles ? rememberedAt(s, promptId) : -1;
  // A prompt only remembered as settled can only settle again (its full record is gone).
  if (!record) return at === -1 ? s : { ...s, settled: resettled(s.settled, at, status) };
  const prompts = {
    ...s.prompts,
    [promptId]: { ...record, status, text: settles ? null : text },
  };
  if (!settles) return { ...s, prompts };
  // Settled again after a requeue: the prompt keeps its place in the memory.
  if (at !== -1) return { ...s, prompts, settled: resettled(s.settled, at, status) };
  // Settled for the first time (or again after it fell out of the memory): the newest.
  const entry: SettledPrompt = {
    promptId,
    idempotencyKey: record.idempotencyKey,
    status: status as SettledStatus,
  };
  const keep = Math.min(s.settled.length, SETTLED_PROMPTS_KEPT - 1);
  const settled = s.settled.slice(s.settled.length - keep);
  settled.push(entry);
  return { ...s, prompts, settled };
}

function rememberedAt(s: SessionState, promptId: string): number {
  for (let i = s.settled.length - 1; i >= 0; i--) if (s.settled[i]!.promptId === promptId) return i;
  return -1;
}

function resettled(
  settled: readonly SettledPrompt[],
  at: number,
  status: PromptStatus,
): readonly SettledPrompt[] {
  if (settled[at]!.status === status) return settled;
  const copy = settled.slice();
  copy[at] = { ...settled[at]!, status: status as SettledStatus };
  return copy;
}

/**
 * After an entry: a settled prompt that holds no claim leaves the open records (it is remembered
 * in `settled`, or forgotten if it already fell out of that memory).
 */
function closeSettled(s: SessionState): SessionState {
  let any = false;
  for (const id in s.prompts) if (closes(s, s.prompts[id]!)) any = true;
  if (!any) return s;
  const prompts: Record<string, PromptRecord> = {};
  const promptByKey: Record<string, string> = {};
  for (const id in s.prompts) {
    const p = s.prompts[id]!;
    if (closes(s, p)) continue;
    prompts[id] = p;
    promptByKey[p.idempotencyKey] = id;
  }
  return { ...s, prompts, promptByKey };
}

function closes(s: SessionState, p: PromptRecord): boolean {
  return isSettled(p.status) && !claims(s.turn, p.promptId) && !claims(s.steer, p.promptId);
}

function claims(t: Turn | null, promptId: string): boolean {
  return t !== null && t.phase === 'claimed' && t.promptId === promptId;
}
