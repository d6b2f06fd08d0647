// Reference copy (before the performance work) for test/equivalence.spec.ts: the naive oracle.
import type {
  AbandonedTurnPolicy,
  AdmissionMode,
  AdmissionPolicy,
  BackgroundWork,
  Capabilities,
  Command,
  ExecutionStopReason,
  PromptOrigin,
  TaskEntry,
  TaskStatus,
} from '@baton/protocol';

/**
 * The folded state of one task. Plain JSON (no Map, no class) so that a snapshot is
 * `JSON.stringify(state)` and restoring it is `JSON.parse`. Never mutated: evolve returns a new
 * object and shares what did not change.
 */
export interface TaskState {
  readonly taskId: string;
  /** Sequence of the last update this state published; the next update gets `seq + 1`. */
  readonly seq: number;
  /** active, archived (no prompts, nothing runs), deleted (a tombstone, for good). */
  readonly status: TaskStatus;
  /** Task-wide commands (archive, unarchive, delete) not yet answered, in stream order. */
  readonly pending: readonly PendingTaskCommand[];
  readonly sessions: Readonly<Record<string, SessionState>>;
}

export type PendingTaskCommand = Pick<
  Extract<TaskEntry, { type: 'task.archive' | 'task.unarchive' | 'task.delete' }>,
  'type' | 'data'
>;

export interface SessionConfig {
  readonly admission: AdmissionPolicy;
  readonly steering: boolean;
  /** 0 means unlimited. */
  readonly queueCapacity: number;
  /** What happens to the execution of a turn that never started. */
  readonly abandonedTurn: AbandonedTurnPolicy;
}

export const DEFAULT_SESSION_CONFIG: SessionConfig = Object.freeze({
  admission: 'coarse',
  steering: false,
  queueCapacity: 10,
  abandonedTurn: 'stop_execution',
});

/** A dispatch that failed before reaching the agent is retried this many times in all. */
export const MAX_DISPATCH_ATTEMPTS = 3;
/** Settled prompts remembered per session, so a retried idempotency key gets the same answer. */
export const SETTLED_PROMPTS_KEPT = 64;

export type ExecutionPhase = 'starting' | 'ready' | 'ended';
export type ExecutionEndReason = 'completed' | 'failed' | 'cancelled' | 'crashed' | 'lost';

export interface ExecutionState {
  readonly id: string;
  readonly generation: number;
  readonly phase: ExecutionPhase;
  readonly capabilities: Capabilities | null;
  readonly endReason: ExecutionEndReason | null;
  /** True once a turn has ended on this execution (waiting for input rather than fresh). */
  readonly hadTurn: boolean;
  /** Why the owner is stopping it (the first reason given wins); null while it may run. */
  readonly stopping: ExecutionStopReason | null;
}

/**
 * A prompt that holds the foreground: claimed by an admission decision, then dispatched when the
 * worker reports it reached the agent. The claim is the gate: while it exists nothing else is
 * admitted as a turn.
 */
export interface Turn {
  readonly promptId: string;
  readonly generation: number;
  readonly mode: AdmissionMode;
  readonly phase: 'claimed' | 'dispatched';
  /** Foreground epoch when the claim was taken; output after it keeps the gate closed. */
  readonly claimEpoch: number;
  /** A human-origin idle for this generation was seen and no foreground output since. */
  readonly yielded: boolean;
  /** An agent fact arrived since dispatch (the stall watchdog's "no agent event at all"). */
  readonly heardFromAgent: boolean;
  /** The watchdog advised a silence on it; any agent fact ends the silence. */
  readonly stalled: boolean;
  /** Why a cancel of it was decided, if one was. */
  readonly cancel: 'user' | 'send_now' | null;
  /** For a handoff claim not yet dispatched: the held-open turn it would replace. */
  readonly predecessor: Turn | null;
  /**
   * The prompt's text while the claim waits for dispatch: the owner delivers it from here (again,
   * after a failover). Null once dispatched.
   */
  readonly text: string | null;
}

