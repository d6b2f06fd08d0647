import { z } from 'zod';

/** Version of every envelope Baton writes: stream entries, updates and wire messages. */
export const SCHEMA_VERSION = 1 as const;
export const SchemaVersion = z.literal(SCHEMA_VERSION);

/** Opaque identifiers chosen by clients, workers or agents. Bounded so one entry stays small. */
export const Id = z.string().min(1).max(200);
export const IsoTime = z.iso.datetime({ offset: true });
/** Provider-specific detail, as in ACP and AHP. */
export const Meta = z.record(z.string(), z.unknown());

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
export type AdmissionPolicy = z.infer<typeof AdmissionPolicy>;

/** Who sent a prompt. Only `human` prompts may take a foreground handoff or steer. */
export const PromptOrigin = z.enum(['human', 'agent', 'workflow', 'wakeup']);
export type PromptOrigin = z.infer<typeof PromptOrigin>;

/** How an admitted prompt reaches the agent. */
export const AdmissionMode = z.enum(['turn', 'handoff', 'steer']);
export type AdmissionMode = z.infer<typeof AdmissionMode>;

export const MAX_PROMPT_CHARS = 100_000;
