import type { ExecutionStopReason } from '@baton/protocol';
import { NO_IDS } from '../state';
import type { SessionState } from '../state';
import { copySession, copyExecution, isLive, isCurrent, answered, appended } from './draft';
import type { Draft, SessionHandlers } from './draft';
import { stop, retireExecution, endExecution } from './effects';
import { sharedCapabilities } from '../shared-capabilities';

/**
 * Executions: an execution starts, negotiates, ends or is lost; requested, parked, or its request
 * expired.
 */
export const executions = {
  'execution.started': (s, e, task) => {
    if (e.generation <= s.lastGeneration) return null; // a late predecessor
    const d = copySession(s);
    // A stop owed to the execution this one replaces stays owed until that one has ended.
    const was = s.execution;
    if (was && was.phase !== 'ended' && was.stopping !== null)
      d.replacedStops = appended(s.replacedStops ?? NO_IDS, {
        executionId: was.id,
        generation: was.generation,
        reason: was.stopping,
      });
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
  },
  'capabilities.negotiated': (s, e) => {
    if (!isLive(s, e)) return null;
    const d = copySession(s);
    const x = copyExecution(s.execution!);
    x.phase = 'ready';
    x.capabilities = sharedCapabilities(e.data);
    d.execution = x;
    return d;
  },
  'execution.ended': (s, e) => {
    // A deleted session's execution ends too (its stop is then no longer owed).
    if (!isCurrent(s, e.executionId)) return replacedEnded(s, e.executionId);
    const d = copySession(s);
    endExecution(d, e.data.reason);
    return d;
  },
  'agent.session': (s, e) => {
    if (!isLive(s, e)) return null;
    const d = copySession(s);
    d.agentSession = {
      executionId: e.executionId,
      acpSessionId: e.data.acpSessionId,
      loadable: e.data.loadable,
      launch: s.execution!.launch,
    };
    // A fresh agent session starts with an empty context; a loaded one goes on with its own.
    if (!e.data.loaded && s.usage !== undefined) d.usage = null;
    return d;
  },
  'execution.lost': (s, e) => {
    if (!isCurrent(s, e.data.executionId)) return replacedEnded(s, e.data.executionId);
    const d = copySession(s);
    endExecution(d, 'lost');
    return d;
  },
  'execution.requested': (s, e) => {
    const d = copySession(s);
    answered(d, e.data.commandId);
    // A request folded after its execution already started (the command raced the worker)
    // waits for nothing.
    if (s.execution === null || s.execution.id !== e.data.executionId)
      d.requested = { executionId: e.data.executionId };
    if (s.failure && s.failure.reason === 'no_worker') d.failure = null;
    return d;
  },
  'execution.parked': (s, e) => {
    const x = s.execution;
    if (!x || x.id !== e.data.executionId || x.phase === 'ended' || x.stopping !== null)
      return null;
    const d = copySession(s);
    stop(d, 'parked');
    return d;
  },
  'execution.request_expired': (s, e) => {
    if (!s.requested || s.requested.executionId !== e.data.executionId) return null;
    const d = copySession(s);
    d.requested = null;
    d.failure = { reason: 'no_worker', executionId: e.data.executionId };
    return d;
  },
} satisfies Partial<SessionHandlers>;

/** A replaced execution owed a stop has ended (or is lost): nothing is owed to it any more. */
function replacedEnded(s: SessionState, executionId: string): Draft | null {
  const owed = s.replacedStops;
  if (!owed || !owed.some((r) => r.executionId === executionId)) return null;
  const d = copySession(s);
  const kept = owed.filter((r) => r.executionId !== executionId);
  d.replacedStops = kept.length > 0 ? kept : undefined;
  return d;
}
