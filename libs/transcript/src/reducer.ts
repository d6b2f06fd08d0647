import type {
  Capped,
  Diff,
  EventOf,
  Phase,
  PromptBlock,
  ToolContent,
  ToolInput,
  Tokens,
  TranscriptEvent,
} from './schema';
import { acpTokenCounts } from './usage';

/**
 * ACP frames in, transcript events out. The reducer reads only conversation: prompts' content,
 * session updates, permission requests and their answers, turn ends. It never reads `initialize`,
 * `session/new` or `terminal/create` params, so the profile's env and Baton's settings (which ride
 * there) cannot reach the transcript.
 */

/** Which ACP the agent speaks: v1 as Claude's adapter or Codex sends it, or draft v2. */
export type Shape = 'claude' | 'codex' | 'v2';

export interface TranscriptLimits {
  /** UTF-8 bytes kept of each text field of a prompt, tool or permission (and of tool output). */
  itemBytes: number;
  /** UTF-8 bytes kept of one message's text. */
  textBytes: number;
  /** Events kept per session, the `capped` marker included. */
  sessionItems: number;
  /** UTF-8 bytes of the events' JSON kept per session, the `capped` marker included. */
  sessionBytes: number;
}

export const DEFAULT_LIMITS: TranscriptLimits = {
  itemBytes: 64 * 1024,
  textBytes: 256 * 1024,
  sessionItems: 100_000,
  sessionBytes: 64 * 1024 * 1024,
};

/** Room kept for the `capped` marker, so the marker itself never breaks the bound. */
const MARKER_BYTES = 160;

export type TranscriptInput =
  | { kind: 'frame'; direction: 'agent->client' | 'client->agent'; at: string; message: unknown }
  /** The worker is about to send this prompt (`session/prompt`): the turn's id. */
  | { kind: 'prompt'; promptId: string }
  /** Who answers the permission request pending for this tool call (a person, a policy). */
  | { kind: 'answer'; toolCallId: string; by: string };

interface OpenText {
  item: string;
  role: 'agent' | 'thought' | 'user';
  messageId: string | undefined;
  bytes: number;
  /** JSON bytes of `item` and of `messageId` (0 without one): counted once a message. */
  itemBytes: number;
  idBytes: number;
}

interface ToolState {
  item: string;
  outputBytes: number;
  /** JSON bytes of `item` and of the tool call's id: counted once a tool. */
  itemBytes: number;
  idBytes: number;
}

export interface TranscriptState {
  /** Read off the `initialize` answer when the reducer sees it; the caller's guess until then. */
  shape: Shape;
  readonly limits: TranscriptLimits;
  /** Prefix of the item ids: one per execution keeps items of a session's executions apart. */
  readonly scope: string;
  turn: string | null;
  phase: Phase;
  /** The phase `session/load`'s response returns to. */
  beforeLoad: Phase;
  sessionId: string | undefined;
  pendingPrompts: string[];
  /** In-flight `session/prompt` requests, by JSON-RPC id: their prompt id. */
  prompts: Map<string, string | null>;
  loadRequest: string | undefined;
  /** Pending permission requests, by JSON-RPC id. */
  permissions: Map<string, { item: string; toolCallId: string | undefined; options: Opt[] }>;
  answeredBy: Map<string, string>;
  text: OpenText | undefined;
  /** The open message of each subagent's own session. */
  childText: Map<string, OpenText>;
  tools: Map<string, ToolState>;
  /** v2 terminal ids -> their tool call. */
  terminals: Map<string, string>;
  seq: number;
  /** JSON bytes of `turn`, counted when it changes rather than on each event. */
  turnBytes: number;
  mode: string | undefined;
  model: string | undefined;
  commandsKey: string | undefined;
  items: number;
  bytes: number;
  capped: boolean;
}

interface Opt {
  optionId: string;
  name: string;
  kind: string;
}

export const initialTranscriptState = (
  shape: Shape,
  limits: TranscriptLimits = DEFAULT_LIMITS,
  scope = '',
): TranscriptState => ({
  shape,
  limits,
  scope,
  turn: null,
  phase: 'setup',
  beforeLoad: 'setup',
  sessionId: undefined,
  pendingPrompts: [],
  prompts: new Map(),
  loadRequest: undefined,
  permissions: new Map(),
  answeredBy: new Map(),
  text: undefined,
  childText: new Map(),
  tools: new Map(),
  terminals: new Map(),
  seq: 0,
  turnBytes: 4,
  mode: undefined,
  model: undefined,
  commandsKey: undefined,
  items: 0,
  bytes: 0,
  capped: false,
});

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) ? v : undefined;

