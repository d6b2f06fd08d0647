import { SCHEMA_VERSION, type Decision, type StreamEntry, type TaskStatus } from '@baton/protocol';
import { evolve } from './evolve';
import { parkable, promptOf, waitsForPerson } from './state';
import type { PendingCommand, PendingTaskCommand, SessionState, TaskState, Turn } from './state';
import { admissionGate, supportsSteering } from './views';
import { own } from './records';
import {
  DEFAULT_ADMISSION_LIMITS,
  queueLimitRefusal,
  type AdmissionLimits,
} from './admission-limits';

/** What the bounds on a task's waiting prompts look at: the whole task, and the bounds. */
interface Bounds {
  readonly task: TaskState;
  readonly limits: AdmissionLimits;
}

/** A decision before the owner stamps it with its writer envelope. */
export type DecisionDraft = Decision extends infer D
  ? D extends Decision
    ? Omit<D, 'v' | 'taskId' | 'writer'>
    : never
  : never;

/**
 * Time enters the domain only through these triggers, which the owner raises from its clock;
 * the decisions they produce are what the stream records.
 */
export type Timer =
  /** A dispatched prompt has been silent for the watchdog's period. */
  | { readonly type: 'watchdog'; readonly sessionId: string; readonly admissionGeneration: number }
  /** The execution stopped renewing its lease: its process is gone, and so is its work. */
  | {
      readonly type: 'execution_lease_expired';
      readonly sessionId: string;
      readonly executionId: string;
    }
  /** A cancel of this turn has gone unanswered for the cancel grace. */
  | {
      readonly type: 'cancel_grace';
      readonly sessionId: string;
      readonly admissionGeneration: number;
    }
  /** Output outside any turn has been quiet for the quiet period. */
  | { readonly type: 'quiet'; readonly sessionId: string; readonly foregroundEpoch: number }
  /** A requested execution has waited for a worker for the start bound. */
  | { readonly type: 'execution_start'; readonly sessionId: string; readonly executionId: string }
  /** A permission request has waited for a person for the permission timeout: it is denied. */
  | { readonly type: 'permission_timeout'; readonly sessionId: string; readonly requestId: string }
  /** The session has been idle (`parkable`) for the park period: its execution is parked. */
  | { readonly type: 'park'; readonly sessionId: string; readonly executionId: string };

const DECIDER_WRITER = { role: 'projector', instance: 'decide', seq: 0 } as const;

/** Wraps a draft as an entry so decide can fold what it decides before deciding the next thing. */
export function draftEntry(taskId: string, d: DecisionDraft): StreamEntry {
  return { v: SCHEMA_VERSION, taskId, writer: DECIDER_WRITER, ...d } as StreamEntry;
}

/**
 * decide(state, timer?) → decisions. Answers every command the state holds unanswered, drains
 * queues whose session can take a prompt, and reacts to a timer. The result is a fixpoint:
 * folding it and deciding again yields nothing.
 */
export function decide(
  state: TaskState,
  timer?: Timer,
  limits: AdmissionLimits = DEFAULT_ADMISSION_LIMITS,
): DecisionDraft[] {
  const out: DecisionDraft[] = [];
  let current = state;
  const apply = (drafts: DecisionDraft[]) => {
    for (const d of drafts) {
      current = evolve(current, draftEntry(current.taskId, d));
      out.push(d);
    }
  };
  if (timer) {
    const s = own(current.sessions, timer.sessionId);
    if (s) apply(onTimer(s, timer));
  }
  // Each step answers a command or closes a gate by admitting, so this terminates. Every command
  // is judged where it stands in the stream: a task command after the session commands before
  // it (a prompt submitted while the task is archived stays refused though an unarchive follows
  // it), and before those after it; queues drain only once no task command waits.
  for (let progressed = true; progressed;) {
    progressed = false;
    const first = current.pending[0];
    if (first && !waitsForSessions(current, first)) {
      apply(taskDecisions(current, first));
      progressed = true;
      continue;
    }
    for (const s of Object.values(current.sessions)) {
      if (first && !comesBefore(s, first)) continue;
      const drafts = nextDecisions(s, current.status, { task: current, limits });
      if (drafts.length > 0) {
        apply(drafts);
        progressed = true;
        break;
      }
    }
  }
  return out;
}

/** A session command the stream holds before this task command is still unanswered. */
function waitsForSessions(t: TaskState, c: PendingTaskCommand): boolean {
  if (!c.after) return false;
  for (const s of Object.values(t.sessions)) if (comesBefore(s, c)) return true;
  return false;
}

/**
 * The session's next command came before the task command in the stream: the last of its
 * commands that did is still unanswered (a session answers its commands in their order).
 */
