import type {
  BackgroundWork,
  PermissionRequestView,
  PermissionSettled,
  PromptOrigin,
  QueueView,
  SessionActivityView,
  SessionView,
  TaskView,
  Update,
} from '@baton/protocol';
import { ahpWork } from './background-work';
import {
  confirmationKind,
  contentActions,
  historyTurn,
  turnContent,
  TranscriptTurns,
  type TurnContent,
} from './turn-content';
import type { TranscriptEvent } from '@baton/transcript';
import {
  Status,
  chatReducer,
  sessionReducer,
  type SessionState,
  type ChatAction,
  type ChatState,
  type Message,
  type PendingMessage,
  type ToolCallPart,
  type ToolCallState,
  type Turn,
} from './reducer';
import { BATON_META_KEY, chatUri, sessionUri } from './wire';

/**
 * Pure mapping of Baton's view of a session onto AHP's ChatState and actions. A Baton task is an
 * AHP session (`ahp-session:/<taskId>`), a Baton session one of its chats
 * (`ahp-chat:/<taskId>/<sessionId>`), each id percent-encoded.
 */

/** AHP's MessageKind for Baton's prompt origin. */
export function messageKind(origin: PromptOrigin | undefined): string {
  switch (origin) {
    case 'agent':
      return 'agent';
    case 'workflow':
      return 'automation';
    case 'wakeup':
      return 'systemNotification';
    default:
      return 'user';
  }
}

export const message = (text: string, origin?: PromptOrigin): Message => ({
  text,
  origin: { kind: messageKind(origin) },
});

const pendingOf = new WeakMap<QueueView, PendingMessage[]>();
const queueMetaOf = new WeakMap<QueueView, unknown>();

/**
 * Baton's queue as AHP queued messages: each keyed by the prompt's idempotency key. One array per
 * queue object: every mirror of a view's version holds (and sends) the same message objects, so a
 * large prompt is serialized once per version, not once per subscriber (ws/shared-json.ts).
 */
export function queuedMessages(queue: QueueView | undefined): PendingMessage[] {
  if (!queue) return [];
  let out = pendingOf.get(queue);
  if (!out) {
    out = queue.entries.map((e) => ({ id: e.idempotencyKey, message: message(e.text, e.origin) }));
    pendingOf.set(queue, out);
  }
  return out;
}

