import { z } from 'zod';
import { TaskKey, TenantId } from './task-key';
import {
  AdmissionMode,
  ExecutionStopReason,
  Id,
  MAX_PROMPT_CHARS,
  PromptOrigin,
  SchemaVersion,
  TraceParent,
} from './common';
import { PermissionResolver } from './entries';

/**
 * What flows between the owner of a task and the worker hosting one of its executions, outside
 * the task stream: the execution's job (how to start the agent) and its inbox (what to send it).
 */

const Generation = z.number().int().nonnegative();

const inboxEnvelope = {
  v: SchemaVersion,
  taskId: TaskKey,
  sessionId: Id,
  executionId: Id,
};

/**
 * An admitted prompt handed to the execution that runs it. The worker sends it as session/prompt
 * (with `_meta.baton.{promptId, admissionGeneration}`) and reports `prompt.dispatched` or
 * `prompt.dispatch_failed`, which completes or reopens the claim. Delivered at least once: the
 * worker ignores a (promptId, admissionGeneration) it has already sent.
 */
export const PromptDelivery = z.object({
  ...inboxEnvelope,
  type: z.literal('prompt.deliver'),
  data: z.object({
    promptId: Id,
    admissionGeneration: Generation,
    mode: AdmissionMode,
    origin: PromptOrigin,
    text: z.string().min(1).max(MAX_PROMPT_CHARS),
    /** The trace the prompt was submitted under (prompt.submit), continued by the worker. */
    traceparent: TraceParent.optional(),
  }),
});
export type PromptDelivery = z.infer<typeof PromptDelivery>;

/** The owner decided to cancel the running turn: the worker sends session/cancel. */
export const TurnCancelDelivery = z.object({
  ...inboxEnvelope,
  type: z.literal('turn.cancel'),
  data: z.object({ admissionGeneration: Generation, reason: z.enum(['user', 'send_now']) }),
});
export type TurnCancelDelivery = z.infer<typeof TurnCancelDelivery>;

/**
 * The owner ends the execution (session reset or delete, or an operator's stop): the worker tears
 * the agent's process group down and reports `execution.ended` with reason `cancelled`. It rides
 * the inbox, not a BullMQ-side cancel, because the inbox is fenced by the shard lease (a deposed
 * owner cannot stop a successor's execution), ordered with the prompts handed to the execution,
 * durable while the worker reconnects, and read from its start, so a stop written before the job
 * was picked up still applies.
 */
export const ExecutionStopDelivery = z.object({
  ...inboxEnvelope,
  type: z.literal('execution.stop'),
  data: z.object({ reason: ExecutionStopReason }),
});
export type ExecutionStopDelivery = z.infer<typeof ExecutionStopDelivery>;

/**
 * The owner settled an open permission request (a person's answer, its timeout, a cancel): the
 * worker answers the agent's `session/request_permission` with it and reports
 * `permission.resolved`. Delivered at least once: an answer to a request no longer pending is
 * ignored.
 */
export const PermissionAnswerDelivery = z.object({
  ...inboxEnvelope,
  type: z.literal('permission.answer'),
  data: z.object({
    requestId: Id,
    outcome: z.enum(['selected', 'cancelled']),
    optionId: Id.optional(),
    by: PermissionResolver,
    subject: z.string().max(200).optional(),
  }),
});
export type PermissionAnswerDelivery = z.infer<typeof PermissionAnswerDelivery>;

export const InboxMessage = z.discriminatedUnion('type', [
  PromptDelivery,
  TurnCancelDelivery,
  ExecutionStopDelivery,
  PermissionAnswerDelivery,
]);
export type InboxMessage = z.infer<typeof InboxMessage>;

/**
 * The name of an agent profile: one of the agents the operator configured for the workers
 * (BATON_PROFILES / BATON_PROFILES_FILE, libs/config). A client names a profile and nothing
 * else about the agent: never a command, its arguments, its environment or a path.
 */
export const ProfileName = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/,
    'a profile name: letters, digits, _ . - (at most 64), starting with a letter or digit',
  );
export type ProfileName = z.infer<typeof ProfileName>;

/**
 * A subfolder of the tenant's workspace: relative, `/`-separated, no `.` or `..` segment, no
 * empty segment, no backslash or control character. The worker also resolves it (symbolic
 * links included) and refuses it unless it stays inside the tenant's workspace.
 */
export const WorkspacePath = z
  .string()
  .min(1)
  .max(1_000)
  .refine(
    (p) =>
      !p.startsWith('/') &&
      !p.includes('\\') &&
      ![...p].some((c) => c.charCodeAt(0) < 0x20) &&
      p.split('/').every((seg) => seg !== '' && seg !== '.' && seg !== '..'),
    'must be a relative folder inside the workspace: no leading /, no . or .. segment, no empty segment, no backslash',
  );

/**
 * The data of an execution's BullMQ job: which profile to run, for which tenant, and the few
 * choices a profile leaves to the client. Strict: a job with any other key (an `agent`, a
 * `command`, an `env`, a `cwd`) is refused by the worker and dead-lettered, never run.
 * `executionId` is chosen by whoever starts it and is also the job id, so starting the same
 * execution twice is one job. The generation is taken by the worker when the job starts (a
 * per-session counter in Redis), so a restart is always a new execution with a higher generation.
 */
export const ExecutionJob = z.strictObject({
  v: SchemaVersion,
  /** The task's key (`<tenant>/<task id>`): the worker is tenant-agnostic. */
  taskId: TaskKey,
  sessionId: Id,
  executionId: Id,
  /** The tenant that owns the task; the worker refuses a job whose task another tenant owns. */
  tenant: TenantId,
  profile: ProfileName,
  /** Replay profiles only: the recording to play (a name inside the worker's recordings folder). */
  recording: z.string().min(1).max(2_000).optional(),
  /** Replay profiles only: playback speed factor (2 twice as fast; 0 without delays). */
  speed: z.number().min(0).max(1_000).optional(),
  /** A subfolder of the tenant's workspace to run in (default: a fresh folder per execution). */
  workspace: WorkspacePath.optional(),
  /**
   * Resume a parked session: the ACP session to load (`session/load`) instead of starting a new
   * one, when the agent advertises `loadSession` (otherwise a fresh session, said so in the
   * `agent.session` fact).
   */
  resumeAcpSessionId: Id.optional(),
});
export type ExecutionJob = z.infer<typeof ExecutionJob>;
export type ExecutionJobInput = z.input<typeof ExecutionJob>;
