import { z } from 'zod';
import { AdmissionMode, Id, MAX_PROMPT_CHARS, PromptOrigin, SchemaVersion } from './common';

/**
 * What flows between the owner of a task and the worker hosting one of its executions, outside
 * the task stream: the execution's job (how to start the agent) and its inbox (what to send it).
 */

const Generation = z.number().int().nonnegative();

const inboxEnvelope = {
  v: SchemaVersion,
  taskId: Id,
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
  data: z.object({ reason: z.enum(['session_reset', 'session_deleted', 'operator']) }),
});
export type ExecutionStopDelivery = z.infer<typeof ExecutionStopDelivery>;

export const InboxMessage = z.discriminatedUnion('type', [
  PromptDelivery,
  TurnCancelDelivery,
  ExecutionStopDelivery,
]);
export type InboxMessage = z.infer<typeof InboxMessage>;

/** How to start the agent of an execution. */
export const AgentSpec = z.discriminatedUnion('kind', [
  /** Any ACP agent speaking over stdio; its dialect is chosen by what it reports at initialize. */
  z.object({
    kind: z.literal('command'),
    command: z.string().min(1).max(2_000),
    args: z.array(z.string().max(10_000)).max(200).default([]),
    /** Added to the worker's environment for this agent only. */
    env: z.record(z.string(), z.string().max(10_000)).default({}),
  }),
  /** The built-in replay agent playing a recording (a bundled name or a path on the worker). */
  z.object({
    kind: z.literal('recording'),
    recording: z.string().min(1).max(2_000),
    /** Playback speed factor: 2 plays twice as fast; 0 plays without delays. */
    speed: z.number().min(0).max(1_000).default(1),
  }),
]);
export type AgentSpec = z.infer<typeof AgentSpec>;

/** How permission requests are answered (see AgentHost in libs/acp). */
export const PermissionPolicy = z.enum(['allow-once', 'deny', 'first-option']);
export type PermissionPolicy = z.infer<typeof PermissionPolicy>;

/**
 * The data of an execution's BullMQ job. `executionId` is chosen by whoever starts it and is
 * also the job id, so starting the same execution twice is one job. The generation is taken by
 * the worker when the job starts (a per-session counter in Redis), so a restart is always a new
 * execution with a higher generation.
 */
export const ExecutionJob = z.object({
  v: SchemaVersion,
  taskId: Id,
  sessionId: Id,
  executionId: Id,
  agent: AgentSpec,
  /** Working directory of the agent's ACP session (default: a fresh temporary folder). */
  cwd: z.string().min(1).max(4_000).optional(),
  /** ACP session mode to set after session/new (session/set_mode), e.g. `default`. */
  mode: z.string().min(1).max(200).optional(),
  permissionPolicy: PermissionPolicy.default('allow-once'),
  /** Ask claude-agent-acp for raw SDK task messages (identified background completion). */
  rawSdkMessages: z.boolean().default(true),
});
export type ExecutionJob = z.infer<typeof ExecutionJob>;
export type ExecutionJobInput = z.input<typeof ExecutionJob>;