/** Baton's queue under `_meta['x-baton']`: without the prompts' text (queuedMessages has it). */
export function queueMeta(queue: QueueView): unknown {
  let out = queueMetaOf.get(queue);
  if (!out) {
    out = {
      autoRun: queue.autoRun,
      capacity: queue.capacity,
      blockedBy: queue.blockedBy,
      entries: queue.entries.map(({ text: _, ...e }) => e),
    };
    queueMetaOf.set(queue, out);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Permission requests as tool calls awaiting confirmation
// ---------------------------------------------------------------------------------------------

/**
 * An open permission request as the AHP tool call that awaits confirmation: its tool call id is
 * the request id (what `chat/toolCallConfirmed` answers), the agent's options are the
 * confirmation options (option id = ACP option id), Baton's own ids under `_meta['x-baton']`.
 */
export interface PendingConfirmation {
  toolCallId: string;
  toolName: string;
  displayName: string;
  invocationMessage: string;
  confirmationTitle: string;
  options: { id: string; label: string; kind: 'approve' | 'deny'; group: number }[];
  _meta: Record<string, unknown>;
}

export function pendingConfirmation(r: PermissionRequestView): PendingConfirmation {
  const what = r.title ?? r.toolKind ?? 'a tool call';
  return {
    toolCallId: r.requestId,
    toolName: r.toolKind ?? 'tool',
    displayName: r.title ?? r.toolKind ?? 'Tool call',
    invocationMessage: `The agent asks permission: ${what}`,
    confirmationTitle: r.title ?? 'Allow this tool call?',
    options: r.options.map((o) => {
      const kind = confirmationKind(o.kind);
      // Approvals first, denials after a divider (the spec's option groups).
      return { id: o.optionId, label: o.name, kind, group: kind === 'approve' ? 0 : 1 };
    }),
    _meta: {
      [BATON_META_KEY]: {
        requestId: r.requestId,
        executionId: r.executionId,
        ...(r.toolCallId !== undefined ? { toolCallId: r.toolCallId } : {}),
        ...(r.toolKind !== undefined ? { toolKind: r.toolKind } : {}),
      },
    },
  };
}

const SETTLED_BY: Record<string, string> = {
  timeout: 'nobody answered in time',
  turn_cancelled: 'the turn was cancelled',
  execution_ended: "the agent's execution ended",
};

/**
 * How a tool call that awaited confirmation leaves it, once Baton's request is no longer open: the
 * spec's `chat/toolCallConfirmed` — approved (`running`) for an allow option a person chose,
 * denied for a reject option (a person's, or the timeout's), skipped (`cancelled`) for a request
 * cancelled (turn cancel, execution end) or one whose settling this host did not see.
 */
export function settledAction(
  turnId: string,
  tc: ToolCallState,
  settled: PermissionSettled | undefined,
): ChatAction {
  const head = { type: 'chat/toolCallConfirmed', turnId, toolCallId: tc.toolCallId };
  const why = settled?.by !== undefined ? SETTLED_BY[settled.by] : undefined;
  if (settled?.outcome === 'selected' && settled.optionId !== undefined) {
    const options = (tc.options ?? []) as { id: string; kind: string }[];
    const chosen = options.find((o) => o.id === settled.optionId);
    if (chosen?.kind === 'approve') {
      return {
        ...head,
        approved: true,
        confirmed: settled.by === 'person' ? 'user-action' : 'setting',
        selectedOptionId: chosen.id,
      };
    }
    return {
      ...head,
      approved: false,
      reason: 'denied',
      selectedOptionId: settled.optionId,
      ...(why ? { reasonMessage: why } : {}),
    };
  }
  return {
    ...head,
    approved: false,
    reason: 'skipped',
    reasonMessage: why ?? (settled ? 'the request was cancelled' : 'the request is no longer open'),
  };
}

/** What the chat should show, from Baton's view of the session (and what the host learnt of its turns). */
export interface ChatTarget {
  /** The running turn: Baton's running admission generation, under the turn id the host gave it. */
  activeTurn: { id: string; message: Message; key?: string; content?: TurnContent } | null;
  /** The last of the conversation of the client's turn that ends now (sent before its end). */
  endingContent?: TurnContent;
  /** How a turn that no longer runs ended. */
  ended: (turnId: string) => { state: Turn['state']; error?: unknown };
  queued: PendingMessage[];
  /** Baton's steer in flight (a prompt delivered into the running turn), if any. */
  steering?: PendingMessage | null;
  /** Absent while the session has published no inventory. */
  work: BackgroundWork[] | undefined;
  /** The open permission requests, as tool calls of the running turn awaiting confirmation. */
  confirmations?: PendingConfirmation[];
  /** How a request that is no longer open was settled, when the host saw it. */
  settled?: (requestId: string) => PermissionSettled | undefined;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Messages compare by their text as a string, never serialized: a queued prompt may be 100 kB,
 * and every mirror compares the queue at every new version of the view.
 */
function sameMessage(a: Message, b: Message): boolean {
  if (a === b) return true;
  if (a.text !== b.text) return false;
  const { text: _a, ...restA } = a;
  const { text: _b, ...restB } = b;
  return same(restA, restB);
}

/** Settled permission requests a chat mirror remembers (a late answer is told how it ended). */
const SETTLED_KEPT = 64;

/** How long a turn's start or end waits for the transcript at most. */
const TRANSCRIPT_GRACE_MS = 1_500;

/**
 * The AHP actions that take a client holding `state` to `target`, in an order a client's reducer
 * folds into exactly the target (turn ended, then the next one started, then the queue, then
 * background work). `now` (ISO 8601) stamps turn starts and durations.
 */
export function chatActions(state: ChatState, target: ChatTarget, now: string): ChatAction[] {
  const out: ChatAction[] = [];
  let s = state;
  const emit = (a: ChatAction) => {
    out.push(a);
    s = chatReducer(s, a);
  };
  const active = s.activeTurn;
  if (active && active.id !== target.activeTurn?.id) {
    if (target.endingContent) {
      for (const a of contentActions(
        active.id,
        active.responseParts,
        active.usage,
        target.endingContent,
      ))
        emit(a);
    }
    const duration = Math.max(0, Date.parse(now) - Date.parse(active.startedAt)) || 0;
    const how = target.ended(active.id);
    if (how.state === 'error') {
      emit({
        type: 'chat/error',
        turnId: active.id,
        duration,
        ...(how.error !== undefined ? { error: how.error } : {}),
      });
    } else {
      emit({
        type: how.state === 'cancelled' ? 'chat/turnCancelled' : 'chat/turnComplete',
        turnId: active.id,
        duration,
      });
    }
  }
  const t = target.activeTurn;
  if (t && s.activeTurn?.id !== t.id) {
    // A queued message, or the steering message, that becomes the turn: the spec's reducer
    // removes it from there by queuedMessageId.
    const key = t.key ?? t.id;
    const fromQueue = s.queuedMessages?.some((m) => m.id === key) || s.steeringMessage?.id === key;
    emit({
      type: 'chat/turnStarted',
      turnId: t.id,
      startedAt: now,
      message: t.message,
      ...(fromQueue ? { queuedMessageId: key } : {}),
    });
  }
  // The conversation of the running turn, as the transcript has it so far.
  if (t?.content && s.activeTurn?.id === t.id) {
    const at = s.activeTurn;
    for (const a of contentActions(t.id, at.responseParts, at.usage, t.content)) emit(a);
  }
  // Permission requests: a tool call of the running turn awaiting confirmation while open; one
  // no longer open leaves pending-confirmation as it was settled (a turn's end cancels the rest).
  const turn = s.activeTurn;
  if (turn) {
    const shown = new Set(
      (t?.content?.parts ?? []).flatMap((p) =>
        p.kind === 'toolCall' ? [p.toolCall.toolCallId] : [],
      ),
    );
    const open = new Map(
      (target.confirmations ?? [])
        .filter((c) => {
          const acp = (c._meta[BATON_META_KEY] as { toolCallId?: string }).toolCallId;
          // The transcript shows this request on the agent's own tool call (its confirmation).
          return (
            acp === undefined ||
            !shown.has(acp) ||
            turn?.responseParts.some(
              (p) => (p as ToolCallPart).toolCall?.toolCallId === c.toolCallId,
            )
          );
        })
        .map((c) => [c.toolCallId, c]),
    );
    for (const p of turn.responseParts) {
      const tc = (p as Partial<ToolCallPart>).toolCall;
      if (p && (p as ToolCallPart).kind === 'toolCall' && tc) {
        // Only a request's own call (the transcript's calls settle by the transcript).
        const own = (tc._meta as Record<string, { requestId?: string }> | undefined)?.[
          BATON_META_KEY
        ]?.requestId;
        if (tc.status === 'pending-confirmation' && own !== undefined && !open.has(tc.toolCallId)) {
          emit(settledAction(turn.id, tc, target.settled?.(tc.toolCallId)));
        }
      }
    }
    for (const c of open.values()) {
      const known = turn.responseParts.some(
        (p) => (p as ToolCallPart).toolCall?.toolCallId === c.toolCallId,
      );
      if (known) continue;
      emit({
        type: 'chat/toolCallStart',
        turnId: turn.id,
        toolCallId: c.toolCallId,
        toolName: c.toolName,
        displayName: c.displayName,
        _meta: c._meta,
      });
      emit({
        type: 'chat/toolCallReady',
        turnId: turn.id,
        toolCallId: c.toolCallId,
        invocationMessage: c.invocationMessage,
        confirmationTitle: c.confirmationTitle,
        options: c.options,
      });
    }
  }
  // The steering message: removed when Baton's steer is gone, set when it comes (or changes).
  const steer = target.steering ?? null;
  const hadSteer = s.steeringMessage;
  if (hadSteer && hadSteer.id !== steer?.id) {
    emit({ type: 'chat/pendingMessageRemoved', kind: 'steering', id: hadSteer.id });
  }
  if (
    steer &&
    (s.steeringMessage?.id !== steer.id ||
      (s.steeringMessage.message !== steer.message &&
        !sameMessage(s.steeringMessage.message, steer.message)))
  ) {
    emit({
      type: 'chat/pendingMessageSet',
      kind: 'steering',
      id: steer.id,
      message: steer.message,
    });
  }
  // The queue: what left it, what came or changed, then its order.
  const want = new Map(target.queued.map((m) => [m.id, m]));
  for (const m of s.queuedMessages ?? []) {
    if (!want.has(m.id)) emit({ type: 'chat/pendingMessageRemoved', kind: 'queued', id: m.id });
  }
  for (const m of target.queued) {
    const had = s.queuedMessages?.find((x) => x.id === m.id);
    if (!had || !sameMessage(had.message, m.message)) {
      emit({ type: 'chat/pendingMessageSet', kind: 'queued', id: m.id, message: m.message });
    }
  }
  const order = target.queued.map((m) => m.id);
  if (
    s.queuedMessages &&
    !same(
      s.queuedMessages.map((m) => m.id),
      order,
    )
  ) {
    emit({ type: 'chat/queuedMessagesReordered', order });
  }
  // Background work: complete entries, Removed only for what the client has.
  if (target.work) {
    const had = new Map((s.backgroundWork ?? []).map((w) => [w.id, w]));
    for (const w of target.work) {
      const h = had.get(w.id);
      if (!h || !same(h, w)) emit({ type: 'chat/backgroundWorkSet', work: w });
    }
    const keep = new Set(target.work.map((w) => w.id));
    for (const id of had.keys()) {
      if (!keep.has(id)) emit({ type: 'chat/backgroundWorkRemoved', id });
    }
  }
  return out;
}

/** The empty chat a client starts from, before the actions that bring it to Baton's view. */
export function emptyChat(resource: string, title: string, modifiedAt: string): ChatState {
  return { resource, title, status: Status.Idle, modifiedAt, turns: [] };
}

/**
 * What one AHP client has of one Baton session: its ChatState (which only ever moves by the
 * actions the client is sent, folded through AHP's reducer) and what the host learnt of Baton's
 * turns from the task's updates — which idempotency key (the AHP turn id) runs under which
 * admission generation, the text of queued prompts, how a turn ended.
 */
export class ChatMirror {
  private chat: ChatState;
  private activity: SessionActivityView | undefined;
  private queue: QueueView | undefined;
  private work: BackgroundWork[] | undefined;
  private permissions: PermissionRequestView[] = [];
  /** How requests that left the open list were settled (the most recent ones). */
  private readonly settled = new Map<string, PermissionSettled>();
  private deleted = false;
  /** The AHP turn id of each admission generation (the prompt's idempotency key when known). */
  private readonly turnOfGen = new Map<number, string>();
  private readonly keyOfGen = new Map<number, string>();
  /** The Baton prompt id of each admission generation (the AHP turn id), and its key. */
  private readonly promptOfGen = new Map<number, string>();
  private readonly keyOfPrompt = new Map<string, string>();
  /** The session's transcript as read so far, by turn. */
  readonly transcript = new TranscriptTurns();
  /** Since when a turn's start or end waits for the transcript (its prompt, its end). */
  private readonly waiting = new Map<string, number>();
  /** Agent tool call ids of permission requests, by request id. */
  private readonly acpOfRequest = new Map<string, string>();
  private fed = false;
  /** The transcript was read up to the subscription (seedHistory). */
  private caught = false;
  private holding = false;
  private firstGen: number | null | undefined;
  /** The content of the turn that ends now, sent before its end. */
  private tail: { id: string; content: TurnContent } | undefined;
  private readonly texts = new Map<string, Message>();
  private readonly endings = new Map<string, { state: Turn['state']; error?: unknown }>();
  /** Baton's steer, as its decision said: the prompt's idempotency key and admission generation. */
  private steer: { key: string; gen: number } | null = null;
  readonly resource: string;

  constructor(
    readonly taskId: string,
    readonly sessionId: string,
    now: string,
  ) {
    this.resource = chatUri(taskId, sessionId);
    this.chat = emptyChat(this.resource, sessionId, now);
  }

  /** The client's ChatState, with Baton's own under `_meta['x-baton']`. */
  state(): ChatState {
    return {
      ...this.chat,
      _meta: {
        [BATON_META_KEY]: {
          taskId: this.taskId,
          sessionId: this.sessionId,
          ...(this.activity ? { activity: this.activity } : {}),
          ...(this.queue ? { queue: queueMeta(this.queue) } : {}),
        },
      },
    };
  }

  /** The AHP part of the state only (what a client folds from the actions). */
  get ahp(): ChatState {
    return this.chat;
  }

  /** What the host learnt of Baton's turns (small): kept with the client's replay window. */
  knowledge(): string {
    return JSON.stringify({
      turnOfGen: [...this.turnOfGen],
      keyOfGen: [...this.keyOfGen],
      promptOfGen: [...this.promptOfGen],
      keyOfPrompt: [...this.keyOfPrompt],
      endings: [...this.endings],
      ...(this.steer ? { steer: this.steer } : {}),
      ...(this.settled.size > 0 ? { settled: [...this.settled.values()] } : {}),
    });
  }

  /**
   * Continues from what another connection of the client had: the client's chat state (its
   * snapshot with the actions it was sent folded in) and what that host knew.
   */
  restore(state: ChatState, knowledge: string | undefined): void {
    this.chat = state;
    for (const m of [
      ...(state.queuedMessages ?? []),
      ...(state.activeTurn ? [{ id: state.activeTurn.id, message: state.activeTurn.message }] : []),
      ...(state.steeringMessage ? [state.steeringMessage] : []),
    ]) {
      this.texts.set(m.id, m.message);
    }
    if (!knowledge) return;
    const r = JSON.parse(knowledge) as {
      turnOfGen: [number, string][];
      keyOfGen: [number, string][];
      promptOfGen?: [number, string][];
      keyOfPrompt?: [string, string][];
      endings: [string, { state: Turn['state']; error?: unknown }][];
      steer?: { key: string; gen: number };
      settled?: PermissionSettled[];
    };
    this.steer = r.steer ?? null;
    for (const x of r.settled ?? []) this.settle(x);
    for (const [k, v] of r.turnOfGen) this.turnOfGen.set(k, v);
    for (const [k, v] of r.keyOfGen) this.keyOfGen.set(k, v);
    for (const [k, v] of r.promptOfGen ?? []) this.promptOfGen.set(k, v);
    for (const [k, v] of r.keyOfPrompt ?? []) this.keyOfPrompt.set(k, v);
    for (const [k, v] of r.endings) this.endings.set(k, v);
  }

  /** The Baton prompt queued under an idempotency key (an AHP queued message id). */
  promptIdOf(key: string): string | undefined {
    return this.queue?.entries.find((e) => e.idempotencyKey === key)?.promptId;
  }

  get runningGeneration(): number | null {
    return this.activity?.runningGeneration ?? null;
  }

  /** Folds an action the host sent on its own (a dispatched action's echo). */
  fold(a: ChatAction): void {
    this.chat = chatReducer(this.chat, a);
  }

  /**
   * Baton admitted the prompt under `key` as a steer of generation `gen` (a dispatched steering
   * message's decision, which may come before the update that says so).
   */
  noteSteer(key: string, gen: number): void {
    if (!this.steer || this.steer.gen <= gen) {
      this.steer = { key, gen };
      this.keyOfGen.set(gen, key);
    }
  }

  /** Remembers a message this host was given for an idempotency key (a dispatched turn). */
  remember(key: string, m: Message): void {
    this.texts.set(key, m);
  }

  /** Takes Baton's current view of the session; returns the actions it means for the client. */
  sync(session: SessionView | undefined, now: string): ChatAction[] {
    if (session) {
      if (this.firstGen === undefined) this.firstGen = session.activity.runningGeneration;
      this.activity = session.activity;
      this.queue = session.queue;
      this.work = session.backgroundWork;
      this.permissions = session.permissions ?? [];
      // Baton has the session's inventory (possibly empty): a snapshot carries it, [] included.
      // (Only ever before a snapshot: once the client has one, the list is present already.)
      if (!this.chat.backgroundWork) this.chat = { ...this.chat, backgroundWork: [] };
      for (const e of session.queue.entries) {
        this.texts.set(e.idempotencyKey, message(e.text, e.origin));
      }
    }
    return this.move(now);
  }

  /** The actions one group of the task's updates means for this chat. */
  applyGroup(updates: readonly Update[], now: string): ChatAction[] {
    const extra: ChatAction[] = [];
    let touched = false;
    for (const u of updates) {
      if (!('sessionId' in u.data) || u.data.sessionId !== this.sessionId) continue;
      touched = true;
      switch (u.type) {
        case 'chat/backgroundWorkSet': {
          const list = this.work ?? [];
          const i = list.findIndex((w) => w.id === u.data.work.id);
          this.work =
            i < 0 ? [...list, u.data.work] : list.map((w, j) => (j === i ? u.data.work : w));
          break;
        }
        case 'chat/backgroundWorkRemoved':
          if (this.work) this.work = this.work.filter((w) => w.id !== u.data.id);
          break;
        case 'session.activity': {
          const { sessionId: _, ...activity } = u.data;
          if (!this.activity || !same(activity, this.activity)) {
            extra.push({ type: 'x-baton/sessionActivity', activity });
          }
          this.activity = activity;
          break;
        }
        case 'session.queue': {
          // The update's own object (shared by every subscriber): its messages are built once.
          const queue: QueueView = u.data;
          extra.push({ type: 'x-baton/queue', queue: queueMeta(queue) });
          this.queue = queue;
          for (const e of queue.entries) {
            this.texts.set(e.idempotencyKey, message(e.text, e.origin));
          }
          break;
        }
        case 'prompt.decided': {
          const d = u.data.decision;
          if (d.outcome !== 'admitted' && this.steer?.key === u.data.idempotencyKey) {
            // Queued again, cancelled, failed: no longer a steer.
            this.steer = null;
          }
          this.keyOfPrompt.set(u.data.promptId, u.data.idempotencyKey);
          if (d.outcome === 'admitted') {
            this.keyOfGen.set(d.admissionGeneration, u.data.idempotencyKey);
            this.promptOfGen.set(d.admissionGeneration, u.data.promptId);
            if (d.mode === 'steer') this.noteSteer(u.data.idempotencyKey, d.admissionGeneration);
          } else if (d.outcome === 'failed') {
            this.endings.set(u.data.idempotencyKey, {
              state: 'error',
              error: { errorType: d.reason, message: d.message },
            });
          } else if (d.outcome === 'cancelled') {
            this.endings.set(u.data.idempotencyKey, { state: 'cancelled' });
          }
          break;
        }
        case 'session.permissions':
          this.permissions = u.data.requests;
          for (const r of this.permissions) {
            if (r.toolCallId !== undefined) this.acpOfRequest.set(r.requestId, r.toolCallId);
          }
          while (this.acpOfRequest.size > SETTLED_KEPT * 2) {
            this.acpOfRequest.delete(this.acpOfRequest.keys().next().value as string);
          }
          for (const r of u.data.resolved ?? []) this.settle(r);
          break;
        case 'session.deleted':
          this.deleted = true;
          extra.push({ type: 'x-baton/sessionDeleted' });
          break;
        default:
          break;
      }
    }
    if (!touched) return [];
    const moved = this.move(now);
    return [...moved, ...extra];
  }

  /** The open permission request behind a tool call of the chat (its id is the request's). */
  permissionOf(toolCallId: string): PermissionRequestView | undefined {
    return (
      this.permissions.find((r) => r.requestId === toolCallId) ??
      this.permissions.find((r) => r.toolCallId === toolCallId)
    );
  }

  /** How a request that is no longer open was settled, if the host saw it. */
  settledOf(toolCallId: string): PermissionSettled | undefined {
    const direct = this.settled.get(toolCallId);
    if (direct) return direct;
    for (const [req, acp] of this.acpOfRequest) {
      if (acp === toolCallId) return this.settled.get(req);
    }
    return undefined;
  }

  private settle(r: PermissionSettled): void {
    this.settled.delete(r.requestId);
    this.settled.set(r.requestId, r);
    if (this.settled.size > SETTLED_KEPT) {
      this.settled.delete(this.settled.keys().next().value as string);
    }
  }

  private move(now: string): ChatAction[] {
    const actions = chatActions(this.chat, this.target(now), now);
    for (const a of actions) {
      this.chat = chatReducer(this.chat, a);
      // The client has the ended turn whole: its events are not needed again.
      if (
        a.type === 'chat/turnComplete' ||
        a.type === 'chat/turnCancelled' ||
        a.type === 'chat/error'
      ) {
        this.transcript.forget(a.turnId as string);
      }
    }
    return actions;
  }

  /**
   * Follows the session's transcript from now on: a turn's start waits (a while at most) for
   * its prompt id and text, its end for the transcript's end of it, so the turn a client is
   * sent is the conversation whole.
   */
  followTranscript(): void {
    this.fed = true;
  }

  /** Whether the chat waits for the transcript (the host should look again shortly). */
  get waitingForTranscript(): boolean {
    return this.holding;
  }

  /** Events of the session's transcript (stream order); returns the actions they mean. */
  applyTranscript(
    items: readonly { id: string; event: TranscriptEvent }[],
    now: string,
  ): ChatAction[] {
    const touched = this.transcript.add(items);
    for (const t of touched) {
      if (this.chat.turns.some((x) => x.id === t)) this.transcript.forget(t);
    }
    return touched.size > 0 || this.holding ? this.move(now) : [];
  }

  /** Looks again at what waited for the transcript (the host's timer). */
  recheck(now: string): ChatAction[] {
    return this.move(now);
  }

  /**
   * The turns the transcript has that ended before the client subscribed, put into the chat
   * (only before its snapshot): under their prompt ids, with their content.
   */
  seedHistory(now: string, history = true): void {
    this.caught = true;
    if (!history) return;
    const running = this.target(now).activeTurn?.id;
    const turns = [...this.chat.turns];
    for (const id of this.transcript.turns()) {
      if (id === running || turns.some((t) => t.id === id)) continue;
      const events = this.transcript.events(id);
      const content = turnContent(events);
      const key = this.keyOfPrompt.get(id) ?? id;
      const ending = this.endings.get(key);
      const state: Turn['state'] =
        ending?.state ?? (content.ended?.stopReason === 'cancelled' ? 'cancelled' : 'complete');
      const text = content.prompt ?? this.texts.get(key)?.text ?? '';
      turns.push(historyTurn(id, message(text), content, state));
      this.transcript.forget(id);
    }
    this.chat = { ...this.chat, turns };
  }

  /**
   * The open requests as tool calls of their own, but for those the transcript shows on the
   * agent's tool call (its confirmation): while following the transcript, a request naming the
   * agent's call waits a while for it there.
   */
  private confirmations(content: TurnContent | undefined, now: string): PendingConfirmation[] {
    const shown = new Set(
      (content?.parts ?? []).flatMap((p) =>
        p.kind === 'toolCall' && p.toolCall.options !== undefined ? [p.toolCall.toolCallId] : [],
      ),
    );
    return this.permissions
      .filter(
        (r) =>
          !(
            this.fed &&
            r.toolCallId !== undefined &&
            (shown.has(r.toolCallId) || this.wait(`perm:${r.requestId}`, now))
          ),
      )
      .map(pendingConfirmation);
  }

  /** The stop reason the transcript gives a turn, when it has its end. */
  private endedBy(turnId: string): string | undefined {
    const end = this.transcript.events(turnId).find((e) => e.type === 'turn_end');
    return end?.type === 'turn_end' ? end.stopReason : undefined;
  }

  /** The last turn the transcript has that has not ended: the one a late subscriber finds running. */
  private openPrompt(): string | undefined {
    const ids = this.transcript.turns();
    for (let i = ids.length - 1; i >= 0; i--) {
      const ev = this.transcript.events(ids[i] as string);
      if (ev.some((e) => e.type === 'turn_end')) continue;
      if (ev.some((e) => e.type === 'prompt')) return ids[i];
    }
    return undefined;
  }

  /** Whether a wait for the transcript under `k` is still within its grace. */
  private wait(k: string, now: string): boolean {
    const at = Date.parse(now);
    const since = this.waiting.get(k);
    if (since === undefined) {
      if (this.waiting.size > 64) this.waiting.clear();
      this.waiting.set(k, at);
      this.holding = true;
      return true;
    }
    if (at - since < TRANSCRIPT_GRACE_MS) {
      this.holding = true;
      return true;
    }
    return false;
  }

  /**
   * The steering message: Baton's steer while it is delivered into a running turn of an earlier
   * generation. When that turn ends the steer carries on as the turn (its turnStarted removes the
   * steering message by queuedMessageId); with no turn running it is gone.
   */
  private steering(running: number | null): PendingMessage | null {
    const st = this.steer;
    if (!st || running === null || running >= st.gen) return null;
    return { id: st.key, message: this.texts.get(st.key) ?? message('') };
  }

  private target(now: string): ChatTarget {
    const a = this.activity;
    const gen = this.deleted ? null : (a?.runningGeneration ?? null);
    this.holding = false;
    let activeTurn: ChatTarget['activeTurn'] = null;
    if (gen !== null) {
      let id =
        this.turnOfGen.get(gen) ??
        this.promptOfGen.get(gen) ??
        (gen === this.firstGen ? this.openPrompt() : undefined);
      // The prompt id comes with Baton's decision: a turn waits for it a while.
      // (A turn that ran before the subscription has had its decision: it is the transcript's.)
      const waitForId = !id && this.fed && gen !== this.firstGen && this.wait(`gen:${gen}`, now);
      // A turn that ran before the subscription is known once the transcript is read.
      const unread = !id && this.fed && gen === this.firstGen && !this.caught;
      if (!waitForId && !unread) {
        id ??= this.keyOfGen.get(gen) ?? `${this.sessionId}#${gen}`;
        this.turnOfGen.set(gen, id);
        const key = this.keyOfPrompt.get(id) ?? this.keyOfGen.get(gen) ?? id;
        const content = this.transcript.has(id)
          ? turnContent(this.transcript.events(id))
          : undefined;
        const known = this.texts.get(key);
        const text =
          content?.prompt !== undefined
            ? { ...(known ?? message('')), text: content.prompt }
            : known;
        // A prompt sent elsewhere: its text is the transcript's (a while at most).
        const waitForText =
          !text &&
          this.fed &&
          gen !== this.firstGen &&
          this.chat.activeTurn?.id !== id &&
          this.wait(`text:${id}`, now);
        if (!waitForText)
          activeTurn = { id, key, message: text ?? message(''), ...(content ? { content } : {}) };
      }
    }
    // A turn ends for the client once the transcript has all of it (its turn_end), a while at most.
    const had = this.chat.activeTurn;
    if (had && had.id !== activeTurn?.id && this.fed && !this.deleted) {
      const ev = this.transcript.events(had.id);
      const ending = this.endings.get(this.keyOfPrompt.get(had.id) ?? had.id);
      // (The transcript is written a little after the facts: a fast turn has none of it yet.)
      if (
        !ev.some((e) => e.type === 'turn_end') &&
        ending === undefined &&
        this.wait(`end:${had.id}`, now)
      ) {
        activeTurn = {
          id: had.id,
          message: had.message,
          ...(ev.length > 0 ? { content: turnContent(ev) } : {}),
        };
      } else if (ev.length > 0) {
        // The last of its content goes before its end.
        this.tail = { id: had.id, content: turnContent(ev) };
      }
    }
    const endingContent = this.tail?.id === had?.id ? this.tail?.content : undefined;
    this.tail = undefined;
    return {
      activeTurn,
      ...(endingContent ? { endingContent } : {}),
      ended: (turnId) => {
        const key = this.keyOfPrompt.get(turnId) ?? turnId;
        const known = this.endings.get(turnId) ?? this.endings.get(key);
        if (known) return known;
        if (a?.state === 'failed') {
          return {
            state: 'error',
            ...(a.attention
              ? { error: { errorType: a.attention.reason, message: a.attention.message } }
              : {}),
          };
        }
        if (a?.state === 'cancelled') return { state: 'cancelled' };
        if (this.endedBy(turnId) === 'cancelled') return { state: 'cancelled' };
        // Cancelled before the agent had it: Baton gives the prompt back to the queue.
        if (this.queue?.entries.some((e) => e.idempotencyKey === key)) {
          return { state: 'cancelled' };
        }
        return { state: 'complete' };
      },
      queued: this.deleted ? [] : queuedMessages(this.queue),
      steering: this.steering(gen),
      work: this.deleted ? (this.work ? [] : undefined) : this.work?.map(ahpWork),
      confirmations: this.deleted ? [] : this.confirmations(activeTurn?.content, now),
      settled: (id) => this.settled.get(id),
    };
  }
}

// ---------------------------------------------------------------------------------------------
// Root and session channels
// ---------------------------------------------------------------------------------------------

/** RootState.agents: one agent per execution profile the operator configured. */
export function rootState(profiles: Readonly<Record<string, { description?: string }>>) {
  return {
    agents: Object.entries(profiles)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, p]) => ({
        provider: name,
        displayName: name,
        description: p.description ?? '',
        models: [],
      })),
  };
}

