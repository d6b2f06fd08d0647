/**
 * What the conversation panel shows, as pure functions: a line diff of an edit, the context
 * meter's words, how much of a field was cut. The panel (browser/conversation-panel.ts) draws them.
 */

export type DiffLine = { op: ' ' | '-' | '+'; text: string };

/** Lines compared at most (old × new) by the exact diff; past it the edit shows whole. */
const MAX_CELLS = 1_000_000;

/**
 * The lines of `oldText` to `newText` as a unified diff (kept, removed, added), by longest common
 * subsequence. A new file (`oldText` null) is all added; an edit too large to compare shows the
 * old lines removed and the new ones added.
 */
export function lineDiff(oldText: string | null, newText: string): DiffLine[] {
  const b = splitLines(newText);
  if (oldText === null) return b.map((text) => ({ op: '+', text }));
  const a = splitLines(oldText);
  // Common head and tail first: most edits touch a few lines of a long file.
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  )
    tail++;
  const am = a.slice(head, a.length - tail);
  const bm = b.slice(head, b.length - tail);
  const keep = (xs: string[]): DiffLine[] => xs.map((text) => ({ op: ' ', text }));
  const middle: DiffLine[] =
    am.length * bm.length > MAX_CELLS
      ? [
          ...am.map((text) => ({ op: '-' as const, text })),
          ...bm.map((text) => ({ op: '+' as const, text })),
        ]
      : lcsDiff(am, bm);
  return [...keep(a.slice(0, head)), ...middle, ...keep(a.slice(a.length - tail))];
}

function splitLines(s: string): string[] {
  if (s === '') return [];
  const lines = s.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

function lcsDiff(a: string[], b: string[]): DiffLine[] {
  const n = a.length;
  const m = b.length;
  // len[i][j]: the longest common subsequence of a[i..] and b[j..].
  const len = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      len[i]![j] =
        a[i] === b[j] ? len[i + 1]![j + 1]! + 1 : Math.max(len[i + 1]![j]!, len[i]![j + 1]!);
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push({ op: ' ', text: a[i]! });
      i++;
      j++;
    } else if (len[i + 1]![j]! >= len[i]![j + 1]!) out.push({ op: '-', text: a[i++]! });
    else out.push({ op: '+', text: b[j++]! });
  }
  while (i < n) out.push({ op: '-', text: a[i++]! });
  while (j < m) out.push({ op: '+', text: b[j++]! });
  return out;
}

/**
 * Only the changed lines and `context` lines around them; a run of kept lines left out is one
 * `null` (drawn as "⋯").
 */
export function withContext(lines: readonly DiffLine[], context = 3): Array<DiffLine | null> {
  const near = new Array<boolean>(lines.length).fill(false);
  lines.forEach((l, i) => {
    if (l.op === ' ') return;
    for (let k = Math.max(0, i - context); k <= Math.min(lines.length - 1, i + context); k++)
      near[k] = true;
  });
  const out: Array<DiffLine | null> = [];
  lines.forEach((l, i) => {
    if (near[i]) out.push(l);
    else if (out[out.length - 1] !== null) out.push(null);
  });
  return out;
}

/** "truncated, N bytes more" for a field cut at its cap, else null. */
export function truncatedText(more: number | undefined): string | null {
  return more === undefined || more <= 0
    ? null
    : `truncated, ${more.toLocaleString('en-GB')} bytes more`;
}

/** The context meter's words: tokens used of the window, and the share. */
export function contextText(used: number | undefined, size: number | undefined): string | null {
  if (used === undefined) return null;
  const n = (x: number) => x.toLocaleString('en-GB');
  if (size === undefined || size <= 0) return `Context: ${n(used)} tokens used`;
  return `Context: ${n(used)} of ${n(size)} tokens (${Math.round((used / size) * 100)}%)`;
}

/** Whether a link may be followed: web and mail links only, never script or data. */
export function safeLink(url: string): boolean {
  return /^(https?:\/\/|mailto:)/i.test(url.trim());
}
