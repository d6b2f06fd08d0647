import type { AgentUsage } from '@baton/protocol';
import { copySession, isLive } from './draft';
import type { SessionHandlers } from './draft';

type Tokens = NonNullable<AgentUsage['tokens']>;

const sameTokens = (a: Tokens | undefined, b: Tokens): boolean =>
  a !== undefined &&
  a.input === b.input &&
  a.output === b.output &&
  a.thought === b.thought &&
  a.cachedRead === b.cachedRead &&
  a.cachedWrite === b.cachedWrite &&
  a.total === b.total;

/**
 * The usage known after a report: each field the report carries replaces the known one (the
 * agent reports the context window, cost and a turn's tokens at different times). The same
 * object when nothing changes, so an agent repeating itself costs no copy and no update.
 */
export function mergeUsage(
  known: AgentUsage | null | undefined,
  r: AgentUsage,
): AgentUsage | null | undefined {
  const k = known ?? {};
  const used = r.used ?? k.used;
  const size = r.size ?? k.size;
  const cost =
    r.cost !== undefined &&
    (k.cost === undefined || k.cost.amount !== r.cost.amount || k.cost.currency !== r.cost.currency)
      ? r.cost
      : k.cost;
  const tokens = r.tokens !== undefined && !sameTokens(k.tokens, r.tokens) ? r.tokens : k.tokens;
  if (
    known !== null &&
    known !== undefined &&
    used === known.used &&
    size === known.size &&
    cost === known.cost &&
    tokens === known.tokens
  )
    return known;
  if (used === undefined && size === undefined && cost === undefined && tokens === undefined)
    return known;
  return {
    ...(used !== undefined ? { used } : {}),
    ...(size !== undefined ? { size } : {}),
    ...(cost !== undefined ? { cost } : {}),
    ...(tokens !== undefined ? { tokens } : {}),
  };
}

/** Usage: what the live execution's agent reports of its context window, cost and tokens. */
export const usage = {
  'usage.reported': (s, e) => {
    if (!isLive(s, e)) return null;
    const next = mergeUsage(s.usage, e.data);
    if (next === s.usage) return null;
    const d = copySession(s);
    d.usage = next;
    return d;
  },
} satisfies Partial<SessionHandlers>;
