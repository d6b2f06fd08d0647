import fc from 'fast-check';
import { plan, shares } from '../src/balance';

/** A model of the lease table: shard -> owner; acquisition is atomic (free shards only). */
class Model {
  readonly owners = new Map<number, string>();
  readonly live = new Set<string>();
  constructor(readonly shards: number) {}

  counts(): number[] {
    return [...this.live].map((id) => [...this.owners.values()].filter((o) => o === id).length);
  }

  tick(self: string): { acquired: number; released: number } {
    const p = plan({ self, shards: this.shards, instances: [...this.live], owners: this.owners });
    const mine = [...this.owners.values()].filter((o) => o === self).length;
    const target = p.targets.get(self)!;
    // An instance at or below its share never gives a shard up, and never takes beyond it.
    if (p.release.length > 0) expect(mine).toBeGreaterThan(target);
    expect(p.release.length).toBeLessThanOrEqual(1);
    expect(p.acquire.length).toBeLessThanOrEqual(Math.max(0, target - mine));
    let acquired = 0;
    for (const s of p.acquire) {
      expect(s).toBeGreaterThanOrEqual(0);
      expect(s).toBeLessThan(this.shards);
      if (!this.owners.has(s)) {
        this.owners.set(s, self);
        acquired++;
      }
    }
    for (const s of p.release) {
      expect(this.owners.get(s)).toBe(self);
      this.owners.delete(s);
    }
    return { acquired, released: p.release.length };
  }

  leave(id: string) {
    this.live.delete(id);
    for (const [s, o] of [...this.owners]) if (o === id) this.owners.delete(s);
  }
}

const event = fc.oneof(
  fc.record({ kind: fc.constant('tick' as const), who: fc.nat(9) }),
  fc.record({ kind: fc.constant('join' as const), who: fc.nat(9) }),
  fc.record({ kind: fc.constant('leave' as const), who: fc.nat(9) }),
  // A crash: the instance stops ticking; its leases lapse later (all at once here).
  fc.record({ kind: fc.constant('crash' as const), who: fc.nat(9) }),
);

describe('shard balancing', () => {
  it('shares add up to the shard count and differ by at most one', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2_000 }),
        fc.uniqueArray(fc.string({ minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 40 }),
        (n, ids) => {
          const t = [...shares(n, ids, new Map()).values()];
          expect(t.reduce((a, b) => a + b, 0)).toBe(n);
          expect(Math.max(...t) - Math.min(...t)).toBeLessThanOrEqual(1);
        },
      ),
    );
  });

  it('the extra shards go to the instances holding the most (fewest moves)', () => {
    const t = shares(10, ['a', 'b', 'c'], new Map([['c', 10]]));
    expect(t.get('c')).toBe(4);
    expect(t.get('a')).toBe(3);
  });

  it('converges to every shard owned, balanced within one, from any history of joins, leaves and crashes', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 48 }),
        fc.array(event, { maxLength: 120 }),
        fc.array(fc.nat(), { minLength: 8, maxLength: 8 }),
        (n, events, orderSeed) => {
          const m = new Model(n);
          m.live.add('p0');
          const crashed = new Set<string>();
          for (const e of events) {
            const id = `p${e.who}`;
            if (e.kind === 'join' && !crashed.has(id)) m.live.add(id);
            else if (e.kind === 'leave' && m.live.size > 1) m.leave(id);
            else if (e.kind === 'crash' && m.live.size > 1 && m.live.has(id)) {
              m.live.delete(id); // its heartbeat lapses; its leases still block until they lapse
              crashed.add(id);
            } else if (e.kind === 'tick' && m.live.has(id)) m.tick(id);
          }
          // The crashed instances' leases lapse.
          for (const [s, o] of [...m.owners]) if (crashed.has(o)) m.owners.delete(s);
          const live = [...m.live];
          let rounds = 0;
          for (; rounds < 2 * n + 10; rounds++) {
            let moved = 0;
            // Instances tick in an arbitrary order each round.
            const order = [...live].sort(
              (a, b) =>
                ((fnv(a) ^ orderSeed[rounds % 8]!) >>> 0) -
                ((fnv(b) ^ orderSeed[rounds % 8]!) >>> 0),
            );
            for (const id of order) {
              const r = m.tick(id);
              moved += r.acquired + r.released;
            }
            if (moved === 0) break;
          }
          expect(m.owners.size).toBe(n);
          const c = m.counts();
          expect(Math.max(...c) - Math.min(...c)).toBeLessThanOrEqual(1);
          // Stable: nothing moves any more.
          for (const id of live) expect(m.tick(id)).toEqual({ acquired: 0, released: 0 });
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a joining instance takes shards one at a time from the most loaded', () => {
    const m = new Model(12);
    m.live.add('a');
    m.tick('a');
    expect(m.counts()).toEqual([12]);
    m.live.add('b');
    m.live.add('c');
    const history: number[][] = [];
    for (let i = 0; i < 20; i++) {
      for (const id of ['a', 'b', 'c']) m.tick(id);
      history.push(m.counts());
    }
    expect(m.counts()).toEqual([4, 4, 4]);
    // a never drops more than one shard per tick.
    for (let i = 1; i < history.length; i++)
      expect(history[i - 1]![0]! - history[i]![0]!).toBeLessThanOrEqual(1);
  });
});

function fnv(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
  return h;
}