const utf8 = new TextEncoder();

/**
 * `String.prototype.charCodeAt`, held here and called as `charCodeAt.call(s, i)`. A subclass of
 * String anywhere in the process (ioredis has one, so every worker loads it) puts
 * String.prototype in dictionary mode; V8's optimized code then calls `s.charCodeAt(i)` through a
 * lookup on every character, 6 to 8 times slower. The function held in a constant is inlined
 * whatever the prototype's mode.
 */
const charCodeAt = String.prototype.charCodeAt;

/** UTF-8 bytes of `s`, counted without encoding it (a lone surrogate counts as U+FFFD does). */
const byteLength = (s: string): number => {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = charCodeAt.call(s, i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = charCodeAt.call(s, i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        // A pair: two units, four bytes.
        n += 2;
        i++;
      } else n += 2;
    } else n += 2;
  }
  return n;
};

/** Printable ASCII with nothing JSON escapes: one byte a character (the common case). */
const PLAIN_JSON = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** Above this length the regex engine's scan beats a loop of charCodeAt; below, its call costs more. */
const REGEX_FROM = 64;

/** Bytes of `s` as a JSON string (quotes and escapes included), as JSON.stringify writes it. */
const jsonStringBytes = (s: string): number => {
  const len = s.length;
  if (len >= REGEX_FROM) return PLAIN_JSON.test(s) ? len + 2 : escapedBytes(s, 0);
  // Most strings are short keys and ids: a plain loop, bailing out at the first character that
  // is not one byte as written.
  for (let i = 0; i < len; i++) {
    const c = charCodeAt.call(s, i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return escapedBytes(s, i);
  }
  return len + 2;
};

/** Bytes of `s` as a JSON string, its characters before `from` known to be one byte each. */
function escapedBytes(s: string, from: number): number {
  let n = s.length + 2;
  for (let i = from; i < s.length; i++) {
    const c = charCodeAt.call(s, i);
    if (c >= 0x20 && c < 0x80) {
      if (c === 0x22 || c === 0x5c) n += 1;
    } else if (c < 0x20) n += c === 8 || c === 9 || c === 10 || c === 12 || c === 13 ? 1 : 5;
    else if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdfff) {
      const d = i + 1 < s.length ? charCodeAt.call(s, i + 1) : 0;
      if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
        n += 2;
        i++;
      } else n += 5; // a lone surrogate is written \udxxx
    } else n += 2;
  }
  return n;
}

/**
 * The UTF-8 bytes of `JSON.stringify(v)`, counted without making the string: the session's byte
 * cap is checked on every event, and the writer serializes them anyway.
 */
export function jsonBytes(v: unknown): number {
  switch (typeof v) {
    case 'string':
      return jsonStringBytes(v);
    case 'number':
      return Number.isFinite(v) ? String(v).length : 4;
    case 'boolean':
      return v ? 4 : 5;
    case 'object': {
      if (v === null) return 4;
      if (Array.isArray(v)) {
        let n = 2 + Math.max(0, v.length - 1);
        for (const x of v) n += x === undefined || typeof x === 'function' ? 4 : jsonBytes(x);
        return n;
      }
      let n = 2;
      let first = true;
      for (const k in v) {
        const x = (v as Record<string, unknown>)[k];
        if (x === undefined || typeof x === 'function') continue;
        n += (first ? 0 : 1) + jsonStringBytes(k) + 1 + jsonBytes(x);
        first = false;
      }
      return n;
    }
    default:
      return 0;
  }
}

/*
 * The hot events (text, tool) are counted from the values they are built of, without walking
 * them: the same bytes as `jsonBytes`, property-tested against `JSON.stringify`. An object's
 * JSON is `{`, then `"key":value,` per field with its last comma turned into `}`.
 */

/** Bytes a field adds to its object's JSON: `"key":value,`. */
const field = (key: string, valueBytes: number): number => key.length + 4 + valueBytes;

const cappedBytes = (c: Capped): number =>
  1 +
  field('text', jsonStringBytes(c.text)) +
  (c.more !== undefined ? field('more', jsonBytes(c.more)) : 0);

const diffBytes = (d: Diff): number =>
  1 +
  field('path', jsonStringBytes(d.path)) +
  field('oldText', d.oldText === null ? 4 : cappedBytes(d.oldText)) +
  field('newText', cappedBytes(d.newText));

/** `turn`, `phase` and `type` of an event: `phase` and `type` are plain ASCII names. */
const baseBytes = (s: TranscriptState, type: string): number =>
  1 +
  field('turn', s.turnBytes) +
  field('phase', s.phase.length + 2) +
  field('type', type.length + 2);

