import {
  AHP_ROOT,
  AhpDispatchedMessage,
  AhpToolCallConfirmed,
  CLIENT_DISPATCHABLE,
  chatReducer,
  confirmationKind,
  message,
  type AhpDispatchParams,
  type ChatAction,
  type ChatMirror,
  type ChatState,
  type Message,
  type ToolCallPart,
} from '@baton/ahp';
import { Id, type PermissionSettled } from '@baton/protocol';
import { allows } from '../auth/auth';
import type { QueueCommand } from '../commands/commands';
import { toWireError } from '../errors';
import type { AhpConnection } from './ahp-connection';
import type { Envelope } from './host-log';

/**
 * A client's `dispatchAction`: the actions Baton takes (prompts, cancels, queue removals,
 * permission answers) become its commands; each is echoed or rejected the spec's way.
 */

/** How a settled request ended, in words (a second answer's rejection says it). */
export function settledWords(s: PermissionSettled | undefined): string {
  if (!s) return '';
  const by = s.by ? ` by ${s.by === 'person' ? 'a person' : s.by.replace('_', ' ')}` : '';
  return s.outcome === 'selected' ? ` with option ${s.optionId ?? '?'}${by}` : ` (cancelled${by})`;
}

/** Baton's decision on a dispatched prompt (PromptOutcome, read loosely). */
export interface Decision {
  outcome: string;
  message?: string;
  reason?: string;
  mode?: string;
  admissionGeneration?: number;
}

/** A client's action on a chat channel: where it came from and what it acts on. */
interface Dispatched {
  conn: AhpConnection;
  channel: string;
  mirror: ChatMirror;
  action: ChatAction;
  origin: NonNullable<Envelope['origin']>;
}

/** Rejects the action, saying why. */
const reject = ({ conn, channel, action, origin }: Dispatched, reason: string): void =>
  conn.reject(channel, action, origin, reason);

/** Whether the chat has a turn of this id, running or done. */
const hasTurn = ({ ahp }: ChatMirror, id: string): boolean =>
  ahp.activeTurn?.id === id || ahp.turns.some((t) => t.id === id);

/**
 * dispatchAction: a client's action, answered the spec's way — echoed (with its origin) when
 * Baton takes it, echoed with a `rejectionReason` when it does not. A user message is a Baton
 * prompt submission under the turn's (or queued message's) id as idempotency key, through
 * admission.
 */
