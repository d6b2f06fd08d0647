import fc from 'fast-check';
import { lineTap, type Direction } from '../src';

const run = async (chunks: Uint8Array[], withhold: (line: string) => boolean = () => false) => {
  const seen: [Direction, string][] = [];
  const tap = lineTap('agent->client', (d, l) => {
    seen.push([d, l]);
    return !withhold(l);
  });
  const out: Uint8Array[] = [];
  const reading = (async () => {
    const reader = tap.readable.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      out.push(value);
    }
  })();
  const writer = tap.writable.getWriter();
  for (const c of chunks) await writer.write(c);
  await writer.close();
  await reading;
  return { seen, out: Buffer.concat(out).toString('utf8') };
};

const split = (bytes: Uint8Array, cuts: number[]): Uint8Array[] => {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const parts: Uint8Array[] = [];
  let prev = 0;
  for (const p of [...points, bytes.length]) {
    parts.push(bytes.subarray(prev, p));
    prev = p;
  }
  return parts;
};

describe('lineTap', () => {
  it('reports each line once and passes the bytes through unchanged, however they are chunked', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc
            .string({ unit: 'grapheme', minLength: 1 })
            .filter((s) => !s.includes('\n') && s.trim() !== '' && !s.endsWith('\r')),
          { maxLength: 8 },
        ),
        fc.array(fc.nat(), { maxLength: 10 }),
        fc.boolean(),
        async (lines, cuts, trailingNewline) => {
          const text = lines.join('\n') + (trailingNewline && lines.length > 0 ? '\n' : '');
          const bytes = new TextEncoder().encode(text);
          const { seen, out } = await run(split(bytes, cuts));
          expect(out).toBe(text);
          expect(seen).toEqual(lines.map((l) => ['agent->client', l]));
        },
      ),
    );
  });

  it('withholds the lines the sink refuses, and passes the others on unchanged', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            text: fc
              .string({ unit: 'grapheme', minLength: 1 })
              .filter((s) => !s.includes('\n') && s.trim() !== '' && !s.endsWith('\r')),
            withheld: fc.boolean(),
            crlf: fc.boolean(),
          }),
          { maxLength: 8 },
        ),
        fc.array(fc.nat(), { maxLength: 10 }),
        fc.boolean(),
        async (lines, cuts, trailingNewline) => {
          // A line's own identity decides: the same text may appear kept and withheld.
          const tagged = lines.map((l, i) => `${l.withheld ? 'W' : 'K'}${i}:${l.text}`);
          const ending = (i: number) => (lines[i]!.crlf ? '\r\n' : '\n');
          const last = lines.length - 1;
          const text = tagged
            .map((t, i) => t + (i < last || trailingNewline ? ending(i) : ''))
            .join('');
          const kept = tagged
            .map((t, i) =>
              t.startsWith('K') ? t + (i < last || trailingNewline ? ending(i) : '') : '',
            )
            .join('');
          const bytes = new TextEncoder().encode(text);
          const { seen, out } = await run(split(bytes, cuts), (l) => l.startsWith('W'));
          expect(out).toBe(kept);
          expect(seen).toEqual(tagged.map((t) => ['agent->client', t]));
        },
      ),
    );
  });

  it('skips blank lines and strips CRLF endings', async () => {
    const { seen } = await run([new TextEncoder().encode('{"a":1}\r\n\n  \n{"b":2}\n')]);
    expect(seen.map(([, l]) => l)).toEqual(['{"a":1}', '{"b":2}']);
  });
});
