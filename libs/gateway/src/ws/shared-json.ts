import { randomBytes } from 'node:crypto';

/** Below this, a value is simply serialized in place. */
const MIN_SHARED = 16 * 1024;
/** Stands for a shared part while the rest is serialized (unguessable, so never user data). */
const TOKEN = `@@baton-shared-${randomBytes(12).toString('hex')}@@`;
const QUOTED = JSON.stringify(TOKEN);

/** The JSON of large objects, by identity: null when it is small enough to serialize in place. */
const cache = new WeakMap<object, Buffer | null>();

/**
 * Serializes `value` as the parts of one JSON text: the large objects `share` picks (by their key)
 * are serialized once per object — every message that carries the same object (a view's queue,
 * handed to every subscriber of that version) sends the same Buffer, neither re-serialized nor
 * copied per socket.
 */
export function jsonParts(value: unknown, share: (key: string) => boolean): (string | Buffer)[] {
  const found: Buffer[] = [];
  const text = JSON.stringify(value, function (key: string, v: unknown) {
    if (v === null || typeof v !== 'object' || !share(key)) return v;
    let b = cache.get(v);
    if (b === undefined) {
      const json = JSON.stringify(v);
      b = json.length >= MIN_SHARED ? Buffer.from(json) : null;
      cache.set(v, b);
    }
    if (b === null) return v;
    found.push(b);
    return TOKEN;
  });
  if (found.length === 0) return [text];
  const pieces = text.split(QUOTED);
  const parts: (string | Buffer)[] = [pieces[0]!];
  for (let i = 0; i < found.length; i++) parts.push(found[i]!, pieces[i + 1]!);
  return parts;
}