function comesBefore(s: SessionState, c: PendingTaskCommand): boolean {
  if (!c.after) return false;
  for (const r of c.after) {
    if (r.sessionId !== s.id) continue;
    for (const p of s.pending) if (p.data.commandId === r.commandId) return true;
  }
  return false;
}

/** A task-wide command: deleting wins over what follows it. */
function taskDecisions(t: TaskState, c: PendingTaskCommand): DecisionDraft[] {
  const commandId = c.data.commandId;
  if (c.type === 'task.delete') return [{ type: 'task.deleted', data: { commandId } }];
  if (t.status === 'deleted') {
    return [
      {
        type: 'task.command_rejected',
        data: { commandId, reason: 'task_deleted', message: 'the task was deleted' },
      },
    ];
  }
  return [
    { type: c.type === 'task.archive' ? 'task.archived' : 'task.unarchived', data: { commandId } },
  ];
}

function onTimer(s: SessionState, timer: Timer): DecisionDraft[] {
  const sessionId = s.id;
  if (timer.type === 'cancel_grace') {
    const t = s.turn;
    if (!t || t.generation !== timer.admissionGeneration || t.phase !== 'dispatched' || !t.cancel)
      return [];
    return [
      {
        type: 'turn.cancel_timed_out',
        sessionId,
        data: { promptId: t.promptId, admissionGeneration: t.generation },
      },
    ];
  }
  if (timer.type === 'quiet') {
    if (!s.generating || s.turn || s.steer || s.foregroundEpoch !== timer.foregroundEpoch)
      return [];
    return [
      { type: 'foreground.quiesced', sessionId, data: { foregroundEpoch: s.foregroundEpoch } },
    ];
  }
  if (timer.type === 'execution_start') {
    if (!s.requested || s.requested.executionId !== timer.executionId) return [];
    return [
      { type: 'execution.request_expired', sessionId, data: { executionId: timer.executionId } },
    ];
  }
  if (timer.type === 'park') {
    if (!parkable(s) || s.execution!.id !== timer.executionId) return [];
    return [{ type: 'execution.parked', sessionId, data: { executionId: timer.executionId } }];
  }
  if (timer.type === 'permission_timeout') {
    const p = s.permissions.find((r) => r.requestId === timer.requestId);
    if (!p || p.answer !== null || s.deleted) return [];
    // Denied: the first reject option the agent offered, else the request is cancelled.
    const reject =
      p.options.find((o) => o.kind === 'reject_once') ??
      p.options.find((o) => o.kind === 'reject_always');
    return [
      {
        type: 'permission.answered',
        sessionId,
        data: {
          requestId: p.requestId,
          ...(reject
            ? { outcome: 'selected', optionId: reject.optionId }
            : { outcome: 'cancelled' }),
          by: 'timeout',
        },
      },
    ];
  }
  if (timer.type === 'execution_lease_expired') {
    const x = s.execution;
    const replaced = s.replacedStops?.find((r) => r.executionId === timer.executionId);
    if (replaced) {
      const { executionId, generation } = replaced;
      return [
        {
          type: 'execution.lost',
          sessionId,
          data: { executionId, generation, reason: 'lease_expired' },
        },
      ];
    }
    if (!x || x.id !== timer.executionId || x.phase === 'ended') return [];
    return [
      {
        type: 'execution.lost',
        sessionId,
        data: { executionId: x.id, generation: x.generation, reason: 'lease_expired' },
      },
    ];
  }
  const t = s.turn;
  if (!t || t.generation !== timer.admissionGeneration || t.phase !== 'dispatched') return [];
  // An agent waiting for a person's answer is silent because of us: not a stall.
  if (waitsForPerson(s)) return [];
  const ref = { promptId: t.promptId, admissionGeneration: t.generation };
  if (!t.heardFromAgent) {
    return [{ type: 'turn.abandoned', sessionId, data: { ...ref, then: s.config.abandonedTurn } }];
  }
  if (!t.stalled) return [{ type: 'turn.stalled', sessionId, data: ref }];
  return [];
}

function nextDecisions(s: SessionState, task: TaskStatus, bounds: Bounds): DecisionDraft[] {
  const command = s.pending[0];
  if (command) return answer(s, command, task, bounds);
  if (s.deleted || task !== 'active') return [];
  const head = s.queue[0];
  if (head === undefined) return [];
  const record = s.prompts[head]!;
  if (!s.autoRun && !record.sendNow) return [];
  const g = admissionGate(s, record.origin);
  if (!g.open) return [];
  return [admit(s, head, g.mode)];
}

