import fc from 'fast-check';
import { Owner } from '@baton/testing';
import { utf8Length, type AdmissionLimits } from '../src';

// One task's waiting prompts live in its state and its view, which the owner and every gateway
// serving the task hold and send to each subscriber. Whatever the sessions' queue capacities,
// a task holds at most so many sessions with work and so many bytes of queued prompt text.

const NO_CAPACITY = { admission: 'coarse', steering: false, queueCapacity: 0 } as const;

function owner(limits: AdmissionLimits): Owner {
  const o = new Owner();
  o.limits = limits;
  return o;
}

function submit(o: Owner, sessionId: string, key: string, text: string) {
  o.command(sessionId, 'prompt.submit', {
    promptId: `p-${key}`,
    idempotencyKey: key,
    text,
    origin: 'human',
  });
  return o.decisionsFor(`p-${key}`)[0];
}

describe('the bounds on what a task holds waiting', () => {
  it('rejects a prompt past the queued bytes of its session, with how many and which bound', () => {
    const o = owner({ sessionsPerTask: 0, queuedBytesPerSession: 100, queuedBytesPerTask: 0 });
    o.command('s', 'session.configure', NO_CAPACITY);
    expect(submit(o, 's', 'a', 'x'.repeat(60))).toMatchObject({ outcome: 'queued' });
    expect(submit(o, 's', 'b', 'é'.repeat(21))).toMatchObject({ outcome: 'rejected' });
    expect(o.decisionsFor('p-b')[0]).toEqual({
      outcome: 'rejected',
      reason: 'queue_bytes',
      message: 'session s has 60 bytes of prompts queued; 42 more would pass its bound of 100',
    });
    // What fits still waits; another session has its own bound.
    expect(submit(o, 's', 'c', 'x'.repeat(40))).toMatchObject({ outcome: 'queued' });
    expect(submit(o, 't', 'd', 'x'.repeat(100))).toMatchObject({ outcome: 'queued' });
  });

  it('rejects a prompt past the queued bytes of the whole task', () => {
    const o = owner({ sessionsPerTask: 0, queuedBytesPerSession: 0, queuedBytesPerTask: 150 });
    expect(submit(o, 's1', 'a', 'x'.repeat(100))).toMatchObject({ outcome: 'queued' });
    expect(submit(o, 's2', 'b', 'x'.repeat(51))).toEqual({
      outcome: 'rejected',
      reason: 'queue_bytes',
      message: 'this task has 100 bytes of prompts queued; 51 more would pass its bound of 150',
    });
    expect(submit(o, 's2', 'c', 'x'.repeat(50))).toMatchObject({ outcome: 'queued' });
  });

  it('rejects a prompt that would add a session with work past the bound, not one on a session that has some', () => {
    const o = owner({ sessionsPerTask: 2, queuedBytesPerSession: 0, queuedBytesPerTask: 0 });
    expect(submit(o, 's1', 'a', 'one')).toMatchObject({ outcome: 'queued' });
    expect(submit(o, 's2', 'b', 'two')).toMatchObject({ outcome: 'queued' });
    expect(submit(o, 's3', 'c', 'three')).toEqual({
      outcome: 'rejected',
      reason: 'too_many_sessions',
      message:
        'this task already has 2 sessions with work, its bound (2); send to one of them, or wait until one is done',
    });
    expect(submit(o, 's1', 'd', 'more')).toMatchObject({ outcome: 'queued' });
    // A session whose queue is emptied has no work left: its place is free again.
    o.command('s2', 'queue.cancel', { promptId: 'p-b' });
    expect(submit(o, 's3', 'e', 'three')).toMatchObject({ outcome: 'queued' });
  });

  it('bounds nothing with 0, and admits at once what needs no queue', () => {
    const o = owner({ sessionsPerTask: 0, queuedBytesPerSession: 0, queuedBytesPerTask: 0 });
    for (let i = 0; i < 50; i++)
      expect(submit(o, `s${i}`, `k${i}`, 'x'.repeat(1_000))).toMatchObject({ outcome: 'queued' });
  });

  it('counts UTF-8 bytes', () => {
    for (const s of ['', 'a', 'é', '€', '😀', 'a😀é€', '\ud800', '\udc00x'])
      expect(utf8Length(s)).toBe(Buffer.byteLength(s, 'utf8'));
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        expect(utf8Length(s)).toBe(Buffer.byteLength(s, 'utf8'));
      }),
      { seed: 31, numRuns: 500 },
    );
  });

  it('never lets what waits pass a bound, and rejects only what would pass one', () => {
    const submission = fc.record({
      session: fc.integer({ min: 0, max: 5 }),
      bytes: fc.integer({ min: 1, max: 80 }),
      cancel: fc.boolean(),
    });
    const limits = fc.record({
      sessionsPerTask: fc.integer({ min: 0, max: 4 }),
      queuedBytesPerSession: fc.integer({ min: 0, max: 200 }),
      queuedBytesPerTask: fc.integer({ min: 0, max: 400 }),
    });
    fc.assert(
      fc.property(limits, fc.array(submission, { maxLength: 40 }), (l, subs) => {
        const o = owner(l);
        const waiting = () => {
          const bySession = new Map<string, number>();
          for (const s of Object.values(o.state.sessions)) {
            let n = 0;
            for (const id of s.queue) n += utf8Length(s.prompts[id]!.text ?? '');
            if (s.queue.length > 0) bySession.set(s.id, n);
          }
          return bySession;
        };
        subs.forEach((sub, i) => {
          const sessionId = `s${sub.session}`;
          const before = waiting();
          const d = submit(o, sessionId, `k${i}`, 'y'.repeat(sub.bytes));
          const after = waiting();
          const total = [...after.values()].reduce((a, b) => a + b, 0);
          if (l.sessionsPerTask > 0) expect(after.size).toBeLessThanOrEqual(l.sessionsPerTask);
          if (l.queuedBytesPerTask > 0) expect(total).toBeLessThanOrEqual(l.queuedBytesPerTask);
          if (l.queuedBytesPerSession > 0)
            for (const n of after.values()) expect(n).toBeLessThanOrEqual(l.queuedBytesPerSession);
          if (d?.outcome === 'rejected' && d.reason === 'queue_bytes') {
            const mine = (before.get(sessionId) ?? 0) + sub.bytes;
            const all = [...before.values()].reduce((a, b) => a + b, 0) + sub.bytes;
            expect(
              (l.queuedBytesPerSession > 0 && mine > l.queuedBytesPerSession) ||
                (l.queuedBytesPerTask > 0 && all > l.queuedBytesPerTask),
            ).toBe(true);
          }
          if (d?.outcome === 'rejected' && d.reason === 'too_many_sessions') {
            expect(before.has(sessionId)).toBe(false);
            expect(before.size).toBeGreaterThanOrEqual(l.sessionsPerTask);
          }
          if (sub.cancel && d?.outcome === 'queued')
            o.command(sessionId, 'queue.cancel', { promptId: `p-k${i}` });
        });
      }),
      { seed: 31, numRuns: 300 },
    );
  });
});
