import { AgentSpec, Id, MAX_PROMPT_CHARS, PermissionPolicy, PromptOrigin } from '@baton/protocol';
import { z } from 'zod';

/** Request bodies of the REST routes (the OpenAPI document is built from these). */
const Generation = z.number().int().min(0);

export const PromptBody = z.object({
  text: z.string().min(1).max(MAX_PROMPT_CHARS),
  idempotencyKey: Id,
  origin: PromptOrigin.default('human'),
});
export const ObservedGenerationBody = z.object({ observedGeneration: Generation.optional() });
export const AutoRunBody = z.object({ enabled: z.boolean() });
export const ExecutionBody = z.object({
  /** Chosen by the caller to make the request retryable; a fresh one when absent. */
  executionId: Id.optional(),
  agent: AgentSpec,
  cwd: z.string().min(1).max(4_000).optional(),
  mode: z.string().min(1).max(200).optional(),
  permissionPolicy: PermissionPolicy.optional(),
  rawSdkMessages: z.boolean().optional(),
});
export const ExecutionStarted = z.object({ executionId: Id, jobId: z.string() });
export const TaskList = z.object({ tasks: z.array(Id) });
export const ErrorBody = z.object({
  error: z.object({ code: z.string(), message: z.string(), path: z.string().optional() }),
});