function admit(
  s: SessionState,
  promptId: string,
  mode: 'turn' | 'handoff' | 'steer',
  commandId?: string,
): DecisionDraft {
  return {
    type: 'prompt.admitted',
    sessionId: s.id,
    data: {
      promptId,
      admissionGeneration: s.admissionGeneration + 1,
      mode,
      ...(commandId ? { commandId } : {}),
    },
  };
}

/** Gives a claim that has not reached the agent back to the head of the queue. */
function release(s: SessionState, t: Turn, commandId?: string): DecisionDraft {
  return {
    type: 'prompt.released',
    sessionId: s.id,
    data: {
      promptId: t.promptId,
      admissionGeneration: t.generation,
      reason: 'session_cancelled',
      ...(commandId ? { commandId } : {}),
    },
  };
}

function rejectCommand(
  s: SessionState,
  commandId: string,
  reason: Extract<DecisionDraft, { type: 'command.rejected' }>['data']['reason'],
  message: string,
): DecisionDraft[] {
  return [{ type: 'command.rejected', sessionId: s.id, data: { commandId, reason, message } }];
}

function answer(
  s: SessionState,
  c: PendingCommand,
  task: TaskStatus,
  bounds: Bounds,
): DecisionDraft[] {
  const sessionId = s.id;
  const commandId = c.data.commandId;
  if (c.type === 'prompt.submit') return answerPrompt(s, c.data.promptId, commandId, task, bounds);
  if (task === 'deleted')
    return rejectCommand(s, commandId, 'task_deleted', 'the task was deleted');
  if (s.deleted)
    return rejectCommand(s, commandId, 'session_deleted', `session ${sessionId} was deleted`);
  switch (c.type) {
    case 'execution.request':
      if (task === 'archived')
        return rejectCommand(s, commandId, 'task_archived', 'the task is archived');
      return [
        {
          type: 'execution.requested',
          sessionId,
          data: { executionId: c.data.executionId, commandId },
        },
      ];
    case 'session.force_release':
      return [
        {
          type: 'session.force_released',
          sessionId,
          data: { commandId, ...(c.data.reason !== undefined ? { reason: c.data.reason } : {}) },
        },
      ];
    case 'queue.cancel': {
      const problem = notQueued(s, c.data.promptId, commandId);
      if (problem) return problem;
      return [
        {
          type: 'prompt.removed',
          sessionId,
          data: { promptId: c.data.promptId, reason: 'cancelled', commandId },
        },
      ];
    }
    case 'queue.send_now': {
      const problem = notQueued(s, c.data.promptId, commandId);
      if (problem) return problem;
      const out: DecisionDraft[] = [];
      const t = s.turn;
      // Only the turn the client saw may be replaced; a successor turn is never cancelled.
      const replaces =
        t !== null &&
        (c.data.observedGeneration === undefined || c.data.observedGeneration === t.generation);
      if (t && replaces && t.phase === 'claimed') {
        out.push(release(s, t));
      }
      out.push({
        type: 'prompt.promoted',
        sessionId,
        data: { promptId: c.data.promptId, commandId },
      });
      if (t && replaces && t.phase === 'dispatched' && !t.cancel) {
        out.push({
          type: 'turn.cancel_requested',
          sessionId,
          data: { admissionGeneration: t.generation, reason: 'send_now' },
        });
      }
      return out;
    }
    case 'queue.set_auto_run':
      return [
        { type: 'queue.auto_run_set', sessionId, data: { enabled: c.data.enabled, commandId } },
      ];
    case 'session.cancel': {
      const t = s.turn;
      if (!t)
        return rejectCommand(
          s,
          commandId,
          'nothing_running',
          'no prompt is running on this session',
        );
      if (c.data.observedGeneration !== undefined && c.data.observedGeneration !== t.generation) {
        return rejectCommand(
          s,
          commandId,
          'stale_generation',
          `the running prompt is generation ${t.generation}, not ${c.data.observedGeneration}`,
        );
      }
      const out: DecisionDraft[] = [
        t.phase === 'claimed'
          ? release(s, t, commandId)
          : {
              type: 'turn.cancel_requested',
              sessionId,
              data: { admissionGeneration: t.generation, reason: 'user', commandId },
            },
      ];
      // A user's cancel pauses the queue, or the next prompt would start the moment this one stops.
      if (s.autoRun && (s.queue.length > 0 || t.phase === 'claimed')) {
        out.push({ type: 'queue.auto_run_set', sessionId, data: { enabled: false } });
      }
      return out;
    }
    case 'permission.respond':
      return answerPermission(s, c.data, commandId);
    case 'session.reset':
      return [{ type: 'session.was_reset', sessionId, data: { commandId } }];
    case 'session.delete':
      return [{ type: 'session.deleted', sessionId, data: { commandId } }];
    case 'session.configure': {
      const { admission, steering, queueCapacity, abandonedTurn } = c.data;
      return [
        {
          type: 'session.configured',
          sessionId,
          data: {
            admission: admission ?? s.config.admission,
            steering: steering ?? s.config.steering,
            queueCapacity: queueCapacity ?? s.config.queueCapacity,
            abandonedTurn: abandonedTurn ?? s.config.abandonedTurn,
            commandId,
          },
        },
      ];
    }
  }
}

