import { NO_IDS } from '../state';
import type { PermissionAnswer, PermissionRequest } from '../state';
import { copySession, appended, isLive, countsAsEvent, heard, answered } from './draft';
import type { SessionHandlers } from './draft';
import { withAnswer, rememberPermission } from './effects';

/**
 * Permissions: the requests an agent makes, the answers the owner settles, and what the worker
 * reports resolved.
 */
export const permissions = {
  'permission.requested': (s, e) => {
    if (!isLive(s, e)) return null;
    const r = e.data;
    const known =
      s.permissions.some((p) => p.requestId === r.requestId) ||
      s.resolvedPermissions.some((p) => p.requestId === r.requestId);
    // Only `ask` requests wait for anyone: the worker answers the others at once.
    if ((known || r.policy !== 'ask') && !countsAsEvent(s)) return null;
    const d = copySession(s);
    heard(d);
    if (known || r.policy !== 'ask') return d;
    const request: PermissionRequest = {
      requestId: r.requestId,
      toolCallId: r.toolCallId ?? null,
      title: r.title ?? null,
      toolKind: r.toolKind ?? null,
      options: r.options,
      answer: null,
    };
    // A request waits for a person, who may well be away: not a stall of the turn.
    d.permissions = appended(s.permissions, request);
    return d;
  },
  'permission.resolved': (s, e) => {
    if (!isLive(s, e)) return null;
    const r = e.data;
    const open = s.permissions.some((p) => p.requestId === r.requestId);
    const remembered = s.resolvedPermissions.some((p) => p.requestId === r.requestId);
    if (!open && remembered && !countsAsEvent(s)) return null;
    const d = copySession(s);
    heard(d);
    if (open) d.permissions = s.permissions.filter((p) => p.requestId !== r.requestId);
    if (d.permissions.length === 0) d.permissions = NO_IDS;
    if (!remembered)
      d.resolvedPermissions = rememberPermission(d.resolvedPermissions, {
        requestId: r.requestId,
        outcome: r.outcome,
        optionId: r.optionId ?? null,
        by: r.by,
      });
    return d;
  },
  'permission.answered': (s, e) => {
    const d = copySession(s);
    answered(d, e.data.commandId);
    const at = s.permissions.findIndex((p) => p.requestId === e.data.requestId);
    if (at === -1 || s.permissions[at]!.answer !== null) return d;
    const answer: PermissionAnswer = {
      outcome: e.data.outcome,
      optionId: e.data.optionId ?? null,
      by: e.data.by,
      subject: e.data.subject ?? null,
    };
    d.permissions = s.permissions.map((p, i) => (i === at ? withAnswer(p, answer) : p));
    return d;
  },
} satisfies Partial<SessionHandlers>;
