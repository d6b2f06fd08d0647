import { MAX_DISPATCH_ATTEMPTS } from '../state';
import type { SessionState } from '../state';
import {
  copySession,
  copyTurn,
  copyPrompt,
  withEntry,
  isLive,
  countsAsEvent,
  heard,
  claimSlot,
  answered,
} from './draft';
import type { Draft, SessionHandlers } from './draft';
import {
  stop,
  answerOpenPermissions,
  markHadTurn,
  outputChanges,
  output,
  requeueAtHead,
  setPrompt,
} from './effects';

/**
 * Turns: a claim reaches the agent (or fails to), the foreground generates, yields and ends, a
 * turn is cancelled, stalls or is abandoned.
 */
export const turns = {
  'prompt.dispatched': (s, e) => {
    if (!isLive(s, e)) return null;
    return onDispatched(s, e.data.promptId, e.data.admissionGeneration);
  },
  'prompt.dispatch_failed': (s, e) => {
    if (!isLive(s, e)) return null;
    return onDispatchFailed(s, e.data.promptId, e.data.admissionGeneration);
  },
  'foreground.output': (s, e) => {
    // Most entries of a stream are this, and most of them change nothing.
    if (!isLive(s, e) || !outputChanges(s)) return null;
    const d = copySession(s);
    output(d);
    return d;
  },
  'foreground.idle': (s, e) => {
    if (!isLive(s, e)) return null;
    return onIdle(s, e.data.origin, e.data.admissionGeneration);
  },
  'turn.ended': (s, e) => {
    if (!isLive(s, e)) return null;
    return onTurnEnded(s, e.data.admissionGeneration, true);
  },
  'turn.cancel_requested': (s, e) => {
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
  },
  'turn.stalled': (s, e) => {
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
  },
  'turn.abandoned': (s, e) => {
    if (!s.turn || s.turn.generation !== e.data.admissionGeneration) return null;
    const d = onTurnEnded(s, e.data.admissionGeneration, false)!;
    setPrompt(d, e.data.promptId, 'abandoned');
    // A steer into a turn that never started does not carry it on: one the agent had is
    // abandoned with it, and told so; one it never got goes back to the head of the queue.
    const steer = s.steer;
    if (steer) {
      if (steer.phase === 'dispatched') setPrompt(d, steer.promptId, 'abandoned');
      else requeueAtHead(d, steer.promptId, steer.text);
      d.turn = null;
      d.steer = null;
    }
    d.failure = { reason: 'turn_abandoned', promptId: e.data.promptId };
    if (e.data.then === 'stop_execution') stop(d, 'turn_abandoned');
    return d;
  },
  'turn.cancel_timed_out': (s, e) => {
    const t = s.turn;
    if (!t || t.generation !== e.data.admissionGeneration || t.phase !== 'dispatched') return null;
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
  },
  'foreground.quiesced': (s, e) => {
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
  },
} satisfies Partial<SessionHandlers>;

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