/** `s` cut to at most `max` UTF-8 bytes on a character boundary; `more` counts what was cut. */
export function capText(s: string, max: number): Capped {
  if (s.length * 3 <= max) return { text: s };
  const bytes = utf8.encode(s);
  if (bytes.length <= max) return { text: s };
  let end = max;
  // Back off to the start of a character: continuation bytes are 10xxxxxx.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return { text: new TextDecoder().decode(bytes.subarray(0, end)), more: bytes.length - end };
}

/**
 * One step of the transcript: the state (owned by the caller, updated in place and returned) and
 * the events this input adds.
 */
export type TranscriptReducer = (
  state: TranscriptState,
  input: TranscriptInput,
) => { state: TranscriptState; out: TranscriptEvent[] };

class Step {
  readonly out: TranscriptEvent[] = [];
  constructor(readonly s: TranscriptState) {}

  /**
   * Adds an event within the session's caps; past them, one `capped` marker and then nothing.
   * `b` is the event's JSON bytes when the caller counted them.
   */
  emit(e: TranscriptEvent, b = -1): void {
    const s = this.s;
    if (s.capped) return;
    // Chunks with a messageId belong to their message whatever comes between; chunks without one
    // (Codex) are one message until something else is said.
    if (
      e.type !== 'text' &&
      e.type !== 'truncated' &&
      e.type !== 'usage' &&
      s.text?.messageId === undefined
    )
      s.text = undefined;
    if (b < 0) b = jsonBytes(e);
    const l = s.limits;
    if (s.items + 2 > l.sessionItems || s.bytes + b + MARKER_BYTES > l.sessionBytes) {
      s.capped = true;
      const marker: TranscriptEvent = {
        type: 'capped',
        turn: s.turn,
        phase: s.phase,
        limit: s.items + 2 > l.sessionItems ? 'items' : 'bytes',
        max: s.items + 2 > l.sessionItems ? l.sessionItems : l.sessionBytes,
      };
      const mb = jsonBytes(marker);
      if (s.items + 1 <= l.sessionItems && s.bytes + mb <= l.sessionBytes) {
        s.items += 1;
        s.bytes += mb;
        this.out.push(marker);
      }
      return;
    }
    s.items += 1;
    s.bytes += b;
    this.out.push(e);
  }

  base(): { turn: string | null; phase: Phase } {
    return { turn: this.s.turn, phase: this.s.phase };
  }

  nextItem(prefix: string): string {
    return `${this.s.scope}${prefix}${++this.s.seq}`;
  }
}

const idKey = (m: Rec): string => JSON.stringify(m.id);

export function reduceTranscript(
  state: TranscriptState,
  input: TranscriptInput,
): { state: TranscriptState; out: TranscriptEvent[] } {
  const step = new Step(state);
  switch (input.kind) {
    case 'prompt':
      state.pendingPrompts.push(input.promptId);
      break;
    case 'answer':
      state.answeredBy.set(input.toolCallId, input.by);
      break;
    case 'frame':
      onFrame(step, input.direction, input.at, input.message);
      break;
  }
  return { state, out: step.out };
}

function onFrame(step: Step, direction: string, at: string, message: unknown): void {
  if (!isRec(message)) return;
  const s = step.s;
  const method = str(message.method);
  const hasId = typeof message.id === 'number' || typeof message.id === 'string';
  if (direction === 'client->agent') {
    if (method === 'session/prompt' && hasId) return onPrompt(step, message);
    if (method === 'session/load' && hasId) {
      s.loadRequest = idKey(message);
      s.beforeLoad = s.phase;
      s.phase = 'history';
      s.text = undefined;
      const p = message.params;
      if (isRec(p)) s.sessionId ??= str(p.sessionId);
      return;
    }
    if (method === undefined && hasId) return onClientResponse(step, message, at);
    return;
  }
  // agent -> client
  if (method === 'session/update') {
    const p = message.params;
    if (!isRec(p) || !isRec(p.update)) return;
    // A subagent's own session (clientCapabilities.subagents): its text and tools are its own
    // items, never the parent's text.
    const sid = str(p.sessionId);
    if (s.sessionId !== undefined && sid !== undefined && sid !== s.sessionId)
      return onChildUpdate(step, p.update, sid);
    return onUpdate(step, p.update);
  }
  if (method === 'session/request_permission' && hasId) return onPermission(step, message);
  if (method === undefined && hasId) return onAgentResponse(step, message);
}

