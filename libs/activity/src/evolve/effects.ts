// Changes to a session draft that several concerns make: stopping an execution, settling a
// prompt, retiring what an execution owned, foreground output, answering permissions.
import type { ExecutionStopReason, PermissionResolver } from '@baton/protocol';
import { NO_ENTRIES, NO_IDS, RESOLVED_PERMISSIONS_KEPT, SETTLED_PROMPTS_KEPT } from '../state';
import type {
  ExecutionEndReason,
  PermissionAnswer,
  PermissionRequest,
  PromptRecord,
  ResolvedPermission,
  PromptStatus,
  SessionState,
  SettledPrompt,
  SettledStatus,
  Turn,
} from '../state';
import {
  copyTurn,
  copyExecution,
  copyPrompt,
  appended,
  withEntry,
  quiet,
  toHead,
  claims,
} from './draft';
import type { Draft } from './draft';
import { own } from '../records';

/** The owner is to stop the live execution (and owes the worker the stop until it ends). */
export function stop(d: Draft, reason: ExecutionStopReason): void {
  const x = d.execution;
  if (!x || x.phase === 'ended' || x.stopping !== null) return;
  answerOpenPermissions(d, 'execution_ended');
  const stopping = copyExecution(x);
  stopping.stopping = reason;
  d.execution = stopping;
}

/** Every request nobody answered yet is settled as cancelled (a cancel, a stop). */
export function answerOpenPermissions(d: Draft, by: PermissionResolver): void {
  if (!d.permissions.some((p) => p.answer === null)) return;
  const answer: PermissionAnswer = { outcome: 'cancelled', optionId: null, by, subject: null };
  d.permissions = d.permissions.map((p) => (p.answer === null ? withAnswer(p, answer) : p));
}

export function withAnswer(p: PermissionRequest, answer: PermissionAnswer): PermissionRequest {
  return {
    requestId: p.requestId,
    toolCallId: p.toolCallId,
    title: p.title,
    toolKind: p.toolKind,
    options: p.options,
    answer,
  };
}

export function rememberPermission(
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

export function markHadTurn(d: Draft): void {
  if (d.execution && !d.execution.hadTurn) {
    const x = copyExecution(d.execution);
    x.hadTurn = true;
    d.execution = x;
  }
}

/** The held-open turn a pending handoff claim would restore, when it has yielded. */
export function yieldedPredecessor(t: Turn | null): boolean {
  return t !== null && t.predecessor !== null && t.predecessor.yielded;
}

export function outputChanges(s: SessionState): boolean {
  const t = s.turn;
  return !s.generating || (t !== null && (t.yielded || quiet(t) || yieldedPredecessor(t)));
}

/**
 * Foreground output: generating (a new foreground epoch if it was not), and the turn heard from.
 */
export function output(d: Draft): void {
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

/**
 * The prompts the agent runs (its turn, the turn a handoff claim would replace, its steer) end
 * with the task or session they belong to, and are told so: nobody will see their turn end.
 */
export function endRunningPrompts(d: Draft, status: 'task_deleted' | 'session_deleted'): void {
  for (const t of [d.turn, d.turn?.predecessor ?? null, d.steer])
    if (t && t.phase === 'dispatched') setPrompt(d, t.promptId, status);
}

/** What the agent was seen doing goes: its background work, its tools, its foreground output. */
export function forgetActivity(d: Draft): void {
  d.background = NO_IDS;
  d.tools = NO_ENTRIES;
  d.foregroundTools = NO_IDS;
  d.childTools = NO_IDS;
  d.generating = false;
}

/**
 * Everything the execution owned goes with it; a claim that never reached the agent is requeued.
 */
export function retireExecution(d: Draft): void {
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
  forgetActivity(d);
  d.turn = null;
  d.steer = null;
  for (const claim of claims) {
    if (claim && claim.phase === 'claimed' && !d.deleted && own(d.prompts, claim.promptId))
      requeueAtHead(d, claim.promptId, claim.text);
  }
}

export function endExecution(d: Draft, reason: ExecutionEndReason): void {
  const x = copyExecution(d.execution!);
  // Closed for being idle, its ACP session kept: the next prompt or a resume loads it.
  if (x.stopping === 'parked' && d.agentSession?.executionId === x.id) d.parked = true;
  retireExecution(d);
  x.phase = 'ended';
  x.endReason = reason;
  d.execution = x;
}

/** Back to the head of the queue, with the text its claim carried. */
export function requeueAtHead(d: Draft, promptId: string, text: string | null): void {
  setPrompt(d, promptId, 'queued', text);
  d.queue = toHead(d.queue, promptId);
}

export function isSettled(status: PromptStatus): status is SettledStatus {
  return status !== 'pending' && status !== 'queued';
}

/**
 * Sets a prompt's status. A settled prompt drops its text and joins the bounded memory of settled
 * prompts (`settled`), so a retried idempotency key is answered without the session growing
 * forever. (An admitted prompt's text rides on its claim until dispatch, and comes back with it if
 * the claim is requeued: `text` then restores it.) Its open record stays until the entry is folded
 * (closeSettled), so that an admission can still take its claim from it.
 */
export function setPrompt(
  d: Draft,
  promptId: string,
  status: PromptStatus,
  text: string | null = own(d.prompts, promptId)?.text ?? null,
): void {
  const record = own(d.prompts, promptId);
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

export function rememberedAt(s: SessionState, promptId: string): number {
  for (let i = s.settled.length - 1; i >= 0; i--) if (s.settled[i]!.promptId === promptId) return i;
  return -1;
}

export function resettled(
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
export function closeSettled(d: Draft): void {
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

export function closes(s: SessionState, p: PromptRecord): boolean {
  return isSettled(p.status) && !claims(s.turn, p.promptId) && !claims(s.steer, p.promptId);
}