/**
 * The status bits of a chat summary, derived from Baton's activity as AHP derives them: a session
 * whose agent waits for a person's answer (a tool call awaiting confirmation) needs input — also
 * when the request came outside a turn, which the chat's own status cannot show.
 */
export function chatSummaryStatus(
  a: SessionActivityView | undefined,
  permissions: readonly PermissionRequestView[] = [],
): number {
  if (!a) return Status.Idle;
  // A view written before `waitingForPerson` existed: its open requests, as it was then read.
  if (a.waitingForPerson ?? (a.runningGeneration !== null && permissions.length > 0))
    return Status.InputNeeded;
  if (a.runningGeneration !== null) return Status.InProgress;
  if (a.state === 'failed') return Status.Error;
  return Status.Idle;
}

export function chatSummary(taskId: string, s: SessionView, modifiedAt: string) {
  return {
    resource: chatUri(taskId, s.sessionId),
    title: s.sessionId,
    status: chatSummaryStatus(s.activity, s.permissions),
    modifiedAt,
  };
}

/** A session's status: its chats' aggregate (Error or InputNeeded promoted, else the busiest). */
export function sessionStatus(view: TaskView): number {
  const bits = view.sessions.map((s) => chatSummaryStatus(s.activity, s.permissions));
  if (bits.includes(Status.Error)) return Status.Error;
  if (bits.includes(Status.InputNeeded)) return Status.InputNeeded;
  if (bits.includes(Status.InProgress)) return Status.InProgress;
  return Status.Idle;
}