function onPrompt(step: Step, m: Rec): void {
  const s = step.s;
  const p = isRec(m.params) ? m.params : {};
  s.sessionId ??= str(p.sessionId);
  const baton = isRec(p._meta) && isRec(p._meta.baton) ? p._meta.baton : undefined;
  let promptId = str(baton?.promptId) ?? null;
  if (promptId !== null) {
    const i = s.pendingPrompts.indexOf(promptId);
    if (i >= 0) s.pendingPrompts.splice(i, 1);
  } else promptId = s.pendingPrompts.shift() ?? null;
  s.prompts.set(idKey(m), promptId);
  s.turn = promptId;
  s.turnBytes = promptId === null ? 4 : jsonStringBytes(promptId);
  s.text = undefined;
  s.childText.clear();
  s.phase = 'turn';
  const content: PromptBlock[] = [];
  const max = s.limits.itemBytes;
  for (const b of Array.isArray(p.prompt) ? p.prompt : []) {
    if (!isRec(b)) continue;
    const type = str(b.type);
    if (type === 'text') content.push({ type: 'text', text: capText(str(b.text) ?? '', max) });
    else if (type === 'resource_link')
      content.push({
        type: 'resource_link',
        uri: str(b.uri) ?? '',
        ...(str(b.name) !== undefined ? { name: str(b.name)! } : {}),
        ...(str(b.mimeType) !== undefined ? { mimeType: str(b.mimeType)! } : {}),
      });
    else if (type === 'image' || type === 'audio' || type === 'resource') {
      const res = isRec(b.resource) ? b.resource : b;
      const data = str(res.data) ?? str(res.blob) ?? str(res.text) ?? '';
      const mimeType = str(res.mimeType);
      const uri = str(res.uri);
      content.push({
        type: 'attachment',
        kind: type,
        ...(mimeType !== undefined ? { mimeType } : {}),
        ...(uri !== undefined ? { uri } : {}),
        bytes: type === 'resource' && str(res.text) !== undefined ? byteLength(data) : data.length,
      });
    }
  }
  step.emit({ ...step.base(), type: 'prompt', item: step.nextItem('u'), promptId, content });
}

function endTurn(step: Step, stopReason: string | undefined, usage: unknown): void {
  const s = step.s;
  const tokens = tokensOf(usage);
  step.emit({
    ...step.base(),
    type: 'turn_end',
    ...(stopReason !== undefined ? { stopReason } : {}),
    ...(tokens !== undefined ? { tokens } : {}),
  });
  s.phase = 'background';
  s.text = undefined;
  s.childText.clear();
}

function onAgentResponse(step: Step, m: Rec): void {
  const s = step.s;
  const key = idKey(m);
  if (s.prompts.has(key)) {
    s.prompts.delete(key);
    const r = isRec(m.result) ? m.result : undefined;
    if (r === undefined) return endTurn(step, 'error', undefined);
    // Draft v2 answers a prompt at once ({messageId}); its turn ends at `state_update` idle.
    if (str(r.stopReason) !== undefined) endTurn(step, str(r.stopReason), r.usage);
    return;
  }
  if (key === s.loadRequest) {
    s.loadRequest = undefined;
    s.phase = s.beforeLoad;
    s.text = undefined;
    return;
  }
  const r = m.result;
  if (!isRec(r)) return;
  if (s.phase === 'setup' && r.protocolVersion !== undefined) s.shape = shapeOf(r);
  if (s.sessionId === undefined) s.sessionId = str(r.sessionId);
}

function onPermission(step: Step, m: Rec): void {
  const s = step.s;
  const p = isRec(m.params) ? m.params : {};
  const tc = isRec(p.toolCall) ? p.toolCall : {};
  const options: Opt[] = [];
  for (const o of Array.isArray(p.options) ? p.options : []) {
    if (!isRec(o)) continue;
    options.push({
      optionId: str(o.optionId) ?? '',
      name: str(o.name) ?? '',
      kind: str(o.kind) ?? '',
    });
  }
  const toolCallId = str(tc.toolCallId);
  const item = step.nextItem('p');
  s.permissions.set(idKey(m), { item, toolCallId, options });
  const fields = toolFields(tc, s.limits.itemBytes);
  step.emit({
    ...step.base(),
    type: 'permission',
    item,
    ...(toolCallId !== undefined ? { toolCallId } : {}),
    ...fields,
    options,
  });
}

