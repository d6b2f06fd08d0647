import { z } from 'zod';

/**
 * A text field cut at its item's cap: `more` is how many UTF-8 bytes were left out ("truncated, N
 * bytes more"); absent when nothing was cut.
 */
export const Capped = z.object({ text: z.string(), more: z.number().int().positive().optional() });
export type Capped = z.infer<typeof Capped>;

/**
 * Where an event happened: before any turn (`setup`), replayed by `session/load` (`history`: an
 * earlier conversation, never new output), inside a turn, or after a turn's end before the next
 * prompt (`background`: a shell or subagent finishing starts a model run of its own).
 */
export const Phase = z.enum(['setup', 'history', 'turn', 'background']);
export type Phase = z.infer<typeof Phase>;

/** A block of the person's prompt; attachments by reference, their bytes counted, never inlined. */
export const PromptBlock = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: Capped }),
  z.object({
    type: z.literal('resource_link'),
    uri: z.string(),
    name: z.string().optional(),
    mimeType: z.string().optional(),
  }),
  z.object({
    type: z.literal('attachment'),
    kind: z.enum(['image', 'audio', 'resource']),
    mimeType: z.string().optional(),
    uri: z.string().optional(),
    bytes: z.number().int().nonnegative(),
  }),
]);
export type PromptBlock = z.infer<typeof PromptBlock>;

export const Diff = z.object({
  path: z.string(),
  /** Null for a new file. */
  oldText: Capped.nullable(),
  newText: Capped,
});
export type Diff = z.infer<typeof Diff>;

/** What the agent gave a tool, as far as it is a command, a path or an edit; `raw` is all of it. */
export const ToolInput = z.object({
  command: Capped.optional(),
  path: z.string().optional(),
  diff: Diff.optional(),
  raw: Capped.optional(),
});
export type ToolInput = z.infer<typeof ToolInput>;

export const ToolContent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: Capped }),
  z.object({ type: z.literal('diff'), diff: Diff }),
  z.object({ type: z.literal('terminal'), terminalId: z.string() }),
  z.object({ type: z.literal('other'), kind: z.string() }),
]);
export type ToolContent = z.infer<typeof ToolContent>;

export const Location = z.object({
  path: z.string(),
  line: z.number().int().nullable().optional(),
});

/** The tool call's description as the agent gave it (in a tool event or a permission request). */
const ToolFields = {
  title: z.string().optional(),
  kind: z.string().optional(),
  locations: z.array(Location).optional(),
  input: ToolInput.optional(),
  /** The content as last sent: each update replaces it. */
  content: z.array(ToolContent).optional(),
  /** The last diff the agent showed: kept when later content (a refusal) has none. */
  diff: Diff.optional(),
};

const Tokens = z.object({
  input: z.number().optional(),
  output: z.number().optional(),
  cachedRead: z.number().optional(),
  cachedWrite: z.number().optional(),
  total: z.number().optional(),
});
export type Tokens = z.infer<typeof Tokens>;

/** Fields every event has: the turn (Baton prompt id) it belongs to, and its phase. */
const base = { turn: z.string().nullable(), phase: Phase };

/** An event of `type` with the fields every event has and its own (`shape`). */
const event = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.object({ ...base, type: z.literal(type), ...shape });

/**
 * One entry of a session's transcript: an item's creation or a change to it. Text arrives as
 * deltas whose concatenation (per `item`) is the message; a tool event is a patch (a field it
 * omits keeps its value; `output.append` adds to the terminal output, `output.replace` replaces
 * it). {@link foldTranscript} turns events into whole items.
 */
export const TranscriptEvent = z.discriminatedUnion('type', [
  event('prompt', {
    item: z.string(),
    promptId: z.string().nullable(),
    content: z.array(PromptBlock),
  }),
  event('text', {
    item: z.string(),
    role: z.enum(['agent', 'thought', 'user']),
    messageId: z.string().optional(),
    delta: z.string(),
    /** Said in a subagent's own session (its id): not the parent's text. */
    subagent: z.string().optional(),
  }),
  event('plan', {
    entries: z.array(
      z.object({ content: z.string(), status: z.string(), priority: z.string().optional() }),
    ),
  }),
  event('mode', { modeId: z.string() }),
  event('model', { modelId: z.string() }),
  event('commands', {
    commands: z.array(z.object({ name: z.string(), description: z.string().optional() })),
  }),
  event('tool', {
    item: z.string(),
    toolCallId: z.string(),
    ...ToolFields,
    status: z.string().optional(),
    /** The result the agent reported (rawOutput, the adapter's tool response). */
    result: Capped.optional(),
    output: z
      .object({
        mode: z.enum(['append', 'replace']),
        text: z.string(),
        more: z.number().optional(),
      })
      .optional(),
    exit: z
      .object({ code: z.number().nullable().optional(), signal: z.string().nullable().optional() })
      .optional(),
    parentToolCallId: z.string().optional(),
    /** Run in a subagent's own session (its id). */
    subagent: z.string().optional(),
  }),
  /** A subagent the agent started in a session of its own: a patch, as tool events are. */
  event('subagent', {
    item: z.string(),
    sessionId: z.string(),
    title: z.string().optional(),
    description: z.string().optional(),
    state: z.string().optional(),
    stopReason: z.string().optional(),
  }),
  event('permission', {
    item: z.string(),
    toolCallId: z.string().optional(),
    ...ToolFields,
    options: z.array(z.object({ optionId: z.string(), name: z.string(), kind: z.string() })),
  }),
  event('settled', {
    item: z.string(),
    outcome: z.enum(['selected', 'cancelled']),
    optionId: z.string().optional(),
    optionKind: z.string().optional(),
    /** Who answered: a person (their user id), the profile's policy, or `client` when unknown. */
    by: z.string(),
    at: z.string(),
  }),
  event('usage', {
    used: z.number().optional(),
    size: z.number().optional(),
    cost: z.object({ amount: z.number(), currency: z.string() }).optional(),
    tokens: Tokens.optional(),
    /** What started the model run this usage closes (`human`, `task-notification`, …). */
    origin: z.string().optional(),
  }),
  event('turn_end', {
    stopReason: z.string().optional(),
    tokens: Tokens.optional(),
  }),
  /** Bytes left out of an item's appended output past its cap. */
  event('truncated', { item: z.string(), more: z.number() }),
  /** The session's transcript reached its cap: nothing after this is recorded. */
  event('capped', {
    limit: z.enum(['items', 'bytes']),
    max: z.number(),
  }),
]);
export type TranscriptEvent = z.infer<typeof TranscriptEvent>;
export type EventOf<T extends TranscriptEvent['type']> = Extract<TranscriptEvent, { type: T }>;