export async function dispatch(conn: AhpConnection, p: AhpDispatchParams): Promise<void> {
  const clientId = conn.clientId ?? 'unknown';
  const origin = { clientId, clientSeq: p.clientSeq };
  const action = p.action as ChatAction;
  if (p.channel === AHP_ROOT) {
    // The spec's root reducer ignores a config change for a host that publishes no config
    // schema (Baton's RootState has no `config`): accepted — echoed — and changes nothing.
    if (action.type === 'root/configChanged')
      conn.send_(() => [{ channel: AHP_ROOT, action, origin }]);
    else {
      conn.reject(
        p.channel,
        action,
        origin,
        `${action.type.slice(0, 200)} is not a client-dispatchable root action`,
      );
    }
    return;
  }
  const c = conn.chans.get(p.channel);
  if (c?.kind === 'session') {
    conn.reject(p.channel, action, origin, sessionActionRefusal(action.type));
    return;
  }
  if (!c) {
    conn.reject(p.channel, action, origin, 'not subscribed to this channel');
    return;
  }
  if (!CLIENT_DISPATCHABLE.has(action.type)) {
    conn.reject(
      p.channel,
      action,
      origin,
      `${action.type.slice(0, 200)} is not a client-dispatchable action`,
    );
    return;
  }
  if (!allows(conn.principal, 'prompt')) {
    conn.reject(p.channel, action, origin, "the token's scope does not include prompt");
    return;
  }
  const { mirror } = c;
  const dispatched: Dispatched = { conn, channel: p.channel, mirror, action, origin };
  const key = conn.s.tenancy.key(conn.principal.tenant, mirror.taskId);
  /** A command whose echo (kept under `echoKey`) is what it changes; a refusal is answered now. */
  const commandEchoed = async (echoKey: string, cmd: QueueCommand): Promise<void> => {
    conn.echoes.set(echoKey, origin);
    const r = await conn.s.commands.command(key, mirror.sessionId, cmd);
    if (r.status === 'failed') {
      conn.echoes.delete(echoKey);
      reject(dispatched, `${r.reason}: ${r.message}`);
    }
  };
  try {
    switch (action.type) {
      case 'chat/turnStarted':
      case 'chat/pendingMessageSet': {
        const isTurn = action.type === 'chat/turnStarted';
        const id = isTurn ? action.turnId : action.id;
        const msg = AhpDispatchedMessage.safeParse(action.message);
        if (typeof id !== 'string' || id.length === 0 || id.length > 200 || !msg.success) {
          reject(dispatched, 'malformed action: needs an id and a message { text }');
          return;
        }
        const steering = !isTurn && action.kind === 'steering';
        if (!isTurn && !steering && action.kind !== 'queued') {
          reject(dispatched, 'kind: must be "steering" or "queued"');
          return;
        }
        const m: Message = { ...message(msg.data.text), ...(msg.data as object) } as Message;
        mirror.remember(id, m);
        const echoKey = `${p.channel}\nturn:${id}`;
        if (isTurn) conn.echoes.set(echoKey, origin);
        await conn.s.tenancy.write(conn.principal.tenant, mirror.taskId);
        const decide = (d: Decision) => {
          if (steering) {
            answerSteering(dispatched, id, d);
            return;
          }
          if (d.outcome === 'admitted' && d.mode === 'steer') {
            // Steered into the turn that runs: no turn of its own starts.
            conn.echoes.delete(echoKey);
            const running = mirror.ahp.activeTurn?.id;
            reject(dispatched, `steered into the running turn${running ? ` ${running}` : ''}`);
            return;
          }
          if (d.outcome === 'admitted') {
            if (!isTurn) {
              echoQueued(dispatched, id);
              return;
            }
            // A turn this client already has (a pending action re-sent after a reconnect: the
            // idempotency key made no second prompt): answered now, its start is not sent again.
            if (hasTurn(mirror, id) && conn.echoes.get(echoKey) === origin) {
              conn.echoes.delete(echoKey);
              reject(dispatched, `already started as turn ${id}`);
            }
            return;
          }
          if (d.outcome === 'queued') {
            if (isTurn) {
              conn.echoes.delete(echoKey);
              reject(
                dispatched,
                `queued (${d.reason ?? 'busy'}): it is in queuedMessages as ${id}`,
              );
            } else echoQueued(dispatched, id);
            return;
          }
          conn.echoes.delete(echoKey);
          reject(dispatched, `${d.outcome}: ${d.message ?? d.reason ?? ''}`.trim());
        };
        const r = await conn.s.commands.prompt(
          {
            taskId: key,
            sessionId: mirror.sessionId,
            text: msg.data.text,
            idempotencyKey: id,
            origin: 'human',
            // The turn's id is its prompt's: the same for every client, on every connection.
            ...(Id.safeParse(id).success ? { promptId: id } : {}),
          },
          (late) => decide(late.data.decision as Decision),
        );
        if (r.status === 'decided') decide(r.decision as Decision);
        return;
      }
      case 'chat/turnCancelled': {
        const gen = mirror.runningGeneration;
        if (mirror.ahp.activeTurn?.id !== action.turnId || gen === null) {
          reject(dispatched, 'no such active turn');
          return;
        }
        // The echo is the turn's end, whichever way Baton ends it.
        await commandEchoed(`${p.channel}\ncancel:${String(action.turnId)}`, {
          type: 'session.cancel',
          observedGeneration: gen,
        });
        return;
      }
      case 'chat/pendingMessageRemoved': {
        if (action.kind === 'steering') {
          reject(
            dispatched,
            mirror.ahp.steeringMessage?.id === action.id
              ? 'Baton has delivered this steering message into the running turn: it cannot be withdrawn (cancel the turn instead)'
              : 'no such steering message',
          );
          return;
        }
        const promptId =
          action.kind === 'queued' && typeof action.id === 'string'
            ? mirror.promptIdOf(action.id)
            : undefined;
        if (!promptId) {
          reject(dispatched, 'no such queued message');
          return;
        }
        // The echo is its removal from queuedMessages.
        await commandEchoed(`${p.channel}\nremove:${String(action.id)}`, {
          type: 'queue.cancel',
          promptId,
        });
        return;
      }
      case 'chat/toolCallConfirmed': {
        await confirmToolCall(dispatched, key);
        return;
      }
      case 'chat/queuedMessagesReordered': {
        // Baton's queue runs in the order prompts came: it has no reorder (queue.send_now runs
        // one prompt now, cancelling the turn; not a reorder). An order that is already Baton's
        // changes nothing, and is echoed; any other is rejected.
        const have = mirror.ahp;
        const ids = (q: ChatState) => (q.queuedMessages ?? []).map((m) => m.id);
        if (JSON.stringify(ids(chatReducer(have, action))) === JSON.stringify(ids(have))) {
          conn.send_(() => [{ channel: p.channel, action, origin }]);
        } else {
          reject(
            dispatched,
            "Baton's queue keeps the order prompts were submitted in: it cannot be reordered (remove a queued message and send it again to move it last)",
          );
        }
        return;
      }
      default:
        reject(dispatched, `${action.type} is not supported by this host`);
    }
  } catch (err) {
    const { error } = toWireError(err);
    reject(dispatched, `${error.code}: ${error.message}`);
  }
}

