import { z } from 'zod';
import { TaskKey } from './task-key';
import {
  AbandonedTurnPolicy,
  AdmissionMode,
  AdmissionPolicy,
  Id,
  IsoTime,
  MAX_PROMPT_CHARS,
  Meta,
  PromptOrigin,
  SchemaVersion,
  TraceParent,
} from './common';
import { BackgroundWork } from './background-work';

/**
 * Entries of a task stream. Facts (workers), commands (gateways) and decisions (the projector
 * that owns the task) share one stream, so their relative order is total.
 */
export const WriterRole = z.enum(['worker', 'gateway', 'projector']);
export type WriterRole = z.infer<typeof WriterRole>;

export const Writer = z.object({
  role: WriterRole,
  /** A process's instance id: printable (the append's dedupe hash keeps a field of its own). */
  // eslint-disable-next-line no-control-regex -- control characters are what it refuses
  instance: Id.regex(/^[^\u0000-\u001f\u007f]+$/, 'a writer instance has no control characters'),
  /**
   * Per-writer sequence for deduplication: within one task a writer's seqs only grow, and a writer
   * retries a batch until it is acknowledged before sending later ones; the store then appends a
   * (writer instance, seq) at most once.
   */
  seq: z.number().int().nonnegative(),
});
export type Writer = z.infer<typeof Writer>;

const envelope = {
  v: SchemaVersion,
  taskId: TaskKey,
  sessionId: Id,
  writer: Writer,
};

/** Facts come from one agent execution; its id and generation ride on every one of them. */
const factEnvelope = {
  ...envelope,
  executionId: Id,
  generation: z.number().int().positive(),
};

/** Task-wide entries (archive, delete) concern no one session. */
const taskEnvelope = { v: SchemaVersion, taskId: TaskKey, writer: Writer };

/**
 * The lease a decision was written under: the shard lease's epoch and owner, stamped by the
 * store's fenced append. Anyone who may append facts or commands can append an entry that looks
 * like a decision; the owner's fold counts one only if its fence is a lease the shard really had,
 * no older than the last decision's (libs/activity's decisionFenceRefusal).
 */
export const DecisionFence = z.object({ epoch: z.number().int().positive(), owner: Id });
export type DecisionFence = z.infer<typeof DecisionFence>;

const fact = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.object({ ...factEnvelope, type: z.literal(type), data });
const command = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.object({ ...envelope, type: z.literal(type), data });
/** Absent only in decisions written before decisions carried their fence. */
const decisionFence = { fence: DecisionFence.optional() };
const decision = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.object({ ...envelope, ...decisionFence, type: z.literal(type), data });
const taskEntry = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.object({ ...taskEnvelope, type: z.literal(type), data });
const taskDecision = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.object({ ...taskEnvelope, ...decisionFence, type: z.literal(type), data });

const Generation = z.number().int().nonnegative();
/** The command a decision answers; the owner drops that command from its pending set. */
const InReplyTo = { commandId: Id.optional() };
const ToolOwnershipEvidence = z.enum(['foreground', 'background']);
const ToolStatus = z.enum(['pending', 'in_progress', 'completed', 'failed']);

// ---------------------------------------------------------------------------------------------
// Facts
// ---------------------------------------------------------------------------------------------

export const ExecutionStarted = fact(
  'execution.started',
  z.object({
    startedAt: IsoTime,
    workerId: Id.optional(),
    agentCommand: z.string().max(2_000).optional(),
    /**
     * What the execution's job asked for (profile, and the replay and workspace choices), so a
     * parked session can be resumed the same way. Absent in facts written before they existed.
     */
    profile: z.string().max(64).optional(),
    recording: z.string().max(2_000).optional(),
    speed: z.number().min(0).max(1_000).optional(),
    workspace: z.string().max(1_000).optional(),
  }),
);

/**
 * The execution's ACP session: its id, whether the agent can load it again later
 * (`agentCapabilities.loadSession`), and whether this execution loaded an earlier one
 * (`session/load`) rather than starting afresh. The worker reports it once the session exists.
 */
export const AgentSessionEstablished = fact(
  'agent.session',
  z.object({ acpSessionId: Id, loadable: z.boolean(), loaded: z.boolean() }),
);