const BY_WORDS: Record<string, string> = {
  person: 'by a person',
  policy: 'by the profile’s policy',
  timeout: 'by the timeout (nobody answered in time)',
  turn_cancelled: 'as cancelled (the turn was cancelled)',
  execution_ended: 'as cancelled (the execution ended)',
};

/**
 * A person's answer to a permission request: carried out once. Any later answer to the same
 * request (from anyone, through any gateway) is refused and told how the request was settled.
 */
function answerPermission(
  s: SessionState,
  c: { requestId: string; optionId: string; subject?: string | undefined },
  commandId: string,
): DecisionDraft[] {
  const open = s.permissions.find((p) => p.requestId === c.requestId);
  const settled = open?.answer ?? s.resolvedPermissions.find((p) => p.requestId === c.requestId);
  if (settled) {
    const how =
      settled.outcome === 'selected' ? `with option ${settled.optionId}` : 'without an option';
    return rejectCommand(
      s,
      commandId,
      'permission_answered',
      `permission request ${c.requestId} was already answered ${BY_WORDS[settled.by] ?? settled.by}, ${how}; this answer changes nothing`,
    );
  }
  if (!open)
    return rejectCommand(
      s,
      commandId,
      'unknown_permission',
      `no permission request ${c.requestId} on this session's execution`,
    );
  if (!open.options.some((o) => o.optionId === c.optionId))
    return rejectCommand(
      s,
      commandId,
      'unknown_option',
      `the agent offered no option ${c.optionId}; offered: ${open.options.map((o) => o.optionId).join(', ')}`,
    );
  return [
    {
      type: 'permission.answered',
      sessionId: s.id,
      data: {
        commandId,
        requestId: c.requestId,
        outcome: 'selected',
        optionId: c.optionId,
        by: 'person',
        ...(c.subject !== undefined ? { subject: c.subject } : {}),
      },
    },
  ];
}

function notQueued(s: SessionState, promptId: string, commandId: string): DecisionDraft[] | null {
  const record = promptOf(s, promptId);
  if (!record)
    return rejectCommand(s, commandId, 'unknown_prompt', `no prompt ${promptId} on this session`);
  if (record.status !== 'queued')
    return rejectCommand(
      s,
      commandId,
      'not_queued',
      `prompt ${promptId} is ${record.status}, not queued`,
    );
  return null;
}

function answerPrompt(
  s: SessionState,
  promptId: string,
  commandId: string,
  task: TaskStatus,
  bounds: Bounds,
): DecisionDraft[] {
  const sessionId = s.id;
  const record = s.prompts[promptId]!;
  if (task !== 'active') {
    const reason = task === 'deleted' ? 'task_deleted' : 'task_archived';
    return [
      {
        type: 'prompt.rejected',
        sessionId,
        data: {
          promptId,
          reason,
          message: task === 'deleted' ? 'the task was deleted' : 'the task is archived',
          commandId,
        },
      },
    ];
  }
  if (s.deleted) {
    return [
      {
        type: 'prompt.rejected',
        sessionId,
        data: {
          promptId,
          reason: 'session_deleted',
          message: `session ${sessionId} was deleted`,
          commandId,
        },
      },
    ];
  }
  const g = admissionGate(s, record.origin);
  if (s.queue.length === 0) {
    if (g.open) return [admit(s, promptId, g.mode, commandId)];
    if (record.origin === 'human' && supportsSteering(s))
      return [admit(s, promptId, 'steer', commandId)];
  }
  const over = queueLimitRefusal(bounds.task, s, record, bounds.limits);
  if (over) {
    return [
      {
        type: 'prompt.rejected',
        sessionId,
        data: { promptId, reason: over.reason, message: over.message, commandId },
      },
    ];
  }
  const capacity = s.config.queueCapacity;
  if (capacity > 0 && s.queue.length >= capacity) {
    return [
      {
        type: 'prompt.rejected',
        sessionId,
        data: {
          promptId,
          reason: 'queue_full',
          message: `the queue of session ${sessionId} is full (${capacity} prompts)`,
          commandId,
        },
      },
    ];
  }
  const reason = s.queue.length > 0 ? 'queue_not_empty' : g.open ? 'busy' : g.reason;
  return [
    {
      type: 'prompt.queued',
      sessionId,
      data: { promptId, position: s.queue.length + 1, reason, commandId },
    },
  ];
}
