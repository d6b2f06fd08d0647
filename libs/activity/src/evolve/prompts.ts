import type { EntryOf } from '@baton/protocol';
import { promptIdOfKey, promptOf } from '../state';
import type { Turn } from '../state';
import {
  copySession,
  copyPrompt,
  appended,
  withEntry,
  claimSlot,
  answered,
  without,
  toHead,
} from './draft';
import type { SessionHandler, SessionHandlers } from './draft';
import { requeueAtHead, setPrompt } from './effects';
import { own } from '../records';

const settledByDecision: SessionHandler<EntryOf<'prompt.rejected' | 'prompt.removed'>> = (s, e) => {
  const d = copySession(s);
  answered(d, e.data.commandId);
  setPrompt(d, e.data.promptId, e.type === 'prompt.rejected' ? 'rejected' : 'removed');
  d.queue = without(d.queue, e.data.promptId);
  return d;
};

/**
 * Prompts and queue: a submitted prompt, and the admission decisions that claim, queue, release,
 * promote or settle it.
 */
export const prompts = {
  'prompt.submit': (s, e) => {
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
      ...(c.traceparent ? { traceparent: c.traceparent } : {}),
    });
    d.promptByKey = withEntry(s.promptByKey, c.idempotencyKey, c.promptId);
    d.pending = appended(s.pending, { type: e.type, data: c });
    return d;
  },
  'prompt.admitted': (s, e) => {
    const a = e.data;
    const d = copySession(s);
    // The record settles (its text goes); the claim carries the text until dispatch.
    const text = own(s.prompts, a.promptId)?.text ?? null;
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
  },
  'prompt.queued': (s, e) => {
    const d = copySession(s);
    answered(d, e.data.commandId);
    setPrompt(d, e.data.promptId, 'queued');
    // Only an open prompt has the record a queue entry is shown from.
    if (!d.queue.includes(e.data.promptId) && own(d.prompts, e.data.promptId))
      d.queue = appended(d.queue, e.data.promptId);
    return d;
  },
  'prompt.rejected': settledByDecision,
  'prompt.removed': settledByDecision,
  'prompt.released': (s, e) => {
    const d = copySession(s);
    answered(d, e.data.commandId);
    const slot = claimSlot(d, e.data.promptId, e.data.admissionGeneration);
    if (!slot || d[slot]!.phase !== 'claimed') return d;
    const claim = d[slot]!;
    d[slot] = claim.predecessor;
    requeueAtHead(d, e.data.promptId, claim.text);
    return d;
  },
  'prompt.promoted': (s, e) => {
    const d = copySession(s);
    answered(d, e.data.commandId);
    const record = own(d.prompts, e.data.promptId);
    if (!record || record.status !== 'queued') return d;
    d.queue = toHead(d.queue, e.data.promptId);
    const promoted = copyPrompt(record);
    promoted.sendNow = true;
    d.prompts = withEntry(d.prompts, e.data.promptId, promoted);
    return d;
  },
  'queue.auto_run_set': (s, e) => {
    const d = copySession(s);
    answered(d, e.data.commandId);
    d.autoRun = e.data.enabled;
    return d;
  },
} satisfies Partial<SessionHandlers>;