/**
 * What the agent reported at `initialize` and what the dialect attests about it. The execution
 * can take prompts once this fact is in the stream (its ACP session exists).
 */
export const Capabilities = z.object({
  agent: z.object({ name: z.string().max(200), version: z.string().max(100).optional() }),
  dialect: z.string().min(1).max(50),
  /** `_meta.claudeCode.promptQueueing` at initialize: concurrent prompts queue agent-side. */
  promptQueueing: z.boolean(),
  /** The adapter is fixture-tested to take a human successor while an earlier prompt is held open. */
  handoff: z.boolean(),
  /** Background kinds whose launch, yield and identified completion the dialect attests. */
  attestedKinds: z.array(z.string().max(100)).max(20),
  /** Kinds whose completions without identity pair unambiguously (counts only, never admission). */
  unambiguousCompletionKinds: z.array(z.string().max(100)).max(20).default([]),
  /**
   * What Baton asked for: the `initialize` request's protocol version and `clientCapabilities`,
   * and the session setup's `_meta` (e.g. raw SDK task messages). A replay asks what its
   * recording's client asked.
   */
  asked: z
    .object({
      protocolVersion: z.unknown().optional(),
      clientCapabilities: Meta.optional(),
      sessionMeta: Meta.optional(),
    })
    .optional(),
  /** What the agent answered at `initialize`: its protocol version and `agentCapabilities`. */
  answered: z
    .object({ protocolVersion: z.unknown().optional(), agentCapabilities: Meta.optional() })
    .optional(),
  _meta: Meta.optional(),
});
export type Capabilities = z.infer<typeof Capabilities>;
export const CapabilitiesNegotiated = fact('capabilities.negotiated', Capabilities);

export const ExecutionEnded = fact(
  'execution.ended',
  z.object({
    reason: z.enum(['completed', 'failed', 'cancelled', 'crashed']),
    exitCode: z.number().int().nullable().optional(),
    error: z.string().max(4_000).optional(),
  }),
);

export const PromptDispatched = fact(
  'prompt.dispatched',
  z.object({ promptId: Id, admissionGeneration: Generation }),
);

export const PromptDispatchFailed = fact(
  'prompt.dispatch_failed',
  z.object({ promptId: Id, admissionGeneration: Generation, error: z.string().max(4_000) }),
);

/** Foreground generation (message or thought chunks), coalesced by the worker. */
export const ForegroundOutput = fact(
  'foreground.output',
  z.object({
    channel: z.enum(['message', 'thought', 'plan']),
    chars: z.number().int().nonnegative().optional(),
  }),
);

/**
 * A model cycle ended. `origin` is the cycle's origin (`human`, `task-notification`, …). A
 * human-origin idle carrying the current admission generation is the foreground-yield boundary.
 */
export const ForegroundIdle = fact(
  'foreground.idle',
  z.object({ origin: z.string().min(1).max(100), admissionGeneration: Generation.optional() }),
);

const Count = z.number().int().nonnegative();

/**
 * What the agent reported of its usage: the context window (`used` of `size` tokens, from ACP
 * `usage_update`), the session's cost so far, and the last turn's tokens (the prompt answer's
 * `usage`). Each field is the latest reported; one absent was not reported (yet).
 */
export const AgentUsage = z.object({
  used: Count.optional(),
  size: Count.optional(),
  cost: z.object({ amount: z.number().nonnegative(), currency: z.string().max(16) }).optional(),
  tokens: z
    .object({
      input: Count.optional(),
      output: Count.optional(),
      thought: Count.optional(),
      cachedRead: Count.optional(),
      cachedWrite: Count.optional(),
      total: Count.optional(),
    })
    .optional(),
});
export type AgentUsage = z.infer<typeof AgentUsage>;

/**
 * The agent reported usage; the fields it carries replace those known. Coalesced by the worker:
 * at most one per coalescing period, and the latest before the turn's end.
 */
export const UsageReported = fact('usage.reported', AgentUsage);

export const TurnEnded = fact(
  'turn.ended',
  z.object({ admissionGeneration: Generation, stopReason: z.string().min(1).max(100) }),
);

