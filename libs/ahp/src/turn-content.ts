import {
  foldTranscript,
  type PermissionItem,
  type ToolItem,
  type TranscriptEvent,
  type TranscriptItem,
} from '@baton/transcript';
import type { ChatAction, Message, ToolCallState, Turn } from './reducer';
import { BATON_META_KEY } from './wire';

/**
 * A Baton turn's conversation as AHP turn content, from the session's transcript (libs/transcript
 * events, all of one prompt id): the prompt as sent, the response parts in the order the agent
 * produced them (markdown for its text, reasoning for its thoughts, a tool call per ACP tool call
 * with its input, content, output, status and the permission it asked for) and the usage. Pure:
 * the same events give the same content, however their text was chunked.
 */

export interface MarkdownPart {
  kind: 'markdown' | 'reasoning';
  id: string;
  content: string;
}
export interface ToolPart {
  kind: 'toolCall';
  toolCall: ToolCallState;
}
export type ContentPart = MarkdownPart | ToolPart;

export interface TurnContent {
  /** The prompt as sent (its text blocks), when the transcript has it. */
  prompt?: string;
  parts: ContentPart[];
  usage?: Record<string, unknown>;
  /** The turn's `turn_end`: the agent's stop reason. */
  ended?: { stopReason?: string };
}

/** AHP ConfirmationOptionKind of an ACP permission option kind (`allow_*` / `reject_*`). */
export function confirmationKind(acpKind: string): 'approve' | 'deny' {
  return acpKind.startsWith('reject') ? 'deny' : 'approve';
}

const capped = (c: { text: string; more?: number } | undefined): string | undefined =>
  c === undefined ? undefined : c.more ? `${c.text}\n… (truncated, ${c.more} bytes more)` : c.text;

/** AHP ToolResultContent of an ACP tool call: its text content, its diffs, its terminal output. */
function toolContent(
  t: Pick<ToolItem, 'content' | 'output' | 'result'>,
): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const c of t.content ?? []) {
    if (c.type === 'text') out.push({ type: 'text', text: capped(c.text) });
    else if (c.type === 'diff') out.push(diffContent(c.diff));
  }
  if (t.output) out.push({ type: 'text', text: capped(t.output) });
  else if (out.length === 0 && t.result) out.push({ type: 'text', text: capped(t.result) });
  return out;
}

/** An edit, as text a reader shows (the file and its new text), its parts under `_meta`. */
function diffContent(d: NonNullable<ToolItem['diff']>): Record<string, unknown> {
  return {
    type: 'text',
    text: `${d.path}\n${capped(d.newText) ?? ''}`,
    _meta: {
      [BATON_META_KEY]: {
        diff: {
          path: d.path,
          oldText: capped(d.oldText ?? undefined) ?? null,
          newText: capped(d.newText),
        },
      },
    },
  };
}

function toolInput(input: ToolItem['input']): string | undefined {
  if (!input) return undefined;
  return capped(input.command) ?? input.path ?? capped(input.raw);
}

/** The tool call an ACP tool call is, with the permission it asked for (when it did). */
function toolCall(
  t: ToolItem | undefined,
  p: PermissionItem | undefined,
  first: { title?: string; kind?: string; meta?: Record<string, unknown> },
): ToolCallState {
  const title = t?.title ?? p?.title;
  const kind = t?.kind ?? p?.kind;
  const id = (t?.toolCallId ?? p?.toolCallId ?? p?.item) as string;
  const base: ToolCallState = {
    status: 'running',
    toolCallId: id,
    // Set once, when the call starts: what the agent first called it.
    toolName: first.kind ?? 'tool',
    displayName: first.title ?? first.kind ?? 'Tool call',
    invocationMessage: title ?? kind ?? 'Tool call',
    // As the call started; its completion carries all of it.
    _meta: { [BATON_META_KEY]: first.meta ?? {} },
  };
  const input = toolInput(t?.input) ?? toolInput(p?.input);
  if (input !== undefined) base.toolInput = input;
  const content = t ? toolContent(t) : [];
  if (p) {
    // The confirmation the agent asked for (kept once answered: how the call went through it).
    base.confirmationTitle = p.title ?? 'Allow this tool call?';
    base.options = p.options.map((o) => {
      const k = confirmationKind(o.kind);
      return { id: o.optionId, label: o.name, kind: k, group: k === 'approve' ? 0 : 1 };
    });
  }
  if (p && !p.settled) {
    return {
      ...base,
      status: 'pending-confirmation',
      ...(p.content?.length ? { content: toolContent({ content: p.content }) } : {}),
    };
  }
  if (
    p?.settled &&
    !(
      p.settled.outcome === 'selected' && confirmationKind(p.settled.optionKind ?? '') === 'approve'
    )
  ) {
    return {
      ...base,
      status: 'cancelled',
      reason: p.settled.outcome === 'selected' ? 'denied' : 'skipped',
      ...(p.settled.optionId ? { selectedOptionId: p.settled.optionId } : {}),
    };
  }
  if (p?.settled) base.selectedOptionId = p.settled.optionId;
  const st = t?.status;
  if (st === 'completed' || st === 'failed') {
    const failed = st === 'failed';
    return {
      ...base,
      status: 'completed',
      _meta: {
        [BATON_META_KEY]: {
          ...(t?.parentToolCallId ? { parentToolCallId: t.parentToolCallId } : {}),
          ...(t?.subagent ? { subagent: t.subagent } : {}),
        },
      },
      success: !failed,
      pastTenseMessage: title ?? kind ?? 'Tool call',
      content,
      ...(failed
        ? { error: { message: capped(t?.result) ?? capped(t?.output) ?? 'the tool call failed' } }
        : {}),
    };
  }
  return { ...base, content };
}