/**
 * A task as AHP's SessionSummary. The spec types its `createdAt` and `modifiedAt` as numbers
 * (milliseconds since the epoch), unlike the chat's ISO `modifiedAt`; Baton's view keeps no
 * timestamps, so both are the time of the read.
 */
export function sessionSummary(taskId: string, view: TaskView, modifiedAt: string) {
  const at = Date.parse(modifiedAt);
  return {
    resource: sessionUri(taskId),
    provider: 'baton',
    title: taskId,
    status: sessionStatus(view) | (view.status === 'archived' ? Status.IsArchived : 0),
    createdAt: at,
    modifiedAt: at,
  };
}

export function sessionState(taskId: string, view: TaskView, modifiedAt: string) {
  const {
    resource: _,
    createdAt: __,
    modifiedAt: ___,
    ...meta
  } = sessionSummary(taskId, view, modifiedAt);
  const chats = view.sessions.map((s) => chatSummary(taskId, s, modifiedAt));
  return {
    ...meta,
    lifecycle: 'ready',
    activeClients: [],
    chats,
    ...(chats[0] ? { defaultChat: chats[0].resource } : {}),
    _meta: { [BATON_META_KEY]: { taskId, status: view.status } },
  };
}

/**
 * The actions that take a session's chat catalog from what the client has to Baton's sessions:
 * chatAdded for a new chat, chatRemoved for a deleted one, chatUpdated when its status or title
 * changed.
 */
