/**
 * The token counts an agent's ACP `usage` object reports (a prompt answer's): the worker's
 * usage facts and the transcript's turn ends read them here.
 */
export interface TokenCounts {
  input?: number;
  output?: number;
  thought?: number;
  cachedRead?: number;
  cachedWrite?: number;
  total?: number;
}

/** ACP's names of the token counts a `usage` (a prompt answer's) reports, by ours. */
const ACP_TOKEN_FIELDS = {
  input: 'inputTokens',
  output: 'outputTokens',
  thought: 'thoughtTokens',
  cachedRead: 'cachedReadTokens',
  cachedWrite: 'cachedWriteTokens',
  total: 'totalTokens',
} as const satisfies Record<keyof TokenCounts, string>;

/**
 * The token counts an agent's ACP `usage` object reports (each a non-negative whole number; any
 * other value is left out), or undefined when it reports none. Agent output: read, never trusted.
 */
export function acpTokenCounts(usage: unknown): TokenCounts | undefined {
  if (typeof usage !== 'object' || usage === null || Array.isArray(usage)) return undefined;
  const from = usage as Record<string, unknown>;
  const tokens: TokenCounts = {};
  let any = false;
  for (const [ours, theirs] of Object.entries(ACP_TOKEN_FIELDS) as [keyof TokenCounts, string][]) {
    const n = from[theirs];
    if (typeof n === 'number' && Number.isSafeInteger(n) && n >= 0) {
      tokens[ours] = n;
      any = true;
    }
  }
  return any ? tokens : undefined;
}
