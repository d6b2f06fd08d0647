import { reduceBackgroundWork } from './background-work';

/**
 * AHP 1.0.0's chat reducer, written from the specification (types/channels-chat, the state-model
 * guide and the v1.0.0 reducer fixtures) for the part of ChatState Baton publishes: the turn
 * lifecycle, the tool-call state machine (Baton publishes an agent's permission request as a tool
 * call in `pending-confirmation`), pending (steering / queued) messages and backgroundWork. Pure and clock-free, as the
 * spec's reducers are since 0.9.0: `modifiedAt` comes from the actions' own data.
 *
 * The host folds every action it sends through this reducer, so the snapshot it gives a client is,
 * by construction, what that client folds from the actions it was sent.
 */

/** AHP SessionStatus bits: bits 0–4 are the mutually exclusive activity, 5+ orthogonal flags. */
export const Status = {
  Idle: 1,
  Error: 2,
  InProgress: 8,
  InputNeeded: 24,
  IsRead: 32,
  IsArchived: 64,
} as const;
const ACTIVITY_MASK = (1 << 5) - 1;

export type Json = Record<string, unknown>;

export interface Message {
  text: string;
  origin: { kind: string };
  [k: string]: unknown;
}
export interface PendingMessage {
  id: string;
  message: Message;
}
export interface ActiveTurn {
  id: string;
  startedAt: string;
  message: Message;
  responseParts: unknown[];
  usage: unknown;
}
export interface Turn {
  id: string;
  startedAt?: string;
  duration?: number;
  message: Message;
  responseParts: unknown[];
  usage: unknown;
  state: 'complete' | 'cancelled' | 'error';
  error?: unknown;
}
export interface BackgroundWorkEntry {
  id: string;
  kind: string;
  [k: string]: unknown;
}
export interface ChatState {
  resource: string;
  title: string;
  status: number;
  modifiedAt: string;
  turns: Turn[];
  activeTurn?: ActiveTurn;
  steeringMessage?: PendingMessage;
  queuedMessages?: PendingMessage[];
  backgroundWork?: BackgroundWorkEntry[];
  _meta?: Json;
  [k: string]: unknown;
}

export type ChatAction = { type: string; [k: string]: unknown };

/** A tool call's lifecycle state (AHP ToolCallState): `status` plus the fields of that status. */
export interface ToolCallState {
  status: string;
  toolCallId: string;
  toolName: string;
  displayName: string;
  [k: string]: unknown;
}
export interface ToolCallPart {
  kind: 'toolCall';
  toolCall: ToolCallState;
}

/** The spec's summaryStatus: a tool call awaiting confirmation (or an open input request) needs input. */
function hasBlockingPart(s: ChatState): boolean {
  return (s.activeTurn?.responseParts ?? []).some((p) => {
    const part = p as { kind?: string; response?: unknown; toolCall?: { status?: string } };
    if (part.kind === 'inputRequest') return part.response === undefined;
    if (part.kind === 'toolCall') {
      const st = part.toolCall?.status;
      return (
        st === 'pending-confirmation' ||
        st === 'pending-result-confirmation' ||
        st === 'auth-required'
      );
    }
    return false;
  });
}

export function summaryStatus(s: ChatState, terminal?: number): number {
  const activity =
    terminal ??
    (hasBlockingPart(s) ? Status.InputNeeded : s.activeTurn ? Status.InProgress : Status.Idle);
  return (s.status & ~ACTIVITY_MASK) | activity;
}

function endTurn(
  s: ChatState,
  turnId: unknown,
  state: Turn['state'],
  duration: unknown,
  terminal?: number,
  error?: unknown,
): ChatState {
  const active = s.activeTurn;
  if (!active || active.id !== turnId) return s;
  const d = Math.max(0, typeof duration === 'number' ? duration : 0);
  // Tool calls not yet completed or cancelled are forced into cancelled (`skipped`).
  const responseParts = active.responseParts.map((p) => {
    const part = p as Partial<ToolCallPart>;
    if (part.kind !== 'toolCall' || !part.toolCall) return p;
    const tc = part.toolCall;
    if (tc.status === 'completed' || tc.status === 'cancelled') return p;
    const streaming = tc.status === 'streaming';
    return {
      kind: 'toolCall',
      toolCall: {
        status: 'cancelled',
        ...tcBase(tc),
        invocationMessage: streaming ? (tc.invocationMessage ?? '') : tc.invocationMessage,
        toolInput: streaming ? undefined : tc.toolInput,
        reason: 'skipped',
      },
    };
  });
  const turn: Turn = {
    id: active.id,
    startedAt: active.startedAt,
    duration: d,
    message: active.message,
    responseParts,
    usage: active.usage,
    state,
    ...(error !== undefined ? { error } : {}),
  };
  const next: ChatState = { ...s, turns: [...s.turns, turn] };
  delete next.activeTurn;
  const started = Date.parse(active.startedAt);
  // A time from the actions' own data, not the clock.
  // eslint-disable-next-line no-restricted-syntax
  if (Number.isFinite(started)) next.modifiedAt = new Date(started + d).toISOString();
  next.status = summaryStatus(next, terminal);
  return next;
}

