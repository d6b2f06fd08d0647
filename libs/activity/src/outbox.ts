import { SCHEMA_VERSION, type InboxMessage } from '@baton/protocol';
import type { TaskState } from './state';
import { own } from './records';

/** One message the state owes a worker, keyed so that an owner sends it once. */
export interface Owed {
  readonly executionId: string;
  /** Names what is owed (a stop, a claim, a cancel, an answer) across owners and steps. */
  readonly key: string;
  readonly message: InboxMessage;
}

/** A message without its envelope (version, task, session, execution). */
type MessageBody = InboxMessage extends infer M
  ? M extends InboxMessage
    ? Omit<M, 'v' | 'taskId' | 'sessionId' | 'executionId'>
    : never
  : never;

export interface Outbox {
  readonly owed: Owed[];
  /** Claims that cannot be delivered for want of their text: a broken invariant, to report. */
  readonly textless: { readonly sessionId: string; readonly promptId: string }[];
}

/**
 * What the state owes the workers: to each live execution, and to each a newer one replaced
 * before it ended, the stop it is to honour (and then nothing else), every claim that has not reached its agent, the cancel of its dispatched turn,
 * and every settled permission request it has not reported resolved. Each is owed until a fact
 * of the worker settles it in the state, so the outbox empties as the worker answers.
 */
export function outbox(state: TaskState): Outbox {
  const owed: Owed[] = [];
  const textless: { sessionId: string; promptId: string }[] = [];
  /** `body` is owed to the execution under `key`, in the envelope of its session. */
  const owe = (sessionId: string, executionId: string, key: string, body: MessageBody) =>
    owed.push({
      executionId,
      key,
      message: {
        v: SCHEMA_VERSION,
        taskId: state.taskId,
        sessionId,
        executionId,
        ...body,
      } as InboxMessage,
    });
  for (const id in state.sessions) {
    const s = state.sessions[id]!;
    for (const r of s.replacedStops ?? []) {
      owe(s.id, r.executionId, `s/${s.id}/${r.executionId}`, {
        type: 'execution.stop',
        data: { reason: r.reason },
      });
    }
    const x = s.execution;
    if (!x || x.phase === 'ended') continue;
    if (x.stopping !== null) {
      owe(s.id, x.id, `s/${s.id}/${x.id}`, {
        type: 'execution.stop',
        data: { reason: x.stopping },
      });
      continue;
    }
    if (s.deleted) continue;
    for (const claim of [s.turn, s.steer]) {
      if (!claim || claim.phase !== 'claimed') continue;
      const record = own(s.prompts, claim.promptId);
      if (!record || !claim.text) {
        textless.push({ sessionId: s.id, promptId: claim.promptId });
        continue;
      }
      owe(s.id, x.id, `p/${s.id}/${claim.promptId}/${claim.generation}`, {
        type: 'prompt.deliver',
        data: {
          promptId: claim.promptId,
          admissionGeneration: claim.generation,
          mode: claim.mode,
          origin: record.origin,
          text: claim.text,
          ...(record.traceparent ? { traceparent: record.traceparent } : {}),
        },
      });
    }
    const t = s.turn;
    if (t && t.cancel && t.phase === 'dispatched') {
      owe(s.id, x.id, `c/${s.id}/${t.generation}`, {
        type: 'turn.cancel',
        data: { admissionGeneration: t.generation, reason: t.cancel },
      });
    }
    // A person's answer, the timeout's denial, a cancel's `cancelled` (after the cancel itself,
    // as ACP orders them).
    for (const p of s.permissions) {
      const a = p.answer;
      if (a === null) continue;
      owe(s.id, x.id, `a/${s.id}/${p.requestId}`, {
        type: 'permission.answer',
        data: {
          requestId: p.requestId,
          outcome: a.outcome,
          ...(a.optionId !== null ? { optionId: a.optionId } : {}),
          by: a.by,
          ...(a.subject !== null ? { subject: a.subject } : {}),
        },
      });
    }
  }
  return { owed, textless };
}
