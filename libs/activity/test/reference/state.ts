// Reference copy (before the performance work) for test/equivalence.spec.ts: the naive oracle.
import type {
  AdmissionMode,
  AdmissionPolicy,
  BackgroundWork,
  Capabilities,
  Command,
  PromptOrigin,
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
  readonly sessions: Readonly<Record<string, SessionState>>;
}

export interface SessionConfig {
  readonly admission: AdmissionPolicy;
  readonly steering: boolean;
  /** 0 means unlimited. */
  readonly queueCapacity: number;
}

export const DEFAULT_SESSION_CONFIG: SessionConfig = Object.freeze({
  admission: 'coarse',
  steering: false,
  queueCapacity: 10,
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
  readonly cancelRequested: boolean;
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

export type PromptStatus = 'pending' | 'queued' | 'admitted' | 'rejected' | 'removed';

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
}

/** A command as the state keeps it until answered: its type and data (distributed over the union). */
export type PendingCommand = Command extends infer C
  ? C extends Command
    ? Pick<C, 'type' | 'data'>
    : never
  : never;

export function initialTaskState(taskId: string): TaskState {
  return { taskId, seq: 0, sessions: {} };
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
  };
}