/** The prompt's text: its text blocks, joined. */
function promptText(item: Extract<TranscriptItem, { type: 'prompt' }>): string {
  return item.content
    .map((b) => (b.type === 'text' ? b.text.text : ''))
    .filter((t) => t.length > 0)
    .join('\n');
}

/** AHP UsageInfo of Baton's usage: token counts, Baton's context and cost under `_meta`. */
function usageInfo(
  u: Extract<TranscriptItem, { type: 'usage' }> | undefined,
  end: Extract<TranscriptItem, { type: 'turn_end' }> | undefined,
): Record<string, unknown> | undefined {
  const tokens = u?.tokens ?? end?.tokens;
  if (!u && !tokens) return undefined;
  const meta = {
    ...(u?.used !== undefined ? { used: u.used } : {}),
    ...(u?.size !== undefined ? { size: u.size } : {}),
    ...(u?.cost ? { cost: u.cost } : {}),
    ...(tokens ? { tokens } : {}),
  };
  return {
    inputTokens: tokens?.input ?? 0,
    outputTokens: tokens?.output ?? 0,
    ...(tokens?.cachedRead !== undefined ? { cacheReadTokens: tokens.cachedRead } : {}),
    _meta: { [BATON_META_KEY]: meta },
  };
}

/**
 * The events without the patches a call gets once it is final for a client: a completed call is
 * final from the first event that follows its completion and is not a patch of it (the spec
 * changes no completed call; a background shell's later output is its background work's).
 */
function finalCalls(events: readonly TranscriptEvent[]): readonly TranscriptEvent[] {
  const closing = new Set<string>();
  const final = new Set<string>();
  let dropped = false;
  const out = events.filter((e) => {
    const id = e.type === 'tool' ? e.toolCallId : undefined;
    for (const c of closing) {
      if (c !== id) {
        closing.delete(c);
        final.add(c);
      }
    }
    if (id === undefined) return true;
    if (final.has(id)) {
      dropped = true;
      return false;
    }
    if (e.type === 'tool' && (e.status === 'completed' || e.status === 'failed')) closing.add(id);
    return true;
  });
  return dropped ? out : events;
}

