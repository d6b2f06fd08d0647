import { z } from 'zod';
import { Id } from '@baton/protocol';

/**
 * The wire of Baton's AHP host (Agent Host Protocol 1.0.0): JSON-RPC 2.0 over WebSocket,
 * one message per text frame. Only what a chat subscriber needs to follow a session's background
 * work: initialize (version negotiation), ping, subscribe / unsubscribe, reconnect, and `action`
 * notifications. docs/ahp-channel.md describes it.
 */

/** Baselines Baton accepts, each with its caret range (`1.0.0` = >=1.0.0 <2.0.0, `0.9.0` = >=0.9.0 <0.10.0). */
export const AHP_SUPPORTED_VERSIONS = ['1.0.0', '0.9.0'] as const;

export const AHP_ERRORS = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  UnsupportedProtocolVersion: -32005,
  AuthRequired: -32007,
  NotFound: -32008,
  PermissionDenied: -32009,
  AlreadyExists: -32010,
  Conflict: -32011,
  /** Baton's own, in JSON-RPC's range for implementation-defined server errors. */
  MessageTooLarge: -32090,
  RateLimited: -32091,
  TooManySubscriptions: -32092,
  Unavailable: -32093,
} as const;

export const AHP_ROOT = 'ahp-root://';

/** The `_meta` key under which AHP states and actions carry what is Baton's own. */
export const BATON_META_KEY = 'x-baton';

const SEMVER = /^(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})$/;

type SemVer = [number, number, number];

