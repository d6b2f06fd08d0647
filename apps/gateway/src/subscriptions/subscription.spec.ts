import fc from 'fast-check';
import type { TaskView, Update } from '@baton/protocol';
import { UpdateFrame } from '../updates/update-hub';
import {
  BehindError,
  Subscription,
  type SubscriptionSink,
  type UpdateSource,
} from './subscription';

const T = 't1';

function update(seq: number, sessionId: string): Update {
  return {
    v: 1,
    taskId: T,
    seq,
    type: 'chat/backgroundWorkRemoved',
    data: { sessionId, id: `w${seq}` },
  };
}

/** The task as Redis has it: published updates, what the shard stream still retains, the view. */
class World implements UpdateSource {
  published: Update[] = [];
  retainedFrom = 1;
  viewSeq = 0;

  publish(sessionId: string): Update {
    const u = update(this.published.length + 1, sessionId);
    this.published.push(u);
    return u;
  }
  async view(): Promise<TaskView> {
    await Promise.resolve();
    return {
      taskId: T,
      seq: this.viewSeq,
      status: 'active',
      activity: { foregroundActivity: null, activeSubagentCount: 0 },
      sessions: [],
    };
  }
  async lastSeq(): Promise<number> {
    await Promise.resolve();
    return this.published.length;
  }
  async missed(_t: string, afterSeq: number): Promise<Update[] | null> {
    await Promise.resolve();
    if (afterSeq + 1 < this.retainedFrom) return null;
    return this.published.slice(afterSeq);
  }
}

type Sent = { kind: 'snapshot'; seq: number; resync: boolean } | { kind: 'update'; u: Update };

class Sink implements SubscriptionSink {
  sent: Sent[] = [];
  behind = false;
  writable() {
    return !this.behind;
  }
  snapshot(view: TaskView, resync: boolean) {
    // No room while behind: the subscription waits for the drain (or, starting, is refused).
    if (this.behind) return false;
    this.sent.push({ kind: 'snapshot', seq: view.seq, resync });
    return true;
  }
  update(frame: UpdateFrame) {
    this.sent.push({ kind: 'update', u: frame.update });
  }
}

type Event =
  | { e: 'publish'; session: 's1' | 's2'; deliver: 'yes' | 'no' | 'twice' }
  | { e: 'trim'; keep: number }
  | { e: 'view' }
  | { e: 'behind' }
  | { e: 'drain' }
  | { e: 'tick' };

const event: fc.Arbitrary<Event> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      e: fc.constant('publish' as const),
      session: fc.constantFrom('s1' as const, 's2' as const),
      deliver: fc.constantFrom(
        'yes' as const,
        'yes' as const,
        'yes' as const,
        'no' as const,
        'twice' as const,
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ e: fc.constant('trim' as const), keep: fc.nat(5) }) },
  { weight: 2, arbitrary: fc.constant({ e: 'view' as const }) },
  { weight: 1, arbitrary: fc.constant({ e: 'behind' as const }) },
  { weight: 1, arbitrary: fc.constant({ e: 'drain' as const }) },
  { weight: 2, arbitrary: fc.constant({ e: 'tick' as const }) },
);

const settle = () => new Promise((r) => setTimeout(r, 0));

/**
 * What the client can rebuild from what it was sent: each snapshot resets it to the snapshot's seq,
 * each update must be the next seq (for its session filter: the next seq of a visible update).
 */
function check(
  sent: Sent[],
  world: World,
  sessionId: string | undefined,
  resumedAt: number | undefined,
): number {
  // A resuming client has everything up to its afterSeq; a new one has nothing yet.
  let at = resumedAt ?? -1;
  for (const s of sent) {
    if (s.kind === 'snapshot') {
      at = s.seq;
      continue;
    }
    expect(at).toBeGreaterThanOrEqual(0);
    // Every update between `at` and this one was for another session: nothing visible was skipped.
    for (let q = at + 1; q < s.u.seq; q++) {
      expect(sessionId).toBeDefined();
      expect((world.published[q - 1]!.data as { sessionId: string }).sessionId).not.toBe(sessionId);
    }
    expect(s.u).toEqual(world.published[s.u.seq - 1]);
    if (sessionId) expect((s.u.data as { sessionId: string }).sessionId).toBe(sessionId);
    at = s.u.seq;
  }
  return at;
}