export const ToolStarted = fact(
  'tool.started',
  z.object({
    toolCallId: Id,
    /** Ownership evidence the dialect read off the frame; absent when the frame carries none. */
    ownership: ToolOwnershipEvidence.optional(),
    parentToolCallId: Id.optional(),
    status: ToolStatus.optional(),
    title: z.string().max(2_000).optional(),
    toolKind: z.string().max(100).optional(),
  }),
);

export const ToolUpdated = fact(
  'tool.updated',
  z.object({
    toolCallId: Id,
    ownership: ToolOwnershipEvidence.optional(),
    parentToolCallId: Id.optional(),
    status: ToolStatus.optional(),
  }),
);

export const BackgroundStarted = fact(
  'background.started',
  z.object({
    work: BackgroundWork,
    /** The tool call that launched it; its card completing is not the end of this work. */
    toolCallId: Id.optional(),
    /** Stamped by a dialect only on a path whose whole lifecycle its fixtures cover. */
    attested: z.boolean(),
  }),
);

/** Identified when it names `workId` or `toolCallId`; otherwise it never retires for admission. */
export const BackgroundEnded = fact(
  'background.ended',
  z.object({
    workId: Id.optional(),
    toolCallId: Id.optional(),
    kind: z.string().max(100).optional(),
    status: z.enum(['completed', 'failed', 'stopped', 'unknown']),
    /**
     * Unidentified only: the registrations (work ids) one of which the agent says finished
     * without saying which. One live candidate is retired for display; several are each marked
     * `possiblyFinished`. Admission never relaxes on it: the registrations stay.
     */
    candidates: z.array(Id).max(100).optional(),
    /** With `candidates`: the report may also be of none of them (a Monitor event, say). */
    mayBeNone: z.boolean().optional(),
  }),
);

/** One choice an agent offers in a permission request (ACP PermissionOption). */
export const PermissionOption = z.object({
  optionId: Id,
  name: z.string().max(500),
  /** ACP's kind: `allow_once`, `allow_always`, `reject_once`, `reject_always` (or another). */
  kind: z.string().min(1).max(50),
});
export type PermissionOption = z.infer<typeof PermissionOption>;

/**
 * How an execution's permission requests are answered (the profile's `permissionPolicy`):
 * `ask` waits for a person (denied after the owner's timeout), the others answer at once.
 */
export const PermissionPolicyName = z.enum(['ask', 'allow-once', 'deny', 'first-option']);
export type PermissionPolicyName = z.infer<typeof PermissionPolicyName>;

/**
 * The agent asked permission (`session/request_permission`). `requestId` is chosen by the worker,
 * unique within the execution. Under `ask` it stays open until a person answers, the owner's
 * timeout denies it, a cancel or the execution's end resolves it; under any other policy the
 * worker answers it at once and reports `permission.resolved` right after.
 */
export const PermissionRequested = fact(
  'permission.requested',
  z.object({
    requestId: Id,
    toolCallId: Id.optional(),
    title: z.string().max(2_000).optional(),
    toolKind: z.string().max(100).optional(),
    options: z.array(PermissionOption).max(20),
    policy: PermissionPolicyName,
  }),
);

/** Who or what settled a permission request. */
export const PermissionResolver = z.enum([
  /** A person's answer (`subject`: the token's subject, when it has one). */
  'person',
  /** The profile's policy answered at once (`allow-once`, `deny`, `first-option`). */
  'policy',
  /** Nobody answered an `ask` request within the owner's timeout: denied. */
  'timeout',
  /** The turn was cancelled (ACP: pending requests are answered `cancelled`). */
  'turn_cancelled',
  /** The execution is stopped or ended. */
  'execution_ended',
]);
export type PermissionResolver = z.infer<typeof PermissionResolver>;

/** The worker answered the agent's permission request. */
export const PermissionResolved = fact(
  'permission.resolved',
  z.object({
    requestId: Id,
    outcome: z.enum(['selected', 'cancelled']),
    optionId: Id.optional(),
    by: PermissionResolver,
    subject: z.string().max(200).optional(),
  }),
);

// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

const commandData = <S extends z.ZodRawShape>(shape: S) => z.object({ commandId: Id, ...shape });