/** The fields every tool call state carries (the spec's tcBase), `_meta` replaced when given. */
function tcBase(tc: ToolCallState, meta?: unknown) {
  return {
    toolCallId: tc.toolCallId,
    toolName: tc.toolName,
    displayName: tc.displayName,
    intention: tc.intention,
    contributor: tc.contributor,
    _meta: meta ?? tc._meta,
  };
}

/**
 * Updates one tool call of the active turn `turnId` (the same state when the turn, the call or
 * the update does not apply), then derives the status again as the spec does.
 */
function updateToolCall(
  s: ChatState,
  a: ChatAction,
  update: (tc: ToolCallState) => ToolCallState,
): ChatState {
  const active = s.activeTurn;
  if (!active || active.id !== a.turnId) return s;
  let found = false;
  const responseParts = active.responseParts.map((p) => {
    const part = p as Partial<ToolCallPart>;
    if (part.kind !== 'toolCall' || !part.toolCall || part.toolCall.toolCallId !== a.toolCallId) {
      return p;
    }
    const next = update(part.toolCall);
    if (next === part.toolCall) return p;
    found = true;
    return { ...part, toolCall: next };
  });
  if (!found) return s;
  const next: ChatState = { ...s, activeTurn: { ...active, responseParts } };
  const status = summaryStatus(next);
  return status === next.status ? next : { ...next, status };
}

/** A markdown or reasoning part of the active turn grows by the action's content. */
function appendToPart(s: ChatState, a: ChatAction, kind: 'markdown' | 'reasoning'): ChatState {
  const active = s.activeTurn;
  if (!active || active.id !== a.turnId || typeof a.content !== 'string') return s;
  let found = false;
  const responseParts = active.responseParts.map((p) => {
    const part = p as { kind?: string; id?: string; content?: string };
    if (found || part.kind !== kind || part.id !== a.partId) return p;
    found = true;
    return { ...part, content: (part.content ?? '') + (a.content as string) };
  });
  return found ? { ...s, activeTurn: { ...active, responseParts } } : s;
}

/** The confirmation option a confirmed action names, among those the pending tool call offered. */
function selectedOption(tc: ToolCallState, id: unknown): unknown {
  if (typeof id !== 'string' || !Array.isArray(tc.options)) return undefined;
  return (tc.options as { id?: unknown }[]).find((o) => o.id === id);
}