function onClientResponse(step: Step, m: Rec, at: string): void {
  const s = step.s;
  const key = idKey(m);
  const pending = s.permissions.get(key);
  if (pending === undefined) return;
  s.permissions.delete(key);
  const outcome = isRec(m.result) && isRec(m.result.outcome) ? m.result.outcome : undefined;
  const optionId = str(outcome?.optionId);
  const selected = outcome !== undefined && str(outcome.outcome) === 'selected';
  const by =
    (pending.toolCallId !== undefined ? s.answeredBy.get(pending.toolCallId) : undefined) ??
    'client';
  if (pending.toolCallId !== undefined) s.answeredBy.delete(pending.toolCallId);
  const optionKind = pending.options.find((o) => o.optionId === optionId)?.kind;
  step.emit({
    ...step.base(),
    type: 'settled',
    item: pending.item,
    outcome: selected ? 'selected' : 'cancelled',
    ...(selected && optionId !== undefined ? { optionId } : {}),
    ...(selected && optionKind !== undefined ? { optionKind } : {}),
    by,
    at,
  });
}

function onUpdate(step: Step, u: Rec): void {
  const s = step.s;
  switch (u.sessionUpdate) {
    case 'agent_message_chunk':
      return onText(step, 'agent', u);
    case 'agent_thought_chunk':
      return onText(step, 'thought', u);
    case 'user_message_chunk':
      return onText(step, 'user', u);
    case 'tool_call':
    case 'tool_call_update':
      return onTool(step, u);
    case 'terminal_update':
      return onTerminal(step, u);
    case 'plan': {
      const entries = [];
      for (const e of Array.isArray(u.entries) ? u.entries : []) {
        if (!isRec(e)) continue;
        const priority = str(e.priority);
        entries.push({
          content: str(e.content) ?? '',
          status: str(e.status) ?? 'pending',
          ...(priority !== undefined ? { priority } : {}),
        });
      }
      return step.emit({ ...step.base(), type: 'plan', entries });
    }
    case 'current_mode_update':
      return setMode(step, str(u.currentModeId));
    case 'config_option_update': {
      for (const o of Array.isArray(u.configOptions) ? u.configOptions : []) {
        if (!isRec(o)) continue;
        const category = o.category ?? o.id;
        if (category === 'mode') setMode(step, str(o.currentValue));
        else if (category === 'model') {
          const modelId = str(o.currentValue);
          if (modelId !== undefined && modelId !== s.model) {
            s.model = modelId;
            step.emit({ ...step.base(), type: 'model', modelId });
          }
        }
      }
      return;
    }
    case 'available_commands_update': {
      const list = Array.isArray(u.availableCommands) ? u.availableCommands : [];
      const commands = [];
      for (const c of list) {
        if (!isRec(c)) continue;
        const description = str(c.description);
        commands.push({
          name: str(c.name) ?? '',
          ...(description !== undefined ? { description } : {}),
        });
      }
      // Adapters resend the same list often: only a change is an event.
      let key = '';
      for (const c of commands) key += `${c.name}\u0000`;
      if (key === s.commandsKey) return;
      s.commandsKey = key;
      return step.emit({ ...step.base(), type: 'commands', commands });
    }
    case 'usage_update': {
      const cost =
        isRec(u.cost) && num(u.cost.amount) !== undefined
          ? { amount: num(u.cost.amount)!, currency: str(u.cost.currency) ?? '' }
          : undefined;
      const meta = isRec(u._meta) ? u._meta : undefined;
      const origin = meta && isRec(meta['_claude/origin']) ? meta['_claude/origin'] : undefined;
      const used = num(u.used);
      const size = num(u.size);
      return step.emit({
        ...step.base(),
        type: 'usage',
        ...(used !== undefined ? { used } : {}),
        ...(size !== undefined ? { size } : {}),
        ...(cost !== undefined ? { cost } : {}),
        ...(str(origin?.kind) !== undefined ? { origin: str(origin?.kind)! } : {}),
      });
    }
    case 'subagent_update':
      return onSubagent(step, u);
    case 'state_update':
      // Draft v2: the turn ends at the first idle carrying its stop reason.
      if (s.shape === 'v2' && u.state === 'idle' && s.phase === 'turn')
        endTurn(step, str(u.stopReason), u.usage);
      return;
    default:
      // user_message (v2's echo of the prompt already recorded), session_info_update, …
      return;
  }
}

function onChildUpdate(step: Step, u: Rec, child: string): void {
  switch (u.sessionUpdate) {
    case 'agent_message_chunk':
      return onText(step, 'agent', u, child);
    case 'agent_thought_chunk':
      return onText(step, 'thought', u, child);
    case 'tool_call':
    case 'tool_call_update':
      return onTool(step, u, child);
    default:
      return;
  }
}

