import {
  ExecutionJob,
  ClientId,
  Id,
  MAX_PROMPT_CHARS,
  ProfileName,
  PromptOrigin,
  WorkspacePath,
} from '@baton/protocol';
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
/** Resuming a parked session: a replay may be given its recording and speed anew. */
export const ResumeBody = z.strictObject({
  recording: ExecutionJob.shape.recording,
  speed: ExecutionJob.shape.speed,
});
/** A person's answer to a permission request: one of the options the agent offered. */
export const PermissionAnswerBody = z.object({ optionId: Id });
/** Why the operator force-releases the session (kept in the stream with the decision). */
export const ForceReleaseBody = z.object({ reason: z.string().max(500).optional() });
/**
 * What a client may say about an execution: which operator-configured profile, and the few
 * choices a profile leaves open. Strict: any other key (`agent`, `command`, `args`, `env`, `cwd`,
 * …) is a 400 naming it; nothing about the process comes from a client.
 */
export const ExecutionBody = z.strictObject(
  {
    /** Chosen by the caller to make the request retryable; a fresh one when absent. */
    executionId: ClientId.optional(),
    /** A profile the operator configured (BATON_PROFILES / BATON_PROFILES_FILE). */
    profile: ProfileName,
    /** Replay profiles only: the recording to play. */
    recording: ExecutionJob.shape.recording,
    /** Replay profiles only: playback speed factor (0: no delays). */
    speed: ExecutionJob.shape.speed,
    /** A subfolder of the tenant's workspace (default: a fresh folder for this execution). */
    workspace: WorkspacePath.optional(),
  },
  {
    error: (iss) =>
      iss.code === 'unrecognized_keys'
        ? `unknown field${iss.keys.length > 1 ? 's' : ''} ${iss.keys.map((k) => JSON.stringify(k)).join(', ')}: an execution names a profile (and recording, speed, workspace, executionId), never a command, environment or path`
        : undefined,
  },
);
export {
  ExecutionStatusResult as ExecutionStatus,
  ExecutionStartResult as ExecutionStarted,
} from '@baton/protocol';
export const TaskList = z.object({ tasks: z.array(Id) });
export const ErrorBody = z.object({
  error: z.object({ code: z.string(), message: z.string(), path: z.string().optional() }),
});