/** A turn's content from its transcript events (in order; any prefix of them). */
export function turnContent(events: readonly TranscriptEvent[]): TurnContent {
  const items = foldTranscript(finalCalls(events));
  const parts: ContentPart[] = [];
  const tools = new Map<string, { at: number; tool?: ToolItem; permission?: PermissionItem }>();
  const first = new Map<
    string,
    { title?: string; kind?: string; meta?: Record<string, unknown> }
  >();
  for (const e of events) {
    if ((e.type === 'tool' || e.type === 'permission') && e.phase !== 'history') {
      const id = e.toolCallId ?? (e.type === 'permission' ? e.item : '');
      if (first.has(id)) continue;
      const meta =
        e.type === 'tool'
          ? {
              ...(e.parentToolCallId ? { parentToolCallId: e.parentToolCallId } : {}),
              ...(e.subagent ? { subagent: e.subagent } : {}),
            }
          : {};
      first.set(id, { title: e.title, kind: e.kind, meta });
    }
  }
  let prompt: string | undefined;
  let usage: Extract<TranscriptItem, { type: 'usage' }> | undefined;
  let end: Extract<TranscriptItem, { type: 'turn_end' }> | undefined;
  const slot = (id: string) => {
    let s = tools.get(id);
    if (!s) {
      s = { at: parts.length };
      tools.set(id, s);
      parts.push({ kind: 'toolCall', toolCall: undefined as unknown as ToolCallState });
    }
    return s;
  };
  for (const it of items) {
    // The turn's own: not a replayed history, not a model run after its end (a background
    // shell's notification starts one: the turn's usage and answer are those it ended with).
    if (it.phase !== 'turn') continue;
    switch (it.type) {
      case 'prompt':
        prompt ??= promptText(it);
        break;
      case 'message':
        if (it.role === 'user' || it.subagent) break;
        parts.push({
          kind: it.role === 'thought' ? 'reasoning' : 'markdown',
          id: it.item,
          content: it.text + (it.more ? `\n… (truncated, ${it.more} bytes more)` : ''),
        });
        break;
      case 'tool':
        slot(it.toolCallId).tool = it;
        break;
      case 'permission':
        slot(it.toolCallId ?? it.item).permission = it;
        break;
      case 'usage':
        usage = it;
        break;
      case 'turn_end':
        end = it;
        break;
      default:
        break;
    }
  }
  // A call's last patches (its result, its output) may follow its completion: a call whose
  // patch is the last event so far is still running for the client (a completed call is final).
  const last = events.at(-1);
  const open = last?.type === 'tool' ? last.toolCallId : undefined;
  for (const s of tools.values()) {
    const id = s.tool?.toolCallId ?? s.permission?.toolCallId ?? s.permission?.item ?? '';
    let tool = s.tool;
    if (tool && id === open && (tool.status === 'completed' || tool.status === 'failed')) {
      tool = { ...tool, status: 'in_progress' };
    }
    parts[s.at] = {
      kind: 'toolCall',
      toolCall: toolCall(tool, s.permission, first.get(id) ?? {}),
    };
  }
  const u = usageInfo(usage, end);
  return {
    ...(prompt !== undefined ? { prompt } : {}),
    parts,
    ...(u ? { usage: u } : {}),
    ...(end ? { ended: end.stopReason !== undefined ? { stopReason: end.stopReason } : {} } : {}),
  };
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The actions that bring the response parts and usage of the active turn `turnId`, as a client
 * has them (`have`), to `want`: new parts appended in order, text grown by deltas, tool calls
 * moved through the spec's lifecycle (start, ready, confirmation, content, complete).
 */
export function contentActions(
  turnId: string,
  have: readonly unknown[],
  haveUsage: unknown,
  want: TurnContent,
): ChatAction[] {
  const out: ChatAction[] = [];
  const byId = new Map<string, Record<string, unknown>>();
  for (const p of have) {
    const part = p as { kind?: string; id?: string; toolCall?: ToolCallState };
    if (part.kind === 'toolCall' && part.toolCall)
      byId.set(`t:${part.toolCall.toolCallId}`, part.toolCall);
    else if (part.id !== undefined)
      byId.set(`${part.kind}:${part.id}`, part as Record<string, unknown>);
  }
  for (const p of want.parts) {
    if (p.kind !== 'toolCall') {
      const h = byId.get(`${p.kind}:${p.id}`) as MarkdownPart | undefined;
      const type = p.kind === 'markdown' ? 'chat/delta' : 'chat/reasoning';
      if (!h) {
        out.push({
          type: 'chat/responsePart',
          turnId,
          part: { kind: p.kind, id: p.id, content: '' },
        });
        if (p.content) out.push({ type, turnId, partId: p.id, content: p.content });
      } else if (p.content.length > h.content.length && p.content.startsWith(h.content)) {
        out.push({ type, turnId, partId: p.id, content: p.content.slice(h.content.length) });
      }
      continue;
    }
    out.push(
      ...toolActions(
        turnId,
        byId.get(`t:${p.toolCall.toolCallId}`) as ToolCallState | undefined,
        p.toolCall,
      ),
    );
  }
  if (want.usage && !same(want.usage, haveUsage))
    out.push({ type: 'chat/usage', turnId, usage: want.usage });
  return out;
}

function toolActions(
  turnId: string,
  have: ToolCallState | undefined,
  want: ToolCallState,
): ChatAction[] {
  const out: ChatAction[] = [];
  const ids = { turnId, toolCallId: want.toolCallId };
  let status = have?.status;
  if (!have) {
    out.push({
      type: 'chat/toolCallStart',
      ...ids,
      toolName: want.toolName,
      displayName: want.displayName,
      _meta: want._meta,
    });
    status = 'streaming';
  }
  if (
    status === 'completed' ||
    status === 'cancelled' ||
    status === 'pending-result-confirmation'
  ) {
    return out;
  }
  const input = want.toolInput !== undefined ? { toolInput: want.toolInput } : {};
  const ask = (): ChatAction => ({
    type: 'chat/toolCallReady',
    ...ids,
    invocationMessage: want.invocationMessage,
    ...input,
    confirmationTitle: want.confirmationTitle,
    options: want.options,
  });
  if (want.options !== undefined) {
    // A permission the agent asked for: the call awaits confirmation, then is confirmed as answered.
    const asked =
      status === 'pending-confirmation' || (have?.confirmed ?? 'not-needed') !== 'not-needed';
    if (!asked) {
      out.push(ask());
      status = 'pending-confirmation';
    }
    if (want.status === 'pending-confirmation') {
      if (asked && (!same(have?.options, want.options) || have?.toolInput !== want.toolInput)) {
        out.push(ask());
      }
      return out;
    }
    if (status === 'pending-confirmation') {
      const selected = want.selectedOptionId ? { selectedOptionId: want.selectedOptionId } : {};
      if (want.status === 'cancelled') {
        out.push({
          type: 'chat/toolCallConfirmed',
          ...ids,
          approved: false,
          reason: want.reason,
          ...selected,
        });
        return out;
      }
      out.push({
        type: 'chat/toolCallConfirmed',
        ...ids,
        approved: true,
        confirmed: 'user-action',
        ...selected,
      });
      status = 'running';
    }
  }
  // Ready again when the agent told more of its input (a call's first update often has none).
  const toldMore =
    status === 'running' &&
    have?.confirmed === 'not-needed' &&
    (have.toolInput !== want.toolInput || have.invocationMessage !== want.invocationMessage);
  if (status === 'streaming' || toldMore) {
    out.push({
      type: 'chat/toolCallReady',
      ...ids,
      invocationMessage: want.invocationMessage,
      ...input,
      confirmed: 'not-needed',
    });
    status = 'running';
  }
  if (want.status === 'completed') {
    out.push({
      type: 'chat/toolCallComplete',
      ...ids,
      result: {
        success: want.success,
        pastTenseMessage: want.pastTenseMessage,
        content: want.content,
        ...(want.error ? { error: want.error } : {}),
      },
      _meta: want._meta,
    });
    return out;
  }
  const content = (want.content as unknown[] | undefined) ?? [];
  if (content.length > 0 && !same(have?.content ?? [], content)) {
    out.push({ type: 'chat/toolCallContentChanged', ...ids, content });
  }
  return out;
}

/** An ended turn whole, as a snapshot's `turns` holds it (a turn that ended before a subscription). */
export function historyTurn(
  id: string,
  message: Message,
  content: TurnContent,
  state: Turn['state'],
): Turn {
  const responseParts = content.parts.map((p) => {
    if (p.kind !== 'toolCall') return p;
    const tc = p.toolCall;
    if (tc.status === 'completed' || tc.status === 'cancelled') return p;
    // The turn ended before the call did: the spec's reducer cancels it at the turn's end.
    const { content: _c, options: _o, confirmationTitle: _t, ...rest } = tc;
    return { kind: 'toolCall', toolCall: { ...rest, status: 'cancelled', reason: 'skipped' } };
  });
  return { id, message, responseParts, usage: content.usage, state };
}

/** Stream ids (`<ms>-<seq>`) in order. */
export function streamIdAfter(a: string, b: string): boolean {
  const [am, as] = a.split('-').map(Number) as [number, number];
  const [bm, bs] = b.split('-').map(Number) as [number, number];
  return am > bm || (am === bm && as > bs);
}

/**
 * One session's transcript as the host has read it, by turn (Baton prompt id): each stored event
 * taken once, by its stream id, so a page read twice (a catch-up overlapping the live tail)
 * changes nothing.
 */
export class TranscriptTurns {
  private last = '0-0';
  private readonly byTurn = new Map<string, TranscriptEvent[]>();

  /** The cursor: the last stream id taken. */
  get cursor(): string {
    return this.last;
  }

  /** Takes stored events in stream order; returns the turns they touched. */
  add(items: readonly { id: string; event: TranscriptEvent }[]): Set<string> {
    const touched = new Set<string>();
    for (const { id, event } of items) {
      if (!streamIdAfter(id, this.last)) continue;
      this.last = id;
      if (event.turn === null) continue;
      let list = this.byTurn.get(event.turn);
      if (!list) this.byTurn.set(event.turn, (list = []));
      list.push(event);
      touched.add(event.turn);
    }
    return touched;
  }

  /** Moves the cursor on without events (a page of other sessions' entries). */
  skipTo(id: string): void {
    if (streamIdAfter(id, this.last)) this.last = id;
  }

  events(turnId: string): readonly TranscriptEvent[] {
    return this.byTurn.get(turnId) ?? [];
  }

  has(turnId: string): boolean {
    return this.byTurn.has(turnId);
  }

  /** The turns in the order they first appeared. */
  turns(): string[] {
    return [...this.byTurn.keys()];
  }

  /** Forgets a turn the client has whole (an ended one): its events are not needed again. */
  forget(turnId: string): void {
    this.byTurn.delete(turnId);
  }
}