/**
 * A client's answer to a tool call awaiting confirmation — Baton's open permission request of
 * the same id — is a `permission.respond` with the option it chose (`selectedOptionId`, else the
 * agent's allow-once / reject-once option for an approval / a denial). Its echo is the tool
 * call leaving pending-confirmation as Baton settled it; a second answer, or one to a request
 * already settled (answered elsewhere, timed out, cancelled), is rejected saying how it ended.
 */
export async function confirmToolCall(dispatched: Dispatched, key: string): Promise<void> {
  const { conn, channel, mirror, action, origin } = dispatched;
  const parsed = AhpToolCallConfirmed.safeParse(action);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    const where = i?.path.length ? `${i.path.join('.')}: ` : '';
    reject(dispatched, `malformed action: ${where}${i?.message ?? ''}`);
    return;
  }
  const a = parsed.data;
  const turn = mirror.ahp.activeTurn;
  const tc =
    turn?.id === a.turnId
      ? turn.responseParts
          .map((p) => (p as Partial<ToolCallPart>).toolCall)
          .find((t) => t?.toolCallId === a.toolCallId)
      : undefined;
  if (!tc) {
    reject(dispatched, 'no such tool call in the active turn');
    return;
  }
  const request = mirror.permissionOf(a.toolCallId);
  if (tc.status !== 'pending-confirmation' || !request) {
    const how = settledWords(mirror.settledOf(a.toolCallId));
    reject(
      dispatched,
      `permission_answered: the request was already settled${how}; this answer changes nothing (the tool call is ${tc.status})`,
    );
    return;
  }
  if (a.editedToolInput !== undefined) {
    reject(dispatched, "Baton cannot edit the agent's tool input (the tool call is not editable)");
    return;
  }
  const want = a.approved ? 'approve' : 'deny';
  let option = request.options.find((o) => o.optionId === a.selectedOptionId);
  if (a.selectedOptionId !== undefined) {
    if (!option) {
      reject(
        dispatched,
        `unknown_option: the agent offered ${request.options.map((o) => o.optionId).join(', ')}`,
      );
      return;
    }
    if (confirmationKind(option.kind) !== want) {
      reject(
        dispatched,
        `option ${option.optionId} is not an ${a.approved ? 'approval' : 'denial'}`,
      );
      return;
    }
  } else {
    const once = a.approved ? 'allow_once' : 'reject_once';
    option =
      request.options.find((o) => o.kind === once) ??
      request.options.find((o) => confirmationKind(o.kind) === want);
    if (!option) {
      reject(dispatched, `the agent offered no option to ${a.approved ? 'allow' : 'reject'} this`);
      return;
    }
  }
  // The echo is the tool call leaving pending-confirmation (the mirror moves on Baton's update).
  const k = `${channel}\nconfirm:${a.toolCallId}`;
  conn.echoes.set(k, origin);
  const subject = conn.principal.subject;
  const r = await conn.s.commands.command(key, mirror.sessionId, {
    type: 'permission.respond',
    requestId: request.requestId,
    optionId: option.optionId,
    ...(subject !== undefined ? { subject: subject.slice(0, 200) } : {}),
  });
  // Refused (answered meanwhile, say): rejected, unless the settling already went as its echo.
  if (r.status === 'failed' && conn.echoes.get(k) === origin) {
    conn.echoes.delete(k);
    reject(dispatched, `${r.reason}: ${r.message}`);
  }
}