function semver(v: string): SemVer | null {
  const m = SEMVER.exec(v);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

function cmp(a: SemVer, b: SemVer): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/** `v` in the caret range of `base`: same major (same minor too below 1.0.0), not older. */
function inCaret(v: SemVer, base: SemVer): boolean {
  if (cmp(v, base) < 0) return false;
  return base[0] === 0 ? v[0] === 0 && v[1] === base[1] : v[0] === base[0];
}

export type Negotiation =
  { ok: true; version: string } | { ok: false; code: number; message: string; data?: unknown };

/**
 * AHP version negotiation: the highest offered version inside the caret range of a supported
 * baseline, returned as offered. None ⇒ -32005 with the supported versions; a malformed offer
 * (not a non-empty list of MAJOR.MINOR.PATCH strings) ⇒ -32602.
 */
export function negotiateAhpVersion(offered: unknown): Negotiation {
  if (!Array.isArray(offered) || offered.length === 0 || offered.length > 50) {
    return {
      ok: false,
      code: AHP_ERRORS.InvalidParams,
      message: 'protocolVersions: expected a non-empty list of versions',
    };
  }
  const parsed: [string, SemVer][] = [];
  for (const [i, v] of offered.entries()) {
    const s = typeof v === 'string' ? semver(v) : null;
    if (!s) {
      return {
        ok: false,
        code: AHP_ERRORS.InvalidParams,
        message: `protocolVersions.${i}: expected a MAJOR.MINOR.PATCH version`,
      };
    }
    parsed.push([v as string, s]);
  }
  const bases = AHP_SUPPORTED_VERSIONS.map((b) => semver(b)!);
  let best: [string, SemVer] | undefined;
  for (const p of parsed) {
    if (!bases.some((b) => inCaret(p[1], b))) continue;
    if (!best || cmp(p[1], best[1]) > 0) best = p;
  }
  if (!best) {
    return {
      ok: false,
      code: AHP_ERRORS.UnsupportedProtocolVersion,
      message: `no offered protocol version is supported`,
      data: { supportedVersions: [...AHP_SUPPORTED_VERSIONS] },
    };
  }
  return { ok: true, version: best[0] };
}

// ---------------------------------------------------------------------------------------------
// Channels
// ---------------------------------------------------------------------------------------------

const CHAT_SCHEME = 'ahp-chat:/';

/**
 * A Baton session's chat channel: `ahp-chat:/<taskId>/<sessionId>`, each id percent-encoded
 * (encodeURIComponent), so ids holding `/` or `%` name their chat unambiguously.
 */
export function chatUri(taskId: string, sessionId: string): string {
  return `${CHAT_SCHEME}${encodeURIComponent(taskId)}/${encodeURIComponent(sessionId)}`;
}

/** The task and session a chat URI names, or null when it is not one of Baton's. */
export function parseChatUri(uri: string): { taskId: string; sessionId: string } | null {
  if (!uri.startsWith(CHAT_SCHEME)) return null;
  const parts = uri.slice(CHAT_SCHEME.length).split('/');
  if (parts.length !== 2) return null;
  try {
    const [taskId, sessionId] = parts.map((p) => decodeURIComponent(p)) as [string, string];
    if (!Id.safeParse(taskId).success || !Id.safeParse(sessionId).success) return null;
    return { taskId, sessionId };
  } catch {
    return null;
  }
}

const SESSION_SCHEME = 'ahp-session:/';

/** A Baton task as an AHP session: `ahp-session:/<taskId>`, the id percent-encoded. */
export function sessionUri(taskId: string): string {
  return `${SESSION_SCHEME}${encodeURIComponent(taskId)}`;
}

/** The task an AHP session URI names, or null when it is not one of Baton's. */
export function parseSessionUri(uri: string): string | null {
  if (!uri.startsWith(SESSION_SCHEME)) return null;
  const rest = uri.slice(SESSION_SCHEME.length);
  if (rest.length === 0 || rest.includes('/')) return null;
  try {
    const id = decodeURIComponent(rest);
    return id.length > 0 && id.length <= 200 ? id : null;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------

export const JsonRpcId = z.union([z.string().max(200), z.number().int().safe()]);
export type JsonRpcId = z.infer<typeof JsonRpcId>;

const Channel = z.string().min(1).max(1_000);
const meta = { _meta: z.record(z.string(), z.unknown()).optional() };

export const AhpInitializeParams = z.object({
  channel: z.literal(AHP_ROOT).optional(),
  /** Most preferred first; checked by negotiateAhpVersion. */
  protocolVersions: z.array(z.unknown()).max(50),
  clientId: z.string().min(1).max(200),
  clientInfo: z
    .object({ name: z.string().max(200), version: z.string().max(100).optional() })
    .loose()
    .optional(),
  initialSubscriptions: z.array(Channel).max(100).optional(),
  locale: z.string().max(50).optional(),
  capabilities: z.record(z.string(), z.unknown()).optional(),
  ...meta,
});
export const AhpSubscribeParams = z.object({
  channel: Channel,
  delivery: z
    .object({ maxLatencyMs: z.number().min(0).optional() })
    .loose()
    .optional(),
  view: z.record(z.string(), z.unknown()).optional(),
  ...meta,
});
export const AhpUnsubscribeParams = z.object({ channel: Channel, ...meta });
export const AhpReconnectParams = z.object({
  channel: z.literal(AHP_ROOT).optional(),
  clientId: z.string().min(1).max(200),
  lastSeenServerSeq: z.number().int().min(0),
  subscriptions: z.array(Channel).max(100),
  ...meta,
});
export const AhpPingParams = z.object({ channel: Channel.optional(), ...meta }).optional();

export const AhpAuthenticateParams = z.object({
  channel: z.literal(AHP_ROOT).optional(),
  resource: z.string().min(1).max(1_000),
  token: z.string().min(1).max(10_000),
  scopes: z.array(z.string().max(200)).max(50).optional(),
  ...meta,
});
export const AhpListSessionsParams = z.object({
  channel: z.literal(AHP_ROOT).optional(),
  cursor: z.string().max(400).optional(),
  limit: z.number().int().min(1).max(500).optional(),
  ...meta,
});
export const AhpDispatchParams = z.object({
  channel: Channel,
  clientSeq: z.number().int().min(0),
  action: z.object({ type: z.string().min(1).max(200) }).loose(),
  ...meta,
});
export type AhpDispatchParams = z.infer<typeof AhpDispatchParams>;

/** A message a client dispatches (a turn's or a pending message's): its text, at most 1 MB. */
export const AhpDispatchedMessage = z
  .object({
    text: z.string().max(1_000_000),
    origin: z.object({ kind: z.string() }).loose().optional(),
  })
  .loose();

/**
 * AHP's `chat/toolCallConfirmed` as a client dispatches it (ChatToolCallApprovedAction |
 * ChatToolCallDeniedAction): approved with how it was confirmed, or denied with why.
 */
export const AhpToolCallConfirmed = z
  .object({
    type: z.literal('chat/toolCallConfirmed'),
    turnId: z.string().min(1).max(200),
    toolCallId: z.string().min(1).max(200),
    approved: z.boolean(),
    confirmed: z.string().min(1).max(100).optional(),
    reason: z.enum(['denied', 'skipped']).optional(),
    selectedOptionId: z.string().min(1).max(200).optional(),
    editedToolInput: z.string().max(1_000_000).optional(),
    reasonMessage: z.unknown().optional(),
    userSuggestion: z.unknown().optional(),
    ...meta,
  })
  .refine((a) => (a.approved ? a.confirmed !== undefined : a.reason !== undefined), {
    message: 'an approval needs confirmed, a denial needs reason',
  });
