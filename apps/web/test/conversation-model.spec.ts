// The conversation panel's pure parts: the line diff of an edit, its context, the meter's words.
import fc from 'fast-check';
import { contextText, lineDiff, safeLink, truncatedText, withContext } from '../src/conversation';

const lines = fc.array(fc.constantFrom('a', 'b', 'c', 'd', ''), { maxLength: 30 });
const text = (xs: string[]) => xs.map((x) => `${x}\n`).join('');

describe('lineDiff', () => {
  it('keeps and removes the old lines and keeps and adds the new ones, in order', () => {
    fc.assert(
      fc.property(lines, lines, (a, b) => {
        const d = lineDiff(text(a), text(b));
        expect(d.filter((l) => l.op !== '+').map((l) => l.text)).toEqual(a);
        expect(d.filter((l) => l.op !== '-').map((l) => l.text)).toEqual(b);
      }),
    );
  });

  it('changes as few lines as a longest common subsequence leaves', () => {
    expect(lineDiff('x\ny\nz\n', 'x\nY\nz\n')).toEqual([
      { op: ' ', text: 'x' },
      { op: '-', text: 'y' },
      { op: '+', text: 'Y' },
      { op: ' ', text: 'z' },
    ]);
    expect(lineDiff(null, 'new\nfile')).toEqual([
      { op: '+', text: 'new' },
      { op: '+', text: 'file' },
    ]);
  });

  it('shows changed lines with their context, a gap for what is left out', () => {
    const old = Array.from({ length: 20 }, (_, i) => `l${i}`).join('\n');
    const d = withContext(lineDiff(old, old.replace('l10', 'L10')), 1);
    expect(d).toEqual([
      null,
      { op: ' ', text: 'l9' },
      { op: '-', text: 'l10' },
      { op: '+', text: 'L10' },
      { op: ' ', text: 'l11' },
      null,
    ]);
  });
});

describe('words', () => {
  it('says how much was cut and how full the context is', () => {
    expect(truncatedText(undefined)).toBeNull();
    expect(truncatedText(52_000)).toBe('truncated, 52,000 bytes more');
    expect(contextText(52_632, 200_000)).toBe('Context: 52,632 of 200,000 tokens (26%)');
    expect(contextText(10, undefined)).toBe('Context: 10 tokens used');
    expect(contextText(undefined, 5)).toBeNull();
  });

  it('follows web and mail links only', () => {
    for (const ok of ['https://a.b/c', 'http://x', 'mailto:a@b.c']) expect(safeLink(ok)).toBe(true);
    for (const bad of [
      'javascript:alert(1)',
      ' JAVASCRIPT:x',
      'data:text/html,x',
      'vbscript:x',
      '//evil.com',
      'file:///etc',
    ])
      expect(safeLink(bad)).toBe(false);
  });
});
