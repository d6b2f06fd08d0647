import fc from 'fast-check';
import { lineTap, type Direction } from '../src';

const run = async (chunks: Uint8Array[]) => {
  const seen: [Direction, string][] = [];
  const tap = lineTap('agent->client', (d, l) => seen.push([d, l]));
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

  it('skips blank lines and strips CRLF endings', async () => {
    const { seen } = await run([new TextEncoder().encode('{"a":1}\r\n\n  \n{"b":2}\n')]);
    expect(seen.map(([, l]) => l)).toEqual(['{"a":1}', '{"b":2}']);
  });
});
