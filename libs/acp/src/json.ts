/**
 * Defensive readers for untrusted JSON. Frames come from agent processes we do not control, so
 * every field is read as `unknown` and narrowed here; nothing downstream trusts a shape.
 */
export type JsonRecord = Record<string, unknown>;

export const isRecord = (v: unknown): v is JsonRecord =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export const rec = (v: unknown): JsonRecord | undefined => (isRecord(v) ? v : undefined);

export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** Protocol ids are 1..200 characters; anything else cannot identify work. */
export const asId = (v: unknown): string | undefined =>
  typeof v === 'string' && v.length > 0 && v.length <= 200 ? v : undefined;

/** Bounded text for display fields: truncated, never rejected. */
export const text = (v: unknown, max: number): string | undefined =>
  typeof v === 'string' && v.length > 0 ? v.slice(0, max) : undefined;

export const path = (v: unknown, ...keys: string[]): unknown => {
  let cur = v;
  for (const k of keys) {
    if (!isRecord(cur)) return undefined;
    cur = cur[k];
  }
  return cur;
};
