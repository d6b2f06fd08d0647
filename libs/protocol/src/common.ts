import { z } from 'zod';

/** Version of every envelope Baton writes: stream entries, updates and wire messages. */
export const SCHEMA_VERSION = 1 as const;
export const SchemaVersion = z.literal(SCHEMA_VERSION);

/** Opaque identifiers chosen by clients, workers or agents. Bounded so one entry stays small. */
export const Id = z.string().min(1).max(200);
/**
 * An id a client chooses for a task, session or execution: one grammar on every surface. No
 * control or format characters (a NUL, a right-to-left override, a zero-width space make ids that
 * look alike), no white space at either end, not `.` or `..` (a path segment that is none), and no
 * braces (the Redis ACL's key patterns rely on a task's keys holding none but their hash tag's).
 */
export const ClientId = Id.regex(
  /^[^{}\p{Cc}\p{Cf}]*$/u,
  'must not contain braces, control or format characters',
)
  .refine((s) => s.trim() === s, 'must not start or end with white space')
  .refine((s) => s !== '.' && s !== '..', 'must not be "." or ".."');
/** A Redis stream entry id, `<ms>-<n>` (a position in a task stream). */
export const StreamId = z.string().regex(/^\d{1,20}-\d{1,20}$/);
export const IsoTime = z.iso.datetime({ offset: true });
/** Provider-specific detail, as in ACP and AHP. */
export const Meta = z.record(z.string(), z.unknown());

/**
 * W3C trace context (`traceparent`, version 00) of the span a prompt was submitted under: it rides
 * in the prompt's entry and its delivery, so the owner that decides and the worker that runs it
 * (whichever they are, after any failover) continue the same trace.
 */
export const TraceParent = z
  .string()
  .regex(/^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/, 'a W3C traceparent (version 00)');

export const ForegroundActivity = z.enum(['generating', 'background']).nullable();
export type ForegroundActivity = z.infer<typeof ForegroundActivity>;

export const SessionState = z.enum([
  'created',
  'starting',
  'idle',
  'running',
  'waiting_for_input',
  'completed',
  'failed',
  'cancelled',
]);
export type SessionState = z.infer<typeof SessionState>;

export const AdmissionPolicy = z.enum(['coarse', 'handoff']);

/**
 * A task's lifecycle: `archived` takes no prompts and runs nothing until it is unarchived;
 * `deleted` is a tombstone (its id stays taken: nothing revives it, nothing reuses it).
 */
export const TaskStatus = z.enum(['active', 'archived', 'deleted']);
export type TaskStatus = z.infer<typeof TaskStatus>;

/** What happens to an execution whose turn never started (no agent event by the watchdog). */
export const AbandonedTurnPolicy = z.enum(['stop_execution', 'continue']);
export type AbandonedTurnPolicy = z.infer<typeof AbandonedTurnPolicy>;
export type AdmissionPolicy = z.infer<typeof AdmissionPolicy>;

/** Who sent a prompt. Only `human` prompts may take a foreground handoff or steer. */
export const PromptOrigin = z.enum(['human', 'agent', 'workflow', 'wakeup']);
export type PromptOrigin = z.infer<typeof PromptOrigin>;

/** How an admitted prompt reaches the agent. */
export const AdmissionMode = z.enum(['turn', 'handoff', 'steer']);
export type AdmissionMode = z.infer<typeof AdmissionMode>;

export const MAX_PROMPT_CHARS = 100_000;

/** Why the owner stops an execution (the inbox's `execution.stop`, and the session's attention). */
export const ExecutionStopReason = z.enum([
  'session_reset',
  'session_deleted',
  'task_archived',
  'task_deleted',
  'cancel_timeout',
  'turn_abandoned',
  'force_released',
  'operator',
  /** Idle for the owner's park period: the agent is closed cleanly, its ACP session kept. */
  'parked',
]);
export type ExecutionStopReason = z.infer<typeof ExecutionStopReason>;