export const PromptSubmit = command(
  'prompt.submit',
  commandData({
    promptId: Id,
    /** Client-chosen: a repeated key never makes a second prompt. */
    idempotencyKey: Id,
    text: z.string().min(1).max(MAX_PROMPT_CHARS),
    origin: PromptOrigin,
    /** The submitting request's trace; absent when tracing is off. */
    traceparent: TraceParent.optional(),
  }),
);
export const QueueCancel = command('queue.cancel', commandData({ promptId: Id }));
export const QueueSendNow = command(
  'queue.send_now',
  commandData({
    promptId: Id,
    /** The admission generation the client saw running: only that turn may be replaced. */
    observedGeneration: Generation.optional(),
  }),
);
export const QueueSetAutoRun = command('queue.set_auto_run', commandData({ enabled: z.boolean() }));
export const SessionCancel = command(
  'session.cancel',
  commandData({ observedGeneration: Generation.optional() }),
);
export const SessionReset = command('session.reset', commandData({}));
export const SessionDelete = command('session.delete', commandData({}));
export const SessionConfigure = command(
  'session.configure',
  commandData({
    admission: AdmissionPolicy.optional(),
    steering: z.boolean().optional(),
    /** 0 means unlimited. */
    queueCapacity: z.number().int().min(0).max(10_000).optional(),
    abandonedTurn: AbandonedTurnPolicy.optional(),
  }),
);
/**
 * An operator's way out (scope `admin`): the running turn ends now (a claim not yet delivered goes
 * back to the queue), the session's activity is cleared, and its live execution is stopped.
 */
export const SessionForceRelease = command(
  'session.force_release',
  commandData({ reason: z.string().max(500).optional() }),
);
/** An execution was put on the execution queue for this session and waits for a worker. */
export const ExecutionRequest = command('execution.request', commandData({ executionId: Id }));
/**
 * A person answers an open permission request (scope `prompt`) with one of the options the agent
 * offered. A second answer to the same request is refused (`permission_answered`), never applied.
 */
export const PermissionRespond = command(
  'permission.respond',
  commandData({ requestId: Id, optionId: Id, subject: z.string().max(200).optional() }),
);
export const TaskArchive = taskEntry('task.archive', commandData({}));
export const TaskUnarchive = taskEntry('task.unarchive', commandData({}));
export const TaskDelete = taskEntry('task.delete', commandData({}));

// ---------------------------------------------------------------------------------------------
// Decisions
// ---------------------------------------------------------------------------------------------

