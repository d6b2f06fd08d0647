import { acpTokenCounts } from '@baton/transcript';
import type { FactBody, FactBodyOf } from '../facts';
import { asId, rec, str, text, type JsonRecord } from '../json';

/** The `update` of a `session/update` notification, if the message is one. */
export const sessionUpdate = (message: JsonRecord): JsonRecord | undefined =>
  message.method === 'session/update' ? rec(rec(message.params)?.update) : undefined;

type ToolStatus = 'pending' | 'in_progress' | 'completed' | 'failed';

/**
 * ACP v1 statuses pass through; the v2 draft's `cancelled` is terminal like `failed`, and
 * `paused` (or anything unknown) says nothing we can use.
 */
export const toolStatus = (v: unknown): ToolStatus | undefined => {
  switch (v) {
    case 'pending':
    case 'in_progress':
    case 'completed':
    case 'failed':
      return v;
    case 'cancelled':
      return 'failed';
    default:
      return undefined;
  }
};

const chunkChars = (update: JsonRecord): number | undefined => {
  const content = rec(update.content);
  const t = str(content?.text);
  return t === undefined ? undefined : t.length;
};

/** Message, thought and plan updates are foreground generation. */
export const outputFact = (update: JsonRecord): FactBody | undefined => {
  switch (update.sessionUpdate) {
    case 'agent_message_chunk': {
      const chars = chunkChars(update);
      return {
        type: 'foreground.output',
        data: chars === undefined ? { channel: 'message' } : { channel: 'message', chars },
      };
    }
    case 'agent_thought_chunk': {
      const chars = chunkChars(update);
      return {
        type: 'foreground.output',
        data: chars === undefined ? { channel: 'thought' } : { channel: 'thought', chars },
      };
    }
    case 'plan':
      return { type: 'foreground.output', data: { channel: 'plan' } };
    default:
      return undefined;
  }
};

export interface ToolFrame {
  toolCallId: string;
  first: boolean;
  status?: ToolStatus;
  title?: string;
  toolKind?: string;
}

/** Reads the fields every dialect needs from a `tool_call` / `tool_call_update`. */
export const toolFrame = (update: JsonRecord): ToolFrame | undefined => {
  const kind = update.sessionUpdate;
  if (kind !== 'tool_call' && kind !== 'tool_call_update') return undefined;
  const toolCallId = asId(update.toolCallId);
  if (toolCallId === undefined) return undefined;
  const frame: ToolFrame = { toolCallId, first: kind === 'tool_call' };
  const status = toolStatus(update.status);
  if (status !== undefined) frame.status = status;
  const title = text(update.title, 2_000);
  if (title !== undefined) frame.title = title;
  const toolKind = text(update.kind, 100);
  if (toolKind !== undefined) frame.toolKind = toolKind;
  return frame;
};

export type Ownership = 'foreground' | 'background';

/** Builds a tool fact, leaving out every field the frame did not carry. */
export const toolFact = (
  frame: ToolFrame,
  opts: {
    started: boolean;
    ownership?: Ownership | undefined;
    parentToolCallId?: string | undefined;
  },
): FactBody => {
  const data: FactBodyOf<'tool.started'>['data'] = { toolCallId: frame.toolCallId };
  if (opts.ownership !== undefined) data.ownership = opts.ownership;
  if (opts.parentToolCallId !== undefined) data.parentToolCallId = opts.parentToolCallId;
  if (frame.status !== undefined) data.status = frame.status;
  if (!opts.started) return { type: 'tool.updated', data };
  if (frame.title !== undefined) data.title = frame.title;
  if (frame.toolKind !== undefined) data.toolKind = frame.toolKind;
  return { type: 'tool.started', data };
};

const count = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined;

/**
 * ACP `usage_update`: the context window (`used` of `size` tokens) and the session's cost so
 * far. Undefined for any other update, and for one that carries nothing usable.
 */
export const usageFact = (update: JsonRecord): FactBodyOf<'usage.reported'> | undefined => {
  if (update.sessionUpdate !== 'usage_update') return undefined;
  const used = count(update.used);
  const size = count(update.size);
  const c = rec(update.cost);
  const amount = c?.amount;
  const currency = text(c?.currency, 16) ?? '';
  const cost =
    typeof amount === 'number' && Number.isFinite(amount) && amount >= 0
      ? { amount, currency }
      : undefined;
  if (used === undefined && size === undefined && cost === undefined) return undefined;
  return {
    type: 'usage.reported',
    data: {
      ...(used !== undefined ? { used } : {}),
      ...(size !== undefined ? { size } : {}),
      ...(cost !== undefined ? { cost } : {}),
    },
  };
};

type BackgroundStarted = FactBodyOf<'background.started'>;
export type EndStatus = FactBodyOf<'background.ended'>['data']['status'];

/**
 * How a dialect reads the status its agent gives ended background work: `statuses` maps each of
 * the agent's words to the end it is; any other value is no end.
 */
export const endStatusOf =
  (statuses: Readonly<Record<string, EndStatus>>) =>
  (v: unknown): EndStatus | undefined =>
    typeof v === 'string' && Object.hasOwn(statuses, v) ? statuses[v] : undefined;

/**
 * Work the agent runs in the background, from its start: `attested` when the agent vouches that
 * it reports the work's end; `toolCallId`, the tool call that started it, when there is one.
 */
export const backgroundStarted = (
  work: BackgroundStarted['data']['work'],
  attested: boolean,
  toolCallId?: string,
): BackgroundStarted => ({
  type: 'background.started',
  data: { work, ...(toolCallId !== undefined ? { toolCallId } : {}), attested },
});

/**
 * How the dialects without updates of their own (generic, codex) read a `session/update`: its
 * foreground output or usage is a fact as it stands (`facts`); a tool call or update is given back
 * as its frame, with the update for what else a dialect reads of it; anything else (or a message
 * that is no update) has no fact.
 */
export const readUpdate = (
  message: JsonRecord,
): { facts: FactBody[] } | { update: JsonRecord; frame: ToolFrame } => {
  const update = sessionUpdate(message);
  if (update === undefined) return { facts: [] };
  const output = outputFact(update);
  if (output !== undefined) return { facts: [output] };
  const usage = usageFact(update);
  if (usage !== undefined) return { facts: [usage] };
  const frame = toolFrame(update);
  return frame === undefined ? { facts: [] } : { update, frame };
};

/** The prompt answer's `usage` (ACP PromptResponse): the turn's tokens, if it reports any. */
export const turnUsageFact = (usage: unknown): FactBodyOf<'usage.reported'> | undefined => {
  const tokens = acpTokenCounts(usage);
  return tokens === undefined ? undefined : { type: 'usage.reported', data: { tokens } };
};