describe('Subscription', () => {
  it('never leaves a silent gap: whatever is dropped, duplicated, trimmed or held back', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(event, { maxLength: 60 }),
        fc.option(fc.constantFrom('s1', 's2'), { nil: undefined }),
        fc.option(fc.nat(3), { nil: undefined }),
        async (events, sessionId, resumeAt) => {
          const world = new World();
          // Some history before the client subscribes.
          for (let i = 0; i < 3; i++) world.publish('s1');
          world.viewSeq = 2;
          const sink = new Sink();
          const sub = new Subscription(T, sessionId, world, sink, {
            onResync: () => undefined,
            onError: (err) => {
              throw err;
            },
            onDelivered: () => undefined,
          });
          let ready: { mode: string; seq: number } | undefined;
          let refused = false;
          const started = sub
            .start(resumeAt, (r) => (ready = r))
            .catch((err: unknown) => {
              if (!(err instanceof BehindError)) throw err;
              refused = true;
            });
          for (const ev of events) {
            switch (ev.e) {
              case 'publish': {
                const u = world.publish(ev.session);
                if (ev.deliver !== 'no') sub.offer(new UpdateFrame(u));
                if (ev.deliver === 'twice') sub.offer(new UpdateFrame(u));
                break;
              }
              case 'trim':
                world.retainedFrom = Math.max(
                  world.retainedFrom,
                  world.published.length - ev.keep + 1,
                );
                break;
              case 'view':
                world.viewSeq = world.published.length;
                break;
              case 'behind':
                sink.behind = true;
                break;
              case 'drain':
                sink.behind = false;
                sub.resyncAfterBehind();
                break;
              case 'tick':
                await settle();
            }
          }
          // The world settles: the view is current, the client reads, one more update arrives.
          world.viewSeq = world.published.length;
          sink.behind = false;
          sub.resyncAfterBehind();
          const last = world.publish('s1');
          sub.offer(new UpdateFrame(last));
          await started;
          if (refused) {
            // Refused for want of room: no reply, no snapshot claimed (the caller closes it).
            expect(ready).toBeUndefined();
            expect(sink.sent.filter((x) => x.kind === 'snapshot')).toEqual([]);
            return;
          }
          for (let i = 0; i < 200 && !sub.live; i++) await new Promise((r) => setTimeout(r, 1));
          await settle();
          expect(ready).toBeDefined();
          expect(sub.live).toBe(true);
          const at = check(sink.sent, world, sessionId, resumeAt);
          expect(Math.max(at, sub.lastSeq)).toBe(last.seq);
          if (resumeAt === undefined)
            expect(sink.sent[0]).toMatchObject({ kind: 'snapshot', resync: false });
        },
      ),
      { numRuns: 300 },
    );
  });

  it('resumes without a snapshot when what was missed is retained', async () => {
    const world = new World();
    for (let i = 0; i < 5; i++) world.publish('s1');
    const sink = new Sink();
    const sub = new Subscription(T, undefined, world, sink, {
      onResync: () => undefined,
      onError: () => undefined,
      onDelivered: () => undefined,
    });
    let ready: unknown;
    await sub.start(2, (r) => (ready = r));
    expect(ready).toEqual({ mode: 'resumed', seq: 5 });
    expect(sink.sent.map((s) => (s.kind === 'update' ? s.u.seq : 'snapshot'))).toEqual([3, 4, 5]);
  });

  it('resyncs with a flagged snapshot when it is not', async () => {
    const world = new World();
    for (let i = 0; i < 5; i++) world.publish('s1');
    world.retainedFrom = 5;
    world.viewSeq = 5;
    const sink = new Sink();
    const reasons: string[] = [];
    const sub = new Subscription(T, undefined, world, sink, {
      onResync: (r) => reasons.push(r),
      onError: () => undefined,
      onDelivered: () => undefined,
    });
    let ready: unknown;
    await sub.start(2, (r) => (ready = r));
    expect(ready).toEqual({ mode: 'resync', seq: 5 });
    expect(sink.sent).toEqual([{ kind: 'snapshot', seq: 5, resync: true }]);
    expect(reasons).toEqual(['not_retained']);
  });
});