export function sessionActions(
  have: SessionState,
  taskId: string,
  view: TaskView,
  now: string,
): ChatAction[] {
  const out: ChatAction[] = [];
  const want = view.sessions.map((s) => chatSummary(taskId, s, now));
  const keep = new Set(want.map((c) => c.resource));
  for (const c of have.chats) {
    if (!keep.has(c.resource)) out.push({ type: 'session/chatRemoved', chat: c.resource });
  }
  for (const c of want) {
    const h = have.chats.find((x) => x.resource === c.resource);
    if (!h) out.push({ type: 'session/chatAdded', summary: c });
    else if (h.status !== c.status || h.title !== c.title) {
      out.push({
        type: 'session/chatUpdated',
        chat: c.resource,
        changes: { status: c.status, title: c.title, modifiedAt: now },
      });
    }
  }
  // The default chat is the first one, while it exists; none when there is none.
  if (have.defaultChat === undefined || !keep.has(have.defaultChat as string)) {
    const next = want[0]?.resource;
    if (next !== have.defaultChat)
      out.push({ type: 'session/defaultChatChanged', defaultChat: next });
  }
  return out;
}

/** What one client has of one AHP session (a Baton task): its SessionState, moved by actions only. */
export class SessionMirror {
  private state_: SessionState;
  readonly resource: string;

  constructor(
    readonly taskId: string,
    view: TaskView,
    now: string,
    restored?: SessionState,
  ) {
    this.resource = sessionUri(taskId);
    this.state_ = restored ?? (sessionState(taskId, view, now) as SessionState);
  }

  get state(): SessionState {
    return this.state_;
  }

  sync(view: TaskView, now: string): ChatAction[] {
    const actions = sessionActions(this.state_, this.taskId, view, now);
    for (const a of actions) this.state_ = sessionReducer(this.state_, a);
    return actions;
  }
}
