import type {
  AbandonedTurnPolicy,
  AdmissionMode,
  AdmissionPolicy,
  AgentUsage,
  BackgroundWork,
  Capabilities,
  Command,
  ExecutionStopReason,
  PermissionOption,
  PermissionResolver,
  PromptOrigin,
  TaskEntry,
  TaskStatus,
} from '@baton/protocol';
import { own } from './records';

/**
 * The folded state of one task. Plain JSON (no Map, no class) so that a snapshot is
 * `JSON.stringify(state)` and restoring it is `JSON.parse`. Never mutated: evolve returns a new
 * object and shares what did not change.
 */
export interface TaskState {
  readonly taskId: string;
  /** Sequence of the last update this state published; the next update gets `seq + 1`. */
  readonly seq: number;
  /** Archived and deleted tasks take no prompts; a deleted task is a tombstone for good. */
  readonly status: TaskStatus;
  /** Task-wide commands folded but not yet answered, in stream order. */
  readonly pending: readonly PendingTaskCommand[];
  readonly sessions: Readonly<Record<string, SessionState>>;
}

export type PendingTaskCommand = Pick<
  Extract<TaskEntry, { type: 'task.archive' | 'task.unarchive' | 'task.delete' }>,
  'type' | 'data'
> & {
  /**
   * The session commands that came before it in the stream and were still unanswered when it
   * was folded: the last one of each session. It is decided only after them, and they before
   * it, so every command is judged where it stands in the stream. Absent in a state an earlier
   * version folded: such a command waits for nothing (that version decided it first).
   */
  readonly after?: readonly SessionCommandRef[];
};

/** A session command, by its session and its command id. */
export interface SessionCommandRef {
  readonly sessionId: string;
  readonly commandId: string;
}