export function chatReducer(s: ChatState, a: ChatAction): ChatState {
  switch (a.type) {
    case 'chat/toolCallStart': {
      const active = s.activeTurn;
      if (!active || active.id !== a.turnId) return s;
      const part: ToolCallPart = {
        kind: 'toolCall',
        toolCall: {
          toolCallId: a.toolCallId as string,
          toolName: a.toolName as string,
          displayName: a.displayName as string,
          intention: a.intention,
          contributor: a.contributor,
          _meta: a._meta,
          status: 'streaming',
        },
      };
      return { ...s, activeTurn: { ...active, responseParts: [...active.responseParts, part] } };
    }
    case 'chat/toolCallDelta':
      return updateToolCall(s, a, (tc) =>
        tc.status !== 'streaming'
          ? tc
          : {
              ...tc,
              ...(a._meta !== undefined ? { _meta: a._meta } : {}),
              partialInput:
                ((tc.partialInput as string | undefined) ?? '') +
                (typeof a.content === 'string' ? a.content : ''),
              invocationMessage: a.invocationMessage ?? tc.invocationMessage,
            },
      );
    case 'chat/toolCallReady':
      return updateToolCall(s, a, (tc) => {
        if (
          tc.status !== 'streaming' &&
          tc.status !== 'running' &&
          tc.status !== 'pending-confirmation'
        ) {
          return tc;
        }
        const base = tcBase(tc, a._meta);
        if (a.confirmed) {
          return {
            status: 'running',
            ...base,
            invocationMessage: a.invocationMessage,
            toolInput: a.toolInput,
            confirmed: a.confirmed,
          };
        }
        const pending = tc.status === 'pending-confirmation' ? tc : undefined;
        const options = a.options ?? pending?.options;
        return {
          status: 'pending-confirmation',
          ...base,
          invocationMessage: a.invocationMessage,
          toolInput: a.toolInput ?? pending?.toolInput,
          confirmationTitle: a.confirmationTitle ?? pending?.confirmationTitle,
          riskAssessment: a.riskAssessment ?? pending?.riskAssessment,
          edits: a.edits ?? pending?.edits,
          editable: a.editable ?? pending?.editable,
          ...(options ? { options } : {}),
        };
      });
    case 'chat/toolCallConfirmed':
      return updateToolCall(s, a, (tc) => {
        if (tc.status !== 'pending-confirmation') return tc;
        const base = tcBase(tc, a._meta);
        const selected = selectedOption(tc, a.selectedOptionId);
        if (a.approved === true) {
          return {
            status: 'running',
            ...base,
            invocationMessage: tc.invocationMessage,
            toolInput: a.editedToolInput ?? tc.toolInput,
            confirmed: a.confirmed,
            ...(selected ? { selectedOption: selected } : {}),
          };
        }
        return {
          status: 'cancelled',
          ...base,
          invocationMessage: tc.invocationMessage,
          toolInput: tc.toolInput,
          reason: a.reason,
          reasonMessage: a.reasonMessage,
          userSuggestion: a.userSuggestion,
          ...(selected ? { selectedOption: selected } : {}),
        };
      });
    case 'chat/toolCallComplete':
      return updateToolCall(s, a, (tc) => {
        if (tc.status !== 'running' && tc.status !== 'pending-confirmation') return tc;
        const running = tc.status === 'running';
        const result = (a.result ?? {}) as Record<string, unknown>;
        return {
          status: a.requiresResultConfirmation ? 'pending-result-confirmation' : 'completed',
          ...tcBase(tc, a._meta),
          invocationMessage: tc.invocationMessage,
          toolInput: tc.toolInput,
          confirmed: running ? tc.confirmed : 'not-needed',
          ...(running && tc.selectedOption ? { selectedOption: tc.selectedOption } : {}),
          ...result,
        };
      });
    case 'chat/turnStarted': {
      let next: ChatState = {
        ...s,
        activeTurn: {
          id: a.turnId as string,
          startedAt: a.startedAt as string,
          message: a.message as Message,
          responseParts: [],
          usage: undefined,
        },
      };
      next.status = summaryStatus(next) & ~Status.IsRead;
      next.modifiedAt = a.startedAt as string;
      const q = a.queuedMessageId;
      if (typeof q === 'string') {
        if (next.steeringMessage?.id === q) {
          next = { ...next };
          delete next.steeringMessage;
        }
        if (next.queuedMessages) {
          const rest = next.queuedMessages.filter((m) => m.id !== q);
          next = { ...next, queuedMessages: rest };
          if (rest.length === 0) delete next.queuedMessages;
        }
      }
      return next;
    }
    case 'chat/turnComplete':
      return endTurn(s, a.turnId, 'complete', a.duration);
    case 'chat/turnCancelled':
      return endTurn(s, a.turnId, 'cancelled', a.duration);
    case 'chat/error':
      return endTurn(s, a.turnId, 'error', a.duration, Status.Error, a.error);
    case 'chat/pendingMessageSet': {
      const entry: PendingMessage = { id: a.id as string, message: a.message as Message };
      if (a.kind === 'steering') return { ...s, steeringMessage: entry };
      const list = s.queuedMessages ?? [];
      const i = list.findIndex((m) => m.id === entry.id);
      return {
        ...s,
        queuedMessages: i < 0 ? [...list, entry] : list.map((m, j) => (j === i ? entry : m)),
      };
    }
    case 'chat/pendingMessageRemoved': {
      if (a.kind === 'steering') {
        if (s.steeringMessage?.id !== a.id) return s;
        const next = { ...s };
        delete next.steeringMessage;
        return next;
      }
      const list = s.queuedMessages;
      if (!list) return s;
      const rest = list.filter((m) => m.id !== a.id);
      if (rest.length === list.length) return s;
      const next: ChatState = { ...s, queuedMessages: rest };
      if (rest.length === 0) delete next.queuedMessages;
      return next;
    }
    case 'chat/queuedMessagesReordered': {
      const list = s.queuedMessages;
      if (!list) return s;
      const byId = new Map(list.map((m) => [m.id, m]));
      const seen = new Set<string>();
      const out: PendingMessage[] = [];
      for (const id of (a.order as unknown[]) ?? []) {
        if (typeof id === 'string' && byId.has(id) && !seen.has(id)) {
          seen.add(id);
          out.push(byId.get(id)!);
        }
      }
      for (const m of list) if (!seen.has(m.id)) out.push(m);
      return { ...s, queuedMessages: out };
    }
    case 'chat/backgroundWorkSet':
    case 'chat/backgroundWorkRemoved':
      return reduceBackgroundWork(s, a);
    case 'chat/responsePart': {
      const active = s.activeTurn;
      if (!active || active.id !== a.turnId || typeof a.part !== 'object' || a.part === null) {
        return s;
      }
      return { ...s, activeTurn: { ...active, responseParts: [...active.responseParts, a.part] } };
    }
    case 'chat/delta':
      return appendToPart(s, a, 'markdown');
    case 'chat/reasoning':
      return appendToPart(s, a, 'reasoning');
    case 'chat/usage': {
      const active = s.activeTurn;
      if (!active || active.id !== a.turnId) return s;
      return { ...s, activeTurn: { ...active, usage: a.usage } };
    }
    case 'chat/toolCallContentChanged':
      // Replaces the content of a running call (a call in any other state keeps its own).
      return updateToolCall(s, a, (tc) =>
        tc.status !== 'running' ? tc : { ...tc, content: a.content },
      );
    default:
      return s; // unknown actions (Baton's x- ones included) are no-ops
  }
}

