/** The gateway's REST endpoints the page calls with its token. */
import { Id } from '@baton/protocol';
import { z } from 'zod';

const TaskList = z.object({ tasks: z.array(Id) });
export const RestError = z.object({ error: z.object({ code: z.string(), message: z.string() }) });
const RestCommandResult = z.object({
  status: z.enum(['done', 'failed', 'pending']),
  reason: z.string().optional(),
  message: z.string().optional(),
});

/** What a lifecycle command came to, in words for the page. */
export type ActionOutcome = { outcome: 'done' | 'pending' | 'refused'; text: string };

/**
 * A lifecycle command over REST with the page's token: the owner's answer (done, pending, or
 * failed with its reason), or the gateway's refusal (a missing scope: its message, as it is).
 */
export async function lifecycleCall(
  token: string,
  method: 'POST' | 'DELETE',
  path: string,
  done: string,
): Promise<ActionOutcome> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(method === 'POST' ? { body: '{}' } : {}),
      cache: 'no-store',
    });
  } catch (err) {
    return { outcome: 'refused', text: `Not done: cannot reach the gateway (${String(err)}).` };
  }
  const body: unknown = await res.json().catch(() => null);
  const result = RestCommandResult.safeParse(body);
  if (result.success) {
    const r = result.data;
    if (r.status === 'done') return { outcome: 'done', text: done };
    if (r.status === 'pending')
      return { outcome: 'pending', text: 'Asked; waiting for the answer…' };
    return { outcome: 'refused', text: `Not done: ${r.message ?? r.reason ?? 'refused'}` };
  }
  const e = RestError.safeParse(body);
  return {
    outcome: 'refused',
    text: `Not done: ${e.success ? e.data.error.message : `HTTP ${res.status}`}`,
  };
}

export const path = (...parts: string[]) => `/v1/tasks/${parts.map(encodeURIComponent).join('/')}`;

type TokenCheck = { ok: true; tasks: string[] } | { ok: false; message: string; refused: boolean };

/**
 * Browsers cannot see why a WebSocket upgrade failed (a 401 is only a close 1006), so the token
 * is tried on REST first, where a refusal comes with its reason.
 */
export async function listTasks(token: string): Promise<TokenCheck> {
  let res: Response;
  try {
    res = await fetch('/v1/tasks', {
      headers: { authorization: `Bearer ${token}` },
      cache: 'no-store',
    });
  } catch (err) {
    return { ok: false, refused: false, message: `Cannot reach the gateway (${String(err)}).` };
  }
  const body: unknown = await res.json().catch(() => null);
  if (res.ok) {
    const parsed = TaskList.safeParse(body);
    return parsed.success
      ? { ok: true, tasks: parsed.data.tasks }
      : {
          ok: false,
          refused: false,
          message: 'The gateway answered with an unexpected task list.',
        };
  }
  const reason = RestError.safeParse(body);
  const why = reason.success ? reason.data.error.message : `HTTP ${res.status}`;
  if (res.status === 401)
    return { ok: false, refused: true, message: `The gateway refused this token: ${why}.` };
  if (res.status === 403)
    return { ok: false, refused: true, message: `This token may not read tasks: ${why}.` };
  return { ok: false, refused: false, message: `The gateway answered ${res.status}: ${why}.` };
}

// ---------------------------------------------------------------------------------------------
