import { jsonParts } from './shared-json';

const join = (parts: (string | Buffer)[]) =>
  parts.map((p) => (typeof p === 'string' ? p : p.toString())).join('');

describe('jsonParts', () => {
  it('is the JSON of the value, with large picked objects as one shared Buffer each', () => {
    const queue = { entries: [{ text: 'q'.repeat(20_000) }] };
    const a = { id: 1, state: { queue, other: { queue: { small: true } } } };
    const pa = jsonParts(a, (k) => k === 'queue');
    expect(JSON.parse(join(pa))).toEqual(a);
    expect(pa.filter((p) => Buffer.isBuffer(p))).toHaveLength(1);
    const pb = jsonParts({ id: 2, queue }, (k) => k === 'queue');
    expect(JSON.parse(join(pb))).toEqual({ id: 2, queue });
    // The same object is the same Buffer: serialized once.
    expect(pb.find((p) => Buffer.isBuffer(p))).toBe(pa.find((p) => Buffer.isBuffer(p)));
  });

  it('leaves small values and unpicked keys in place', () => {
    expect(jsonParts({ queue: { a: 1 }, big: 'x'.repeat(20_000) }, (k) => k === 'queue')).toEqual([
      JSON.stringify({ queue: { a: 1 }, big: 'x'.repeat(20_000) }),
    ]);
  });
});