function onSubagent(step: Step, u: Rec): void {
  const sessionId = str(u.sessionId);
  if (sessionId === undefined) return;
  const e: EventOf<'subagent'> = {
    ...step.base(),
    type: 'subagent',
    item: `${step.s.scope}s:${sessionId}`,
    sessionId,
  };
  const title = str(u.title);
  if (title !== undefined) e.title = title;
  const description = str(u.description);
  if (description !== undefined) e.description = description;
  if (isRec(u.state)) {
    const state = str(u.state.state);
    if (state !== undefined) e.state = state;
    const stopReason = str(u.state.stopReason);
    if (stopReason !== undefined) e.stopReason = stopReason;
  }
  step.emit(e);
}

function setMode(step: Step, modeId: string | undefined): void {
  if (modeId === undefined || modeId === step.s.mode) return;
  step.s.mode = modeId;
  step.emit({ ...step.base(), type: 'mode', modeId });
}

function onText(step: Step, role: OpenText['role'], u: Rec, child?: string): void {
  const s = step.s;
  const c = u.content;
  if (!isRec(c) || c.type !== 'text' || typeof c.text !== 'string') return;
  const messageId = str(u.messageId);
  let open = child === undefined ? s.text : s.childText.get(child);
  if (open === undefined || open.role !== role || open.messageId !== messageId) {
    const item = step.nextItem('m');
    open = {
      item,
      role,
      messageId,
      bytes: 0,
      itemBytes: jsonStringBytes(item),
      idBytes: messageId === undefined ? 0 : jsonStringBytes(messageId),
    };
  }
  const text: string = c.text;
  const room = s.limits.textBytes - open.bytes;
  // As JSON, plain ASCII is its length and quotes: then its UTF-8 bytes need no second scan.
  const json = jsonStringBytes(text);
  const b = json === text.length + 2 ? text.length : byteLength(text);
  const delta = b <= room ? { text } : capText(text, Math.max(0, room));
  open.bytes += b - (delta.more ?? 0);
  if (delta.text.length > 0 || open.bytes === 0) {
    // One literal per shape, in the order the fields are stored: no spread copies on the
    // session's most frequent event.
    const e: EventOf<'text'> =
      messageId !== undefined
        ? {
            turn: s.turn,
            phase: s.phase,
            type: 'text',
            item: open.item,
            role,
            messageId,
            delta: delta.text,
          }
        : { turn: s.turn, phase: s.phase, type: 'text', item: open.item, role, delta: delta.text };
    if (child !== undefined) e.subagent = child;
    step.emit(
      e,
      baseBytes(s, 'text') +
        field('item', open.itemBytes) +
        field('role', role.length + 2) +
        (messageId !== undefined ? field('messageId', open.idBytes) : 0) +
        field('delta', delta.more === undefined ? json : jsonStringBytes(delta.text)) +
        (child !== undefined ? field('subagent', jsonStringBytes(child)) : 0),
    );
  }
  if (delta.more !== undefined)
    step.emit({ ...step.base(), type: 'truncated', item: open.item, more: delta.more });
  // After emit: an event of another kind closes the open text, text keeps it.
  if (child === undefined) s.text = open;
  else s.childText.set(child, open);
}