export interface SessionConfig {
  readonly admission: AdmissionPolicy;
  readonly steering: boolean;
  /** 0 means unlimited. */
  readonly queueCapacity: number;
  /** A turn that never started: stop its execution (the default), or let the queue go on. */
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

/** A stop owed to an execution that a newer one replaced before it ended. */
export interface ReplacedStop {
  readonly executionId: string;
  readonly generation: number;
  readonly reason: ExecutionStopReason;
}

/** What an execution's job asked for (from `execution.started`): enough to start it again. */
export interface Launch {
  readonly profile: string | null;
  readonly recording: string | null;
  readonly speed: number | null;
  readonly workspace: string | null;
}

/** The ACP session of the live or last execution (`agent.session`), kept after it ends. */
export interface AgentSession {
  readonly executionId: string;
  readonly acpSessionId: string;
  readonly loadable: boolean;
  readonly launch: Launch | null;
}
export type ExecutionEndReason = 'completed' | 'failed' | 'cancelled' | 'crashed' | 'lost';

export interface ExecutionState {
  readonly id: string;
  readonly generation: number;
  readonly phase: ExecutionPhase;
  readonly capabilities: Capabilities | null;
  readonly endReason: ExecutionEndReason | null;
  /** True once a turn has ended on this execution (waiting for input rather than fresh). */
  readonly hadTurn: boolean;
  /**
   * The owner stops this execution (and owes the worker the stop until it has ended): a reset, a
   * deletion, a cancel never answered, an abandoned turn, an operator. It takes no prompt meanwhile.
   */
  readonly stopping: ExecutionStopReason | null;
  /** What its job asked for (null when its start fact did not say). */
  readonly launch: Launch | null;
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
  /** Silent for the watchdog's period after the agent was heard from; the next agent fact clears it. */
  readonly stalled: boolean;
  /** A cancel was decided, and why: any owner delivers the same one. */
  readonly cancel: CancelReason | null;
  /**
   * A handoff claim keeps the turn it replaces until it is dispatched: if the claim never reaches
   * the agent (dispatch failed, released), that turn — which the agent still holds open — is the
   * session's turn again, as it stands then.
   */
  readonly predecessor: Turn | null;
  /**
   * The prompt's text while the claim waits for dispatch: the owner delivers it from here (again,
   * after a failover). Null once dispatched.
   */
  readonly text: string | null;
}

export type CancelReason = 'user' | 'send_now';

/** Why the session's last turn or execution request failed, until the next one starts. */
export interface Failure {
  readonly reason: 'turn_abandoned' | 'cancel_timeout' | 'force_released' | 'no_worker';
  readonly promptId?: string;
  readonly executionId?: string;
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
  /** Admitted, and its turn never started (outcome failed). */
  | 'abandoned'
  /** Admitted, and its turn was ended without the agent (outcome cancelled): a cancel it never
   * answered, or an operator's force-release. */
  | 'cancel_timed_out'
  | 'force_released'
  /** Admitted, and running (or held open) when its task or session was deleted: ended with it. */
  | 'task_deleted'
  | 'session_deleted';

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
  /** The trace it was submitted under (W3C traceparent), carried to its delivery. */
  readonly traceparent?: string;
}

export type SettledStatus = Exclude<PromptStatus, 'pending' | 'queued'>;

/** What a session remembers of a settled prompt: enough to answer its key again. */
export interface SettledPrompt {
  readonly promptId: string;
  readonly idempotencyKey: string;
  readonly status: SettledStatus;
}

/** How the owner settled a permission request (a person, the timeout, a cancel, a stop). */
export interface PermissionAnswer {
  readonly outcome: 'selected' | 'cancelled';
  readonly optionId: string | null;
  readonly by: PermissionResolver;
  readonly subject: string | null;
}

/**
 * An `ask` permission request of the live execution that the worker has not reported resolved:
 * open (no answer: the session waits for a person), or answered and owed to the worker.
 */
export interface PermissionRequest {
  readonly requestId: string;
  readonly toolCallId: string | null;
  readonly title: string | null;
  readonly toolKind: string | null;
  readonly options: readonly PermissionOption[];
  readonly answer: PermissionAnswer | null;
}

/** What a session remembers of a resolved permission request: enough to answer a late reply. */
export interface ResolvedPermission {
  readonly requestId: string;
  readonly outcome: 'selected' | 'cancelled';
  readonly optionId: string | null;
  readonly by: PermissionResolver;
}

/** Resolved permission requests remembered per session (a late answer is told how it ended). */
export const RESOLVED_PERMISSIONS_KEPT = 32;

export interface SessionState {
  readonly id: string;
  readonly deleted: boolean;
  readonly config: SessionConfig;
  /** Highest execution generation seen: a lower or equal one is a late predecessor. */
  readonly lastGeneration: number;
  readonly execution: ExecutionState | null;
  /**
   * Stops owed to executions a newer one replaced before they ended, each until its end or loss
   * is folded: otherwise, after a failover, nobody would stop their agents. Undefined when none
   * (and in a state an earlier version folded, which kept none).
   */
  readonly replacedStops: readonly ReplacedStop[] | undefined;
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
  /**
   * Tool ownership of the live execution (provider ids are per execution), decided by the first
   * frame that carries evidence of it; a tool that completes or fails is forgotten. Read it with
   * `toolOwnership`. Tools owned by the background are keyed here; foreground tools and tools
   * decided by lineage come by the hundreds (every call of a generic agent, the sub-tools of
   * subagents, which pile up when their completion never comes), so their ids are kept in sorted
   * arrays: taking a new id copies an array of pointers, where a new key in a record costs a new
   * hidden class and a string-table entry (~1 µs) and a large record copies slowly.
   */
  readonly tools: Readonly<Record<string, 'background'>>;
  /** Ids of the live execution's foreground tools, sorted. */
  readonly foregroundTools: readonly string[];
  /** Ids of the live execution's tools whose first frame named a parent ('child'), sorted. */
  readonly childTools: readonly string[];
  /** Live background registrations of the live execution, in launch order. */
  readonly background: readonly Registration[];
  /** Durable FIFO of prompt ids. */
  readonly queue: readonly string[];
  readonly autoRun: boolean;
  /**
   * Open prompts in submission order: pending, queued, and an admitted one while its claim waits
   * for dispatch (the owner delivers it from here and a failed dispatch counts its attempts).
   * Kept small on purpose: every change copies it, so settled prompts live in `settled`.
   */
  readonly prompts: Readonly<Record<string, PromptRecord>>;
  /** Idempotency keys of the open prompts. */
  readonly promptByKey: Readonly<Record<string, string>>;
  /**
   * The SETTLED_PROMPTS_KEPT most recently settled prompts, oldest first (a prompt keeps its
   * place when it settles again after a requeue), so a retried idempotency key is answered
   * without the session growing forever. A prompt that is open again is read from `prompts`.
   * Look prompts up with `promptOf` and `promptIdOfKey`.
   */
  readonly settled: readonly SettledPrompt[];
  /** Commands folded but not yet answered by a decision, in stream order. */
  readonly pending: readonly PendingCommand[];
  /** Highest admission generation that got its stall advisory. */
  readonly stallAdvised: number;
  /** An execution requested for this session that no worker has started yet. */
  readonly requested: { readonly executionId: string } | null;
  readonly failure: Failure | null;
  /** Permission requests of the live execution not yet reported resolved, oldest first. */
  readonly permissions: readonly PermissionRequest[];
  /** The RESOLVED_PERMISSIONS_KEPT most recently resolved requests, oldest first. */
  readonly resolvedPermissions: readonly ResolvedPermission[];
  /** The ACP session of the live or last execution. */
  readonly agentSession: AgentSession | null;
  /** The last execution was parked (ended after an idle period): resume loads `agentSession`. */
  readonly parked: boolean;
  /**
   * What the agent last reported of its usage (context window, cost, tokens). Undefined while it
   * never reported any; null once a fresh agent session or a reset cleared it (so a client that
   * was told it is told it is gone).
   */
  readonly usage: AgentUsage | null | undefined;
}

/** A command as the state keeps it until answered: its type and data (distributed over the union). */
type SessionCommand = Extract<Command, { sessionId: string }>;
export type PendingCommand = SessionCommand extends infer C
  ? C extends SessionCommand
    ? Pick<C, 'type' | 'data'>
    : never
  : never;

export function initialTaskState(taskId: string): TaskState {
  return { taskId, seq: 0, status: 'active', pending: NO_IDS, sessions: {} };
}

/**
 * Shared empty values for the parts of a session that are usually empty: thousands of idle
 * sessions then hold one empty array and one empty record between them instead of ~40-60 B
 * each. Frozen, like everything in a state is treated (evolve copies before it changes).
 */
export const NO_IDS: readonly never[] = Object.freeze([]);
export const NO_ENTRIES: Readonly<Record<string, never>> = Object.freeze({});

export function initialSessionState(id: string): SessionState {
  return {
    id,
    deleted: false,
    config: DEFAULT_SESSION_CONFIG,
    lastGeneration: 0,
    execution: null,
    replacedStops: undefined,
    admissionGeneration: 0,
    turn: null,
    steer: null,
    generating: false,
    foregroundEpoch: 0,
    tools: NO_ENTRIES,
    foregroundTools: NO_IDS,
    childTools: NO_IDS,
    background: NO_IDS,
    queue: NO_IDS,
    autoRun: true,
    prompts: NO_ENTRIES,
    promptByKey: NO_ENTRIES,
    settled: NO_IDS,
    pending: NO_IDS,
    stallAdvised: 0,
    requested: null,
    failure: null,
    permissions: NO_IDS,
    resolvedPermissions: NO_IDS,
    agentSession: null,
    parked: false,
    usage: undefined,
  };
}

/**
 * Nothing goes on in the session: its execution is ready and not stopping, no turn or steer, no
 * output, no background work known to run, no permission request, nothing queued, requested or
 * pending. What the owner's park timer waits for. Work an unattributed completion may have ended
 * (possibly finished, or presumed ended) is not known to run: after the idle bound, with no word
 * from the agent, parking ends the execution, which retires it as any execution's end does.
 */
export function parkable(s: SessionState): boolean {
  const x = s.execution;
  return (
    !s.deleted &&
    x !== null &&
    x.phase === 'ready' &&
    x.stopping === null &&
    s.turn === null &&
    s.steer === null &&
    !s.generating &&
    s.background.every((r) => r.presumedEnded || r.work.possiblyFinished === true) &&
    s.permissions.length === 0 &&
    s.queue.length === 0 &&
    s.requested === null &&
    s.pending.length === 0 &&
    s.agentSession !== null &&
    s.agentSession.executionId === x.id
  );
}

/** The session waits for a person: a permission request nobody has answered yet. */
export function waitsForPerson(s: SessionState): boolean {
  if (s.deleted) return false;
  for (const p of s.permissions) if (p.answer === null) return true;
  return false;
}

/** A prompt the session knows: its open record, else what it remembers of it settled. */
export function promptOf(
  s: SessionState,
  promptId: string,
): PromptRecord | SettledPrompt | undefined {
  const open = own(s.prompts, promptId);
  if (open) return open;
  for (let i = s.settled.length - 1; i >= 0; i--) {
    if (s.settled[i]!.promptId === promptId) return s.settled[i];
  }
  return undefined;
}

/** The prompt a known idempotency key made (open or remembered settled), if any. */
export function promptIdOfKey(s: SessionState, idempotencyKey: string): string | undefined {
  const open = own(s.promptByKey, idempotencyKey);
  if (open !== undefined) return open;
  for (let i = s.settled.length - 1; i >= 0; i--) {
    if (s.settled[i]!.idempotencyKey === idempotencyKey) return s.settled[i]!.promptId;
  }
  return undefined;
}

/** Ownership of a tool call of the live execution, if a frame has decided it. */
export function toolOwnership(s: SessionState, toolCallId: string): ToolOwnership | undefined {
  const owner = own(s.tools, toolCallId);
  if (owner !== undefined) return owner;
  if (sortedIndexOf(s.foregroundTools, toolCallId) >= 0) return 'foreground';
  return sortedIndexOf(s.childTools, toolCallId) >= 0 ? 'child' : undefined;
}

/** Index of `id` in a sorted array, or -(insertion point) - 1 when absent. */
export function sortedIndexOf(sorted: readonly string[], id: string): number {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const x = sorted[mid]!;
    if (x < id) lo = mid + 1;
    else if (x > id) hi = mid - 1;
    else return mid;
  }
  return -lo - 1;
}

/**
 * Nothing in the task waits on its owner: no live execution and no stop owed to a replaced one
 * (its lease, the missing-lease check, parking), no turn, steer or output (the watchdog, the cancel grace, the quiet period), no open
 * prompt, queue, pending command or requested execution (admission, dispatch, the start bound),
 * no permission request (its timeout, its delivery), no background work. Such a task changes only
 * when a new entry comes, so its owner may put it away (snapshot first) and fold it again then:
 * no clock of the owner has anything to raise for it.
 */
export function atRest(state: TaskState): boolean {
  if (state.pending.length > 0) return false;
  for (const id in state.sessions) {
    const s = state.sessions[id]!;
    const x = s.execution;
    if (
      (x !== null && x.phase !== 'ended') ||
      s.replacedStops !== undefined ||
      s.turn !== null ||
      s.steer !== null ||
      s.generating ||
      s.requested !== null ||
      s.queue.length > 0 ||
      s.pending.length > 0 ||
      s.permissions.length > 0 ||
      s.background.length > 0
    ) {
      return false;
    }
    for (const _ in s.prompts) return false;
  }
  return true;
}