/**
 * A dispatched steering message, by Baton's decision on its prompt: admitted as a steer → the
 * echo (it is the chat's steeringMessage until the turn it steers ends); admitted as a turn of
 * its own (nothing was running) → rejected, the turn starts; queued → rejected, it is in
 * queuedMessages; refused → rejected with the refusal.
 */
export function answerSteering(dispatched: Dispatched, id: string, d: Decision): void {
  const { conn, channel, mirror, action, origin } = dispatched;
  if (d.outcome === 'admitted' && d.mode === 'steer' && d.admissionGeneration !== undefined) {
    if (hasTurn(mirror, id)) {
      reject(dispatched, `delivered, and carried on as turn ${id}`);
      return;
    }
    mirror.noteSteer(id, d.admissionGeneration);
    mirror.fold(action);
    conn.send_(() => [{ channel, action, origin }]);
    return;
  }
  if (d.outcome === 'admitted') {
    reject(dispatched, `nothing to steer: started as turn ${id}`);
    return;
  }
  if (d.outcome === 'queued') {
    reject(
      dispatched,
      `queued (${d.reason ?? 'busy'}): the agent takes no steering now; it is in queuedMessages as ${id}`,
    );
    return;
  }
  reject(dispatched, `${d.outcome}: ${d.message ?? d.reason ?? ''}`.trim());
}

/** A queued message Baton took: echoed and folded, unless its turn already started. */
export function echoQueued(dispatched: Dispatched, id: string): void {
  const { conn, channel, mirror, action, origin } = dispatched;
  if (hasTurn(mirror, id)) {
    reject(dispatched, `started as turn ${id}`);
    return;
  }
  mirror.fold(action);
  conn.send_(() => [{ channel, action, origin }]);
}

/** A dispatchAction's params carry root/configChanged on the root channel. */
export function isRootConfig(params: unknown): boolean {
  const p = params as { channel?: unknown; action?: { type?: unknown } } | null | undefined;
  return p?.channel === AHP_ROOT && p.action?.type === 'root/configChanged';
}

/**
 * Why a client-dispatchable session action is refused: Baton's session (a task) has no client
 * tools, customizations, read or archive flags a client could set.
 */
export function sessionActionRefusal(type: string): string {
  switch (type) {
    case 'session/activeClientSet':
    case 'session/activeClientRemoved':
      return 'Baton runs agents with their own tools: client tools and customizations are not offered to them (activeClients stays empty)';
    case 'session/isReadChanged':
    case 'session/isArchivedChanged':
      return `${type} is not supported by this host (archive a task with Baton's own API)`;
    default:
      return `${type.slice(0, 200)} is not supported on a session channel by this host`;
  }
}

/** Which dispatched action an action the host sends answers (its echo), by channel and id. */
export function echoKeyOf(channel: string, a: ChatAction): string | undefined {
  switch (a.type) {
    case 'chat/turnStarted':
      return `${channel}\nturn:${String(a.turnId)}`;
    case 'chat/turnComplete':
    case 'chat/turnCancelled':
    case 'chat/error':
      return `${channel}\ncancel:${String(a.turnId)}`;
    case 'chat/pendingMessageRemoved':
      return `${channel}\nremove:${String(a.id)}`;
    case 'chat/toolCallConfirmed':
      return `${channel}\nconfirm:${String(a.toolCallId)}`;
    default:
      return undefined;
  }
}
