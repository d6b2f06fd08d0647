import {
  ENTRY_TYPES,
  SCHEMA_VERSION,
  UPDATE_TYPES,
  type StreamEntry,
  type Update,
} from '@baton/protocol';
import type { z } from 'zod';

/** A value read back from Redis: decoded, or the reason it was not (for the dead letter). */
export type Decoded<T> = { ok: true; value: T } | { ok: false; reason: string };

function parseJson(json: string | undefined): Decoded<unknown> {
  if (json === undefined) return { ok: false, reason: 'missing entry field' };
  try {
    return { ok: true, value: JSON.parse(json) as unknown };
  } catch (err) {
    return { ok: false, reason: `not JSON: ${(err as Error).message}` };
  }
}

/** Decodes a stored value with its full schema (for values no write path validated). */
export function decodeChecked<T>(json: string | undefined, schema: z.ZodType<T>): Decoded<T> {
  const r = parseJson(json);
  if (!r.ok) return r;
  const s = schema.safeParse(r.value);
  return s.success ? { ok: true, value: s.data } : { ok: false, reason: zodReason(s.error) };
}

/**
 * Decodes a value that Baton validated with its full schema when it wrote it (stream entries on
 * append, updates on publish): only its envelope is checked — the schema version, the task it
 * belongs to and a known type — so reading back is bound by Redis and JSON.parse, not by zod.
 * Only Baton's roles can write these keys (docs/security.md); a value of another schema version
 * (written by an older or newer Baton) or of an unknown type is refused, never guessed at.
 */
export function decodeTrusted<T>(json: string | undefined, types: ReadonlySet<string>): Decoded<T> {
  const r = parseJson(json);
  if (!r.ok) return r;
  const v = r.value as { v?: unknown; taskId?: unknown; type?: unknown } | null;
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    return { ok: false, reason: '(root): expected an object' };
  if (v.v !== SCHEMA_VERSION)
    return {
      ok: false,
      reason: `v: schema version ${String(v.v)}, this Baton reads ${SCHEMA_VERSION}`,
    };
  if (typeof v.type !== 'string' || !types.has(v.type))
    return { ok: false, reason: `type: unknown type ${JSON.stringify(v.type)}` };
  if (typeof v.taskId !== 'string') return { ok: false, reason: 'taskId: expected a string' };
  return { ok: true, value: v as T };
}

export function zodReason(err: z.ZodError): string {
  return err.issues
    .slice(0, 5)
    .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
    .join('; ');
}

/** A stream entry read back from a task stream (validated by append). */
export const decodeStoredEntry = (json: string | undefined): Decoded<StreamEntry> =>
  decodeTrusted(json, ENTRY_TYPES);

/** An update read back from a shard's update stream (validated by commit-6.lua's callers). */
export const decodeStoredUpdate = (json: string | undefined): Decoded<Update> =>
  decodeTrusted(json, UPDATE_TYPES);