export const PromptAdmitted = decision(
  'prompt.admitted',
  z.object({ ...InReplyTo, promptId: Id, admissionGeneration: Generation, mode: AdmissionMode }),
);
export const QueueReason = z.enum([
  'busy',
  'no_execution',
  'queue_not_empty',
  'auto_run_off',
  'released',
  /** The live execution is being stopped; prompts wait for the next one. */
  'execution_stopping',
  /** An execution was requested and waits for a free worker slot. */
  'waiting_for_worker',
  'task_archived',
]);
export type QueueReason = z.infer<typeof QueueReason>;
export const PromptQueued = decision(
  'prompt.queued',
  z.object({
    ...InReplyTo,
    promptId: Id,
    position: z.number().int().positive(),
    reason: QueueReason,
  }),
);
export const RejectReason = z.enum([
  'queue_full',
  'session_deleted',
  'dispatch_failed',
  'task_archived',
  'task_deleted',
  /** The task already has as many sessions with work as its bound allows. */
  'too_many_sessions',
  /** Queued, the prompt would pass the bound on the bytes queued on its session or task. */
  'queue_bytes',
]);
export type RejectReason = z.infer<typeof RejectReason>;
export const PromptRejected = decision(
  'prompt.rejected',
  z.object({ ...InReplyTo, promptId: Id, reason: RejectReason, message: z.string().max(1_000) }),
);
/** A claim given back before dispatch: the prompt returns to the head of the queue. */
export const PromptReleased = decision(
  'prompt.released',
  z.object({
    ...InReplyTo,
    promptId: Id,
    admissionGeneration: Generation,
    reason: z.enum(['session_cancelled', 'force_released']),
  }),
);
export const RemoveReason = z.enum([
  'cancelled',
  'session_deleted',
  'task_archived',
  'task_deleted',
]);
export type RemoveReason = z.infer<typeof RemoveReason>;
export const PromptRemoved = decision(
  'prompt.removed',
  z.object({ ...InReplyTo, promptId: Id, reason: RemoveReason }),
);
export const PromptPromoted = decision('prompt.promoted', z.object({ ...InReplyTo, promptId: Id }));
export const AutoRunSet = decision(
  'queue.auto_run_set',
  z.object({ ...InReplyTo, enabled: z.boolean() }),
);
export const TurnCancelRequested = decision(
  'turn.cancel_requested',
  z.object({ ...InReplyTo, admissionGeneration: Generation, reason: z.enum(['user', 'send_now']) }),
);
export const CommandRejected = decision(
  'command.rejected',
  z.object({
    commandId: Id,
    reason: z.enum([
      'unknown_prompt',
      'not_queued',
      'session_deleted',
      'stale_generation',
      'nothing_running',
      'task_archived',
      'task_deleted',
      /** permission.respond: no such request on the session's live execution. */
      'unknown_permission',
      /** permission.respond: the request was already answered (by a person, a timeout, a cancel). */
      'permission_answered',
      /** permission.respond: the agent offered no option with that id. */
      'unknown_option',
    ]),
    message: z.string().max(1_000),
  }),
);
export const SessionConfigured = decision(
  'session.configured',
  z.object({
    ...InReplyTo,
    admission: AdmissionPolicy,
    steering: z.boolean(),
    queueCapacity: z.number().int().min(0),
    abandonedTurn: AbandonedTurnPolicy.default('stop_execution'),
  }),
);
export const SessionWasReset = decision('session.was_reset', z.object({ ...InReplyTo }));
export const SessionDeleted = decision('session.deleted', z.object({ ...InReplyTo }));
export const ExecutionLost = decision(
  'execution.lost',
  z.object({
    executionId: Id,
    generation: z.number().int().positive(),
    reason: z.enum(['lease_expired']),
  }),
);
/** Advisory: a running prompt has seen no agent event for the watchdog's period. Once per generation. */
export const TurnStalled = decision(
  'turn.stalled',
  z.object({ promptId: Id, admissionGeneration: Generation }),
);
/**
 * A dispatched prompt produced no agent event at all by the watchdog's period: its turn fails, and
 * the session's abandoned-turn policy says whether its execution is stopped (`then`).
 */
export const TurnAbandoned = decision(
  'turn.abandoned',
  z.object({
    promptId: Id,
    admissionGeneration: Generation,
    then: AbandonedTurnPolicy.default('continue'),
  }),
);
/**
 * A cancel the agent did not answer within the cancel grace: the turn ends cancelled (reason
 * `cancel_timeout`) and the execution is stopped; the queue waits for the next execution.
 */
export const TurnCancelTimedOut = decision(
  'turn.cancel_timed_out',
  z.object({ promptId: Id, admissionGeneration: Generation }),
);
export const SessionForceReleased = decision(
  'session.force_released',
  z.object({ ...InReplyTo, reason: z.string().max(500).optional() }),
);
/** Output outside any turn went quiet for the quiet period: the foreground is idle again. */
export const ForegroundQuiesced = decision(
  'foreground.quiesced',
  z.object({ foregroundEpoch: z.number().int().nonnegative() }),
);
export const ExecutionRequested = decision(
  'execution.requested',
  z.object({ ...InReplyTo, executionId: Id }),
);
/**
 * The session was idle (no turn, no background work, no open request, nothing queued) for the
 * owner's park period: its execution is stopped cleanly (`execution.stop`, reason `parked`) to free
 * the worker slot; its ACP session is kept to be resumed (`session/load`).
 */
export const ExecutionParked = decision('execution.parked', z.object({ executionId: Id }));
/** A requested execution found no worker within the start bound: it will not run. */
export const ExecutionRequestExpired = decision(
  'execution.request_expired',
  z.object({ executionId: Id }),
);
/**
 * The owner settled an open `ask` permission request: a person's answer (`person`, in reply to
 * `permission.respond`) or its timeout (`timeout`, the first reject option the agent offered, else
 * `cancelled`). The owner hands it to the worker through the execution's inbox until the worker
 * reports `permission.resolved`.
 */
