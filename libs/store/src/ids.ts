/** Redis stream ids (`<ms>-<seq>`) compared as numbers, not strings ('10-0' > '9-0'). */
export function compareIds(a: string, b: string): number {
  const [am, as] = parts(a);
  const [bm, bs] = parts(b);
  return am !== bm ? (am < bm ? -1 : 1) : as !== bs ? (as < bs ? -1 : 1) : 0;
}

export function maxId(a: string, b: string): string {
  return compareIds(a, b) >= 0 ? a : b;
}

function parts(id: string): [number, number] {
  const dash = id.indexOf('-');
  return dash === -1 ? [Number(id), 0] : [Number(id.slice(0, dash)), Number(id.slice(dash + 1))];
}

/** The least stream id greater than `id` (same millisecond, next sequence). */
export function nextId(id: string): string {
  const [ms, seq] = parts(id);
  return `${ms}-${seq + 1}`;
}

/** The greatest stream id less than `id` (not '0-0', which has none). */
export function previousId(id: string): string {
  const [ms, seq] = parts(id);
  // The sequence part is an unsigned 64-bit number: the last of the millisecond before.
  return seq > 0 ? `${ms}-${seq - 1}` : `${ms - 1}-18446744073709551615`;
}

/** The server time (ms) an id was made at: its first part. */
export function idTime(id: string): number {
  return parts(id)[0];
}