/** Ownership of a tool call, decided by the first frame that carries evidence of it. */
export type ToolOwnership = 'foreground' | 'background' | 'child';

export interface Registration {
  readonly work: BackgroundWork;
  readonly toolCallId: string | null;
  /** The dialect stamped it and the execution's capabilities attest its kind. */
  readonly attested: boolean;
  /** Paired with a completion that named no identity: hidden from counts, never retired. */
  readonly presumedEnded: boolean;
}

export type PromptStatus =
  | 'pending'
  | 'queued'
  | 'admitted'
  | 'rejected'
  | 'removed'
  | 'abandoned'
  | 'cancel_timed_out'
  | 'force_released';

export interface PromptRecord {
  readonly promptId: string;
  readonly idempotencyKey: string;
  readonly origin: PromptOrigin;
  /** Kept while pending or queued; dropped once settled (an admitted prompt's claim carries it). */
  readonly text: string | null;
  readonly status: PromptStatus;
  readonly dispatchAttempts: number;
  /** Send-now: runs next even when auto-run is off. */
  readonly sendNow: boolean;
}

export interface SessionState {
  readonly id: string;
  readonly deleted: boolean;
  readonly config: SessionConfig;
  /** Highest execution generation seen: a lower or equal one is a late predecessor. */
  readonly lastGeneration: number;
  readonly execution: ExecutionState | null;
  /** Last admission generation handed out; every admission takes the next one. */
  readonly admissionGeneration: number;
  readonly turn: Turn | null;
  /** A steer in flight: delivered into the running turn, it holds no foreground claim. */
  readonly steer: Turn | null;
  /** Foreground output seen since the last idle boundary. */
  readonly generating: boolean;
  /**
   * Bumped by foreground output that starts generating. A turn claim needs an idle foreground,
   * so any output after a claim moves the epoch away from the claim's.
   */
  readonly foregroundEpoch: number;
  /** Tool ownership of the live execution, by tool call id (provider ids are per execution). */
  readonly tools: Readonly<Record<string, ToolOwnership>>;
  /** Live background registrations of the live execution, in launch order. */
  readonly background: readonly Registration[];
  /** Durable FIFO of prompt ids. */
  readonly queue: readonly string[];
  readonly autoRun: boolean;
  readonly prompts: Readonly<Record<string, PromptRecord>>;
  readonly promptByKey: Readonly<Record<string, string>>;
  /** Settled prompt ids, oldest first, for bounded forgetting. */
  readonly settled: readonly string[];
  /** Commands folded but not yet answered by a decision, in stream order. */
  readonly pending: readonly PendingCommand[];
  /** Highest admission generation that got its stall advisory. */
  readonly stallAdvised: number;
  /** The execution id asked for and not started yet. */
  readonly requestedExecution: string | null;
  /** The last failure of a turn or an execution request, shown until something supersedes it. */
  readonly failure: {
    readonly reason: 'turn_abandoned' | 'cancel_timeout' | 'force_released' | 'no_worker';
    readonly promptId?: string;
    readonly executionId?: string;
  } | null;
}

/** A command as the state keeps it until answered: its type and data (distributed over the union). */
type SessionCommand = Extract<Command, { sessionId: string }>;
export type PendingCommand = SessionCommand extends infer C
  ? C extends SessionCommand
    ? Pick<C, 'type' | 'data'>
    : never
  : never;

export function initialTaskState(taskId: string): TaskState {
  return { taskId, seq: 0, status: 'active', pending: [], sessions: {} };
}

export function initialSessionState(id: string): SessionState {
  return {
    id,
    deleted: false,
    config: DEFAULT_SESSION_CONFIG,
    lastGeneration: 0,
    execution: null,
    admissionGeneration: 0,
    turn: null,
    steer: null,
    generating: false,
    foregroundEpoch: 0,
    tools: {},
    background: [],
    queue: [],
    autoRun: true,
    prompts: {},
    promptByKey: {},
    settled: [],
    pending: [],
    stallAdvised: 0,
    requestedExecution: null,
    failure: null,
  };
}