export const PermissionAnswered = decision(
  'permission.answered',
  z.object({
    ...InReplyTo,
    requestId: Id,
    outcome: z.enum(['selected', 'cancelled']),
    optionId: Id.optional(),
    by: z.enum(['person', 'timeout']),
    subject: z.string().max(200).optional(),
  }),
);
export const TaskArchived = taskDecision('task.archived', z.object({ ...InReplyTo }));
export const TaskUnarchived = taskDecision('task.unarchived', z.object({ ...InReplyTo }));
export const TaskDeleted = taskDecision('task.deleted', z.object({ ...InReplyTo }));
export const TaskCommandRejected = taskDecision(
  'task.command_rejected',
  z.object({ commandId: Id, reason: z.enum(['task_deleted']), message: z.string().max(1_000) }),
);

export const FACT_SCHEMAS = [
  ExecutionStarted,
  CapabilitiesNegotiated,
  ExecutionEnded,
  PromptDispatched,
  PromptDispatchFailed,
  ForegroundOutput,
  ForegroundIdle,
  TurnEnded,
  ToolStarted,
  ToolUpdated,
  BackgroundStarted,
  BackgroundEnded,
  PermissionRequested,
  PermissionResolved,
  AgentSessionEstablished,
  UsageReported,
] as const;
export const COMMAND_SCHEMAS = [
  PromptSubmit,
  QueueCancel,
  QueueSendNow,
  QueueSetAutoRun,
  SessionCancel,
  SessionReset,
  SessionDelete,
  SessionConfigure,
  SessionForceRelease,
  ExecutionRequest,
  PermissionRespond,
  TaskArchive,
  TaskUnarchive,
  TaskDelete,
] as const;
export const DECISION_SCHEMAS = [
  PromptAdmitted,
  PromptQueued,
  PromptRejected,
  PromptReleased,
  PromptRemoved,
  PromptPromoted,
  AutoRunSet,
  TurnCancelRequested,
  CommandRejected,
  SessionConfigured,
  SessionWasReset,
  SessionDeleted,
  ExecutionLost,
  TurnStalled,
  TurnAbandoned,
  TurnCancelTimedOut,
  SessionForceReleased,
  ForegroundQuiesced,
  ExecutionRequested,
  ExecutionRequestExpired,
  PermissionAnswered,
  ExecutionParked,
  TaskArchived,
  TaskUnarchived,
  TaskDeleted,
  TaskCommandRejected,
] as const;

export const Fact = z.discriminatedUnion('type', [...FACT_SCHEMAS]);
export type Fact = z.infer<typeof Fact>;
export const Command = z.discriminatedUnion('type', [...COMMAND_SCHEMAS]);
export type Command = z.infer<typeof Command>;
export const Decision = z.discriminatedUnion('type', [...DECISION_SCHEMAS]);
export type Decision = z.infer<typeof Decision>;

/** One entry of a task stream. */
export const StreamEntry = z.discriminatedUnion('type', [
  ...FACT_SCHEMAS,
  ...COMMAND_SCHEMAS,
  ...DECISION_SCHEMAS,
]);
export type StreamEntry = z.infer<typeof StreamEntry>;
export type EntryType = StreamEntry['type'];
export type EntryOf<T extends EntryType> = Extract<StreamEntry, { type: T }>;
/** Entries about one session (every entry but the task-wide ones). */
export type SessionEntry = Extract<StreamEntry, { sessionId: string }>;
export type TaskEntry = Exclude<StreamEntry, SessionEntry>;
export const isTaskEntry = (e: StreamEntry): e is TaskEntry => !('sessionId' in e);

export const FACT_TYPES: ReadonlySet<string> = new Set(FACT_SCHEMAS.map((s) => s.shape.type.value));
export const COMMAND_TYPES: ReadonlySet<string> = new Set(
  COMMAND_SCHEMAS.map((s) => s.shape.type.value),
);
export const DECISION_TYPES: ReadonlySet<string> = new Set(
  DECISION_SCHEMAS.map((s) => s.shape.type.value),
);

/** Every entry type a task stream can hold. */
export const ENTRY_TYPES: ReadonlySet<string> = new Set([
  ...FACT_TYPES,
  ...COMMAND_TYPES,
  ...DECISION_TYPES,
]);

export const isFact = (e: StreamEntry): e is Fact => FACT_TYPES.has(e.type);
export const isCommand = (e: StreamEntry): e is Command => COMMAND_TYPES.has(e.type);
export const isDecision = (e: StreamEntry): e is Decision => DECISION_TYPES.has(e.type);
