/**
 * Records keyed by ids that clients and agents choose (sessions, prompts, idempotency keys, tool
 * calls). Such an id is data: `constructor` or `__proto__` must name an entry like any other, never
 * reach Object.prototype. Plain objects stay (they are what snapshots serialize and V8 copies
 * fastest); only these helpers read a key that may be absent or write a key.
 */

/** The entry at `key`, own properties only. */
export function own<V>(r: Readonly<Record<string, V>>, key: string): V | undefined {
  return Object.hasOwn(r, key) ? r[key] : undefined;
}

/** Sets `key` as an own property: assigning `__proto__` would set the prototype instead. */
export function put<V>(r: Record<string, V>, key: string, value: V): void {
  if (key === '__proto__') {
    Object.defineProperty(r, key, { value, enumerable: true, writable: true, configurable: true });
  } else r[key] = value;
}

/** A shallow copy (Object.assign copies small records fastest in V8), `__proto__` kept as data. */
export function copyRecord<V>(r: Readonly<Record<string, V>>): Record<string, V> {
  const out: Record<string, V> = Object.assign({}, r);
  if (Object.hasOwn(r, '__proto__')) {
    // Object.assign set it as out's prototype: undo that, then copy it as the entry it is.
    Object.setPrototypeOf(out, Object.prototype);
    put(out, '__proto__', r['__proto__']!);
  }
  return out;
}