function onTool(step: Step, u: Rec, child?: string): void {
  const s = step.s;
  const toolCallId = str(u.toolCallId);
  if (toolCallId === undefined) return;
  let tool = s.tools.get(toolCallId);
  if (tool === undefined) {
    // Draft v2 sends no tool_call: the first update of an unknown id creates the tool.
    const item = `${s.scope}t:${toolCallId}`;
    tool = {
      item,
      outputBytes: 0,
      itemBytes: jsonStringBytes(item),
      idBytes: jsonStringBytes(toolCallId),
    };
    s.tools.set(toolCallId, tool);
  }
  const max = s.limits.itemBytes;
  const e: EventOf<'tool'> = {
    turn: s.turn,
    phase: s.phase,
    type: 'tool',
    item: tool.item,
    toolCallId,
  };
  let n = baseBytes(s, 'tool') + field('item', tool.itemBytes) + field('toolCallId', tool.idBytes);
  if (child !== undefined) {
    e.subagent = child;
    n += field('subagent', jsonStringBytes(child));
  }
  const fields = setToolFields(e, u, max);
  let said = fields > 0;
  n += fields;
  const status = str(u.status);
  if (status !== undefined) {
    e.status = status;
    n += field('status', jsonStringBytes(status));
    said = true;
  }
  if (Array.isArray(u.content))
    for (const c of u.content)
      if (isRec(c) && c.type === 'terminal' && typeof c.terminalId === 'string')
        s.terminals.set(c.terminalId, toolCallId);
  if (u.rawOutput !== undefined && u.rawOutput !== null) {
    e.result = capText(resultText(u.rawOutput), max);
    said = true;
  }
  const meta = isRec(u._meta) ? u._meta : undefined;
  if (meta !== undefined) {
    const cc = isRec(meta.claudeCode) ? meta.claudeCode : undefined;
    if (cc !== undefined) {
      // The adapter's tool response, where it says more than the result already reported.
      if (e.result === undefined && cc.toolResponse !== undefined && cc.toolResponse !== null) {
        const text = resultText(cc.toolResponse);
        if (text !== '') {
          e.result = capText(text, max);
          said = true;
        }
      }
      const parent = str(cc.parentToolUseId);
      if (parent !== undefined) {
        e.parentToolCallId = parent;
        n += field('parentToolCallId', jsonStringBytes(parent));
        said = true;
      }
    }
    const to = isRec(meta.terminal_output) ? meta.terminal_output : undefined;
    if (to !== undefined && typeof to.data === 'string') {
      const kept = capText(to.data, Math.max(0, max - tool.outputBytes));
      tool.outputBytes += byteLength(to.data) - (kept.more ?? 0);
      e.output = { mode: 'append', text: kept.text, ...(kept.more ? { more: kept.more } : {}) };
      n += field('output', jsonBytes(e.output));
      said = true;
    }
    const te = isRec(meta.terminal_exit) ? meta.terminal_exit : undefined;
    if (te !== undefined) {
      e.exit = { code: num(te.exit_code) ?? null, signal: str(te.signal) ?? null };
      n += field('exit', jsonBytes(e.exit));
      said = true;
    }
  }
  // An update that says nothing this transcript keeps (only _meta the adapter adds) is no event.
  if (!said && u.sessionUpdate === 'tool_call_update') return;
  if (e.result !== undefined) n += field('result', cappedBytes(e.result));
  step.emit(e, n);
}

function onTerminal(step: Step, u: Rec): void {
  const s = step.s;
  const terminalId = str(u.terminalId);
  if (terminalId === undefined) return;
  const toolCallId = s.terminals.get(terminalId) ?? terminalId;
  const tool = s.tools.get(toolCallId);
  if (tool === undefined) return;
  const e: EventOf<'tool'> = {
    ...step.base(),
    type: 'tool',
    item: tool.item,
    toolCallId,
  };
  const out = isRec(u.output) ? str(u.output.data) : undefined;
  if (out !== undefined) {
    // v2 terminal output is a base64 snapshot that replaces the last one.
    const text = decodeBase64(out);
    const kept = capText(text, s.limits.itemBytes);
    e.output = { mode: 'replace', text: kept.text, ...(kept.more ? { more: kept.more } : {}) };
  }
  if (isRec(u.exitStatus))
    e.exit = { code: num(u.exitStatus.exitCode) ?? null, signal: str(u.exitStatus.signal) ?? null };
  if (e.output === undefined && e.exit === undefined) return;
  step.emit(e);
}

const decodeBase64 = (b64: string): string => {
  try {
    return new TextDecoder().decode(Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0)));
  } catch {
    return '';
  }
};

function resultText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (isRec(v)) {
    // Codex: the command's output as it printed it.
    const formatted = str(v.formatted_output) ?? str(v.aggregated_output);
    if (formatted !== undefined) return formatted;
    const stdout = str(v.stdout);
    const stderr = str(v.stderr);
    if (stdout !== undefined || stderr !== undefined)
      return [stdout, stderr].filter((x) => x !== undefined && x !== '').join('\n');
  }
  return JSON.stringify(v) ?? '';
}

/** Title, kind, locations, input, content and diff of a tool call (or a permission's tool). */
type ToolFields = Pick<
  EventOf<'tool'>,
  'title' | 'kind' | 'locations' | 'input' | 'content' | 'diff'
>;

function toolFields(u: Rec, max: number): ToolFields {
  const f: ToolFields = {};
  setToolFields(f, u, max);
  return f;
}

/**
 * Sets on `f` the fields `u` gives; the JSON bytes they add (`"key":value,` each), 0 when it gave
 * none.
 */
