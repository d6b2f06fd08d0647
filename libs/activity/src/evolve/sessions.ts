import type { SessionEntry } from '@baton/protocol';
import { NO_IDS } from '../state';
import type { PendingCommand } from '../state';
import { copySession, appended, answered } from './draft';
import type { SessionHandler, SessionHandlers } from './draft';
import {
  endRunningPrompts,
  forgetActivity,
  stop,
  markHadTurn,
  retireExecution,
  requeueAtHead,
  setPrompt,
} from './effects';

/** A session command: recorded (once per commandId) until the owner answers it. */
const recorded: SessionHandler<PendingCommand & SessionEntry> = (s, e) => {
  for (const p of s.pending) if (p.data.commandId === e.data.commandId) return null;
  const d = copySession(s);
  d.pending = appended(s.pending, { type: e.type, data: e.data } as PendingCommand);
  return d;
};

/**
 * Session commands and lifecycle: commands are recorded until the owner answers them; a session is
 * configured, reset, deleted or force-released.
 */
export const sessions = {
  'queue.cancel': recorded,
  'queue.send_now': recorded,
  'queue.set_auto_run': recorded,
  'session.cancel': recorded,
  'session.reset': recorded,
  'session.delete': recorded,
  'session.configure': recorded,
  'session.force_release': recorded,
  'permission.respond': recorded,
  'execution.request': recorded,
  'command.rejected': (s, e) => {
    const d = copySession(s);
    answered(d, e.data.commandId);
    return d;
  },
  'session.configured': (s, e) => {
    const { admission, steering, queueCapacity, abandonedTurn } = e.data;
    const d = copySession(s);
    answered(d, e.data.commandId);
    d.config = { admission, steering, queueCapacity, abandonedTurn };
    return d;
  },
  'session.was_reset': (s, e) => {
    // Explicit reset owns full cleanup of activity; the queue and the running turn stay.
    const d = copySession(s);
    answered(d, e.data.commandId);
    forgetActivity(d);
    if (s.usage !== undefined) d.usage = null;
    stop(d, 'session_reset');
    return d;
  },
  'session.deleted': (s, e) => {
    const d = copySession(s);
    answered(d, e.data.commandId);
    d.deleted = true;
    for (const id of d.queue) setPrompt(d, id, 'removed');
    // A claim the agent never got is discarded with the queue, and its prompt told so.
    for (const claim of [s.turn, s.steer])
      if (claim && claim.phase === 'claimed') setPrompt(d, claim.promptId, 'removed');
    endRunningPrompts(d, 'session_deleted');
    retireExecution(d);
    d.queue = NO_IDS;
    d.requested = null;
    d.failure = null;
    stop(d, 'session_deleted');
    return d;
  },
  'session.force_released': (s, e) => {
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
    forgetActivity(d);
    d.failure =
      ended !== undefined
        ? { reason: 'force_released', promptId: ended }
        : { reason: 'force_released' };
    if (ended !== undefined) markHadTurn(d);
    stop(d, 'force_released');
    return d;
  },
} satisfies Partial<SessionHandlers>;