/**
 * Actions a client may dispatch on a chat (AHP's `@clientDispatchable`), of those Baton's chats
 * take; every other action type a client dispatches is refused.
 */
export const CLIENT_DISPATCHABLE = new Set([
  'chat/turnStarted',
  'chat/turnCancelled',
  'chat/toolCallConfirmed',
  'chat/pendingMessageSet',
  'chat/pendingMessageRemoved',
  'chat/queuedMessagesReordered',
]);

/** A chat's entry in its session's catalog (AHP ChatSummary). */
export interface ChatSummary {
  resource: string;
  title: string;
  status: number;
  modifiedAt: string;
  [k: string]: unknown;
}
export interface SessionState {
  chats: ChatSummary[];
  [k: string]: unknown;
}

/**
 * AHP's session reducer for the chat catalog: `session/chatAdded` upserts the summary by resource,
 * `session/chatRemoved` removes it (a no-op when absent), `session/chatUpdated` merges `changes`
 * into it (never its resource; a no-op when absent).
 */
export function sessionReducer(s: SessionState, a: ChatAction): SessionState {
  switch (a.type) {
    case 'session/chatAdded': {
      const summary = a.summary as ChatSummary;
      const i = s.chats.findIndex((c) => c.resource === summary.resource);
      return {
        ...s,
        chats: i < 0 ? [...s.chats, summary] : s.chats.map((c, j) => (j === i ? summary : c)),
      };
    }
    case 'session/chatRemoved': {
      if (!s.chats.some((c) => c.resource === a.chat)) return s;
      return { ...s, chats: s.chats.filter((c) => c.resource !== a.chat) };
    }
    case 'session/chatUpdated': {
      const i = s.chats.findIndex((c) => c.resource === a.chat);
      if (i < 0) return s;
      const { resource: _, ...changes } = (a.changes ?? {}) as Partial<ChatSummary>;
      return { ...s, chats: s.chats.map((c, j) => (j === i ? { ...c, ...changes } : c)) };
    }
    case 'session/defaultChatChanged': {
      const next: SessionState = { ...s, defaultChat: a.defaultChat };
      if (a.defaultChat === undefined || a.defaultChat === null) delete next.defaultChat;
      return next;
    }
    default:
      return s;
  }
}