function setToolFields(f: ToolFields, u: Rec, max: number): number {
  let n = 0;
  const title = str(u.title);
  if (title !== undefined) {
    f.title = title;
    n += field('title', jsonStringBytes(title));
  }
  const kind = str(u.kind);
  if (kind !== undefined) {
    f.kind = kind;
    n += field('kind', jsonStringBytes(kind));
  }
  if (Array.isArray(u.locations)) {
    f.locations = [];
    for (const l of u.locations)
      if (isRec(l) && typeof l.path === 'string')
        f.locations.push({
          path: l.path,
          ...(num(l.line) !== undefined ? { line: num(l.line)! } : {}),
        });
    n += field('locations', jsonBytes(f.locations));
  }
  // `diff` is the input's, or the last diff of the content: counted once it is settled.
  let diff = 0;
  const input = toolInput(u.rawInput, max);
  if (input !== undefined) {
    let i = 1 + (input.raw !== undefined ? field('raw', cappedBytes(input.raw)) : 0);
    if (input.command !== undefined) i += field('command', cappedBytes(input.command));
    if (input.path !== undefined) i += field('path', jsonStringBytes(input.path));
    f.input = input;
    if (input.diff !== undefined) {
      diff = diffBytes(input.diff);
      i += field('diff', diff);
      f.diff = input.diff;
    }
    n += field('input', i);
  }
  if (Array.isArray(u.content)) {
    const content: ToolContent[] = [];
    for (const c of u.content) {
      if (!isRec(c)) continue;
      if (c.type === 'diff' && typeof c.path === 'string') {
        const d = diffOf(c.path, str(c.oldText) ?? null, str(c.newText) ?? '', max);
        content.push({ type: 'diff', diff: d });
        f.diff = d;
        diff = -1;
      } else if (c.type === 'terminal' && typeof c.terminalId === 'string')
        content.push({ type: 'terminal', terminalId: c.terminalId });
      else if (c.type === 'content' && isRec(c.content) && typeof c.content.text === 'string')
        content.push({ type: 'text', text: capText(c.content.text, max) });
      else content.push({ type: 'other', kind: str(c.type) ?? 'unknown' });
    }
    f.content = content;
    n += field('content', jsonBytes(content));
  }
  if (f.diff !== undefined) n += field('diff', diff < 0 ? diffBytes(f.diff) : diff);
  return n;
}

const diffOf = (path: string, oldText: string | null, newText: string, max: number): Diff => ({
  path,
  oldText: oldText === null ? null : capText(oldText, max),
  newText: capText(newText, max),
});

/** `Object.keys(r).length === 0` without making the array: most tool frames carry an input. */
function isEmpty(r: Rec): boolean {
  for (const k in r) if (Object.hasOwn(r, k)) return false;
  return true;
}

function toolInput(raw: unknown, max: number): ToolInput | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (isRec(raw) && isEmpty(raw)) return undefined;
  const input: ToolInput = { raw: capText(JSON.stringify(raw), max) };
  if (!isRec(raw)) return input;
  const cmd = raw.command;
  if (typeof cmd === 'string') input.command = capText(cmd, max);
  else if (Array.isArray(cmd) && cmd.every((c) => typeof c === 'string')) {
    // Codex runs `[shell, -lc, script]`: the script is the command.
    const parts = cmd as string[];
    const shell = parts.length === 3 && (parts[1] === '-lc' || parts[1] === '-c');
    input.command = capText(shell ? parts[2]! : parts.join(' '), max);
  }
  const path = str(raw.file_path) ?? str(raw.path) ?? str(raw.notebook_path);
  if (path !== undefined) {
    input.path = path;
    const oldS = str(raw.old_string);
    const newS = str(raw.new_string);
    if (oldS !== undefined && newS !== undefined) input.diff = diffOf(path, oldS, newS, max);
    else if (str(raw.content) !== undefined)
      input.diff = diffOf(path, null, str(raw.content)!, max);
  }
  return input;
}

/** The turn's tokens as the transcript shows them (the thought tokens are the usage's alone). */
function tokensOf(usage: unknown): Tokens | undefined {
  const counts = acpTokenCounts(usage);
  if (counts === undefined) return undefined;
  const { thought: _thought, ...tokens } = counts;
  return Object.keys(tokens).length > 0 ? tokens : undefined;
}

/** The reducer of each ACP shape. Claude's and Codex's v1 differ in facts, not in the reducer. */
export const reducers: Record<Shape, TranscriptReducer> = {
  claude: reduceTranscript,
  codex: reduceTranscript,
  v2: reduceTranscript,
};

/**
 * The shape a recording or a live agent speaks, from the `initialize` answer: draft v2 by its
 * protocol version, Codex by its agent name, Claude's adapter otherwise.
 */
export function shapeOf(initializeResult: unknown): Shape {
  if (!isRec(initializeResult)) return 'claude';
  if (initializeResult.protocolVersion === 2) return 'v2';
  const info = isRec(initializeResult.agentInfo)
    ? initializeResult.agentInfo
    : isRec(initializeResult.info)
      ? initializeResult.info
      : undefined;
  const name = str(info?.name) ?? '';
  return /codex/i.test(name) ? 'codex' : 'claude';
}

/** Tokens and turn/phase helpers the fold shares. */
export type { Tokens };
