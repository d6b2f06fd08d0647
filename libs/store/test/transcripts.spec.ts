import { foldTranscript, type TranscriptEvent } from '@baton/transcript';
import fc from 'fast-check';
import { textEvent as text } from '@baton/testing';
import {
  EventStore,
  InvalidEntryError,
  type StoredTranscriptEvent,
  type TranscriptWrite,
} from '../src';
import { freshPrefix, startBackend, type Backend } from './fixtures';

jest.setTimeout(60_000);

const w = (sessionId: string, event: TranscriptEvent): TranscriptWrite => ({
  sessionId,
  executionId: 'exec-1',
  event,
});

const tool = (turn: string, item: string, status: string, out: string): TranscriptEvent => ({
  type: 'tool',
  turn,
  phase: 'turn',
  item,
  toolCallId: item,
  status,
  output: { mode: 'append', text: out },
});
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const msOf = (id: string) => Number(id.split('-')[0]);
const SESSIONS = ['s1', 's2'];
const TURNS = ['p1', 'p2'];

/** A session's events read page by page from the start, as the gateway's readers do. */
async function readAll(store: EventStore, taskId: string, sessionId: string, limit: number) {
  const out: StoredTranscriptEvent[] = [];
  let after = '0-0';
  for (;;) {
    const page = await store.transcripts.read(taskId, { after, limit, sessionId });
    out.push(...page.items);
    if (page.lastId === after) return out;
    after = page.lastId;
  }
}

/** What each reader folds: every session whole, and every turn of it. */
async function reads(store: EventStore, taskId: string, limit: number) {
  const out: Record<string, unknown> = {};
  for (const s of SESSIONS) {
    out[s] = foldTranscript((await readAll(store, taskId, s, limit)).map((e) => e.event));
    for (const turn of TURNS)
      out[`${s}/${turn}`] = foldTranscript(
        (await store.transcripts.readTurn(taskId, s, turn)).map((e) => e.event),
      );
  }
  return out;
}

/** The same, of the events as written. */
function written(writes: readonly TranscriptWrite[]) {
  const out: Record<string, unknown> = {};
  for (const s of SESSIONS) {
    const mine = writes.filter((x) => x.sessionId === s).map((x) => x.event);
    out[s] = foldTranscript(mine);
    for (const turn of TURNS)
      out[`${s}/${turn}`] = foldTranscript(mine.filter((e) => e.turn === turn));
  }
  return out;
}

const write = fc.record({
  sessionId: fc.constantFrom(...SESSIONS),
  executionId: fc.constant('exec-1'),
  event: fc.oneof(
    fc
      .tuple(fc.constantFrom(...TURNS), fc.constantFrom('m1', 'm2'), fc.string({ maxLength: 3 }))
      .map(([turn, item, d]) => text(turn, item, d)),
    fc
      .tuple(
        fc.constantFrom(...TURNS),
        fc.constantFrom('t1', 't2'),
        fc.constantFrom('pending', 'completed'),
        fc.string({ maxLength: 3 }),
      )
      .map(([turn, item, status, out]) => tool(turn, item, status, out)),
  ),
});

describe.each(['single', 'cluster'] as const)('transcripts on %s Redis', (kind) => {
  let backend: Backend;
  let store: EventStore;
  const t = 'acme/task-tr';

  beforeAll(async () => {
    backend = await startBackend(kind);
  });
  afterAll(async () => {
    await backend?.stop();
  });
  beforeEach(() => {
    store = new EventStore(backend.client(), { shards: 16, prefix: freshPrefix() });
  });
  afterEach(async () => {
    await store.close();
  });

  it('appends a window in one call and pages through it with a cursor, by session', async () => {
    await store.transcripts.append(t, [
      w('s1', {
        type: 'prompt',
        turn: 'p1',
        phase: 'turn',
        item: 'u1',
        promptId: 'p1',
        content: [],
      }),
      w('s1', text('p1', 'm2', 'Hello, ')),
      w('s2', text('q1', 'm1', 'other session')),
    ]);
    await store.transcripts.append(t, [
      w('s1', text('p1', 'm2', 'world.')),
      w('s1', { type: 'turn_end', turn: 'p1', phase: 'turn', stopReason: 'end_turn' }),
      w('s1', text('p2', 'm3', 'next turn')),
    ]);
    const first = await store.transcripts.read(t, { sessionId: 's1', limit: 2 });
    expect(first.items.map((e) => e.event.type)).toEqual(['prompt', 'text']);
    const second = await store.transcripts.read(t, {
      sessionId: 's1',
      after: first.lastId,
      limit: 3,
    });
    // The cursor moved past s2's entry: it is skipped, not read again.
    expect(second.items.map((e) => e.event.type)).toEqual(['text', 'turn_end']);
    const rest = await store.transcripts.read(t, { sessionId: 's1', after: second.lastId });
    expect(rest.items.map((e) => e.event)).toEqual([text('p2', 'm3', 'next turn')]);
    const end = await store.transcripts.read(t, { after: rest.lastId });
    expect(end).toEqual({ items: [], lastId: rest.lastId });

    const turn = await store.transcripts.readTurn(t, 's1', 'p1');
    expect(turn.map((e) => e.event.type)).toEqual(['prompt', 'text', 'text', 'turn_end']);
    expect(turn.every((e) => e.sessionId === 's1' && e.executionId === 'exec-1')).toBe(true);
  });

  it('refuses an invalid event and appends nothing of its window', async () => {
    await expect(
      store.transcripts.append(t, [
        w('s1', text('p1', 'm1', 'ok')),
        w('s1', { type: 'text', turn: 'p1' } as unknown as TranscriptEvent),
      ]),
    ).rejects.toBeInstanceOf(InvalidEntryError);
    expect((await store.transcripts.read(t)).items).toEqual([]);
  });

  it('bounds the stream by length and keeps it for the retention', async () => {
    const bounded = new EventStore(backend.client(), {
      prefix: freshPrefix(),
      transcriptMaxLen: 10,
      transcriptRetentionMs: 60_000,
    });
    for (let i = 0; i < 150; i++)
      await bounded.transcripts.append(t, [w('s1', text('p1', 'm1', `${i}`))]);
    const page = await bounded.transcripts.read(t, { limit: 1_000 });
    // MAXLEN ~ trims whole macro nodes (100 entries by default).
    expect(page.items.length).toBeLessThanOrEqual(10 + 100);
    expect(page.items.at(-1)?.event).toEqual(text('p1', 'm1', '149'));
    const ttl = Number(await backend.client().pttl(bounded.keys.transcript(t)));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
    await bounded.close();
  });

  it('records the last event its bounds removed: a cursor before it is told (trimmedAfter)', async () => {
    const byLength = new EventStore(backend.client(), {
      prefix: freshPrefix(),
      transcriptMaxLen: 10,
    });
    // Under the bound and its batch (MAXLEN ~ lets it grow by a radix node): nothing goes.
    await byLength.transcripts.append(
      t,
      Array.from({ length: 109 }, (_, i) => w('s1', text('p1', 'm1', `${i}`))),
    );
    const ids = (await byLength.transcripts.read(t, { limit: 1_000 })).items.map((e) => e.id);
    expect(ids).toHaveLength(109);
    expect(await byLength.transcripts.trimmedAfter(t, '0-0')).toBeNull();
    const last = await byLength.transcripts.append(t, [w('s1', text('p1', 'm1', '109'))]);
    const left = (await byLength.transcripts.read(t, { limit: 1_000 })).items.map((e) => e.id);
    expect(left).toEqual([...ids.slice(100), last]);
    // Exactly the last event removed: a cursor there lost nothing, one before it did.
    expect(await byLength.transcripts.trimmedAfter(t, '0-0')).toBe(ids[99]);
    expect(await byLength.transcripts.trimmedAfter(t, ids[98]!)).toBe(ids[99]);
    expect(await byLength.transcripts.trimmedAfter(t, ids[99]!)).toBeNull();
    expect(await byLength.transcripts.trimmedAfter(t, ids[105]!)).toBeNull();
    await byLength.close();

    const byAge = new EventStore(backend.client(), {
      prefix: freshPrefix(),
      transcriptRetentionMs: 2_000,
    });
    await byAge.transcripts.append(t, [
      w('s1', text('p1', 'm1', 'old 1')),
      w('s1', text('p1', 'm1', 'old 2')),
    ]);
    const old = (await byAge.transcripts.read(t)).items.map((e) => e.id);
    // Each append keeps the stream alive for the retention; by the third (Redis' clock), the
    // first two are older than it, the second is not.
    await pause(1_200);
    await byAge.transcripts.append(t, [w('s1', text('p1', 'm1', 'middle'))]);
    await pause(1_200);
    await byAge.transcripts.append(t, [w('s1', text('p1', 'm1', 'new'))]);
    expect((await byAge.transcripts.read(t)).items.map((e) => e.event)).toEqual([
      text('p1', 'm1', 'middle'),
      text('p1', 'm1', 'new'),
    ]);
    expect(await byAge.transcripts.trimmedAfter(t, '0-0')).toBe(old[1]);
    expect(await byAge.transcripts.trimmedAfter(t, old[0]!)).toBe(old[1]);
    expect(await byAge.transcripts.trimmedAfter(t, old[1]!)).toBeNull();
    await byAge.close();
  });

  it('reads the same items, compacted at any point, and appended to after', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(write, { minLength: 1, maxLength: 6 }), {
          minLength: 1,
          maxLength: 6,
        }),
        fc.array(write, { maxLength: 6 }),
        fc.nat(),
        fc.integer({ min: 1, max: 4 }),
        async (windows, later, cutAt, limit) => {
          const s = new EventStore(backend.client(), { shards: 4, prefix: freshPrefix() });
          try {
            for (const window of windows) {
              await s.transcripts.append(t, window);
              await pause(2);
            }
            const all = windows.flat();
            const before = await reads(s, t, limit);
            expect(before).toEqual(written(all));
            const ids = (await s.transcripts.read(t, { limit: 1_000 })).items.map((e) => e.id);
            const cut = msOf(ids[cutAt % ids.length]!) + 1;
            const compacted = await s.transcripts.compact(t, cut);
            expect(compacted).toBe(ids.filter((id) => msOf(id) < cut).length);
            // The stream keeps only what is not compacted; the compacted front holds the rest.
            const left = await s.redis.xrange(s.keys.transcript(t), '-', '+');
            expect(left.map(([id]) => id)).toEqual(ids.filter((id) => msOf(id) >= cut));
            expect(await reads(s, t, limit)).toEqual(before);
            // A cursor a page hands out is never inside an item it returned whole: a reader
            // paging through the compacted front is told of no gap.
            for (let after = '0-0'; ;) {
              const page = await s.transcripts.read(t, { after, limit });
              if (page.items.length === 0) break;
              expect(await s.transcripts.lostAfter(t, page.lastId)).toBeNull();
              after = page.lastId;
            }
            // Ids stay cursors: every one read is one the transcript had, in order.
            const readIds = (await readAll(s, t, 's1', limit)).map((e) => e.id);
            expect(readIds).toEqual(ids.filter((id) => readIds.includes(id)));
            await s.transcripts.append(t, later);
            expect(await reads(s, t, limit)).toEqual(written([...all, ...later]));
            expect(await s.transcripts.trimmedAfter(t, '0-0')).toBeNull();
          } finally {
            await s.close();
          }
        },
      ),
      { numRuns: kind === 'single' ? 40 : 10 },
    );
  });

  it('merges a turn of deltas into whole items, far fewer bytes', async () => {
    const writes: TranscriptWrite[] = [];
    for (let i = 0; i < 300; i++) writes.push(w('s1', text('p1', 'm1', `word ${i} `)));
    for (let i = 0; i < 100; i++) writes.push(w('s1', tool('p1', 't1', 'pending', `line ${i}\n`)));
    for (let i = 0; i < writes.length; i += 20)
      await store.transcripts.append(t, writes.slice(i, i + 20));
    const memory = async (key: string) =>
      Number(await store.redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
    const raw = await memory(store.keys.transcript(t));
    expect(await store.transcripts.compact(t, Date.now() + 1_000)).toBe(400);
    const events = (await store.transcripts.read(t, { limit: 1_000 })).items;
    expect(events.map((e) => e.event.type)).toEqual(['text', 'tool']);
    expect(foldTranscript(events.map((e) => e.event))).toEqual(
      foldTranscript(writes.map((x) => x.event)),
    );
    const kept =
      (await memory(store.keys.transcriptCompacted(t))) + (await memory(store.keys.transcript(t)));
    expect(kept).toBeLessThan(raw / 10);
    // Nothing older is left to compact.
    expect(await store.transcripts.compact(t, Date.now() + 1_000)).toBe(0);
  });

  it('tells a reader whose cursor is inside a compacted item, and goes on after it', async () => {
    await store.transcripts.append(t, [w('s1', text('p1', 'm1', 'Hel'))]);
    await store.transcripts.append(t, [w('s1', text('p1', 'm1', 'lo'))]);
    await store.transcripts.append(t, [
      w('s1', text('p1', 'm1', ', world')),
      w('s1', tool('p1', 't1', 'completed', 'ok')),
    ]);
    const ids = (await store.transcripts.read(t)).items.map((e) => e.id);
    const inside = ids[1]!;
    const clean = ids[2]!;
    expect(await store.transcripts.compactedAcross(t, inside)).toBeNull();
    expect(await store.transcripts.compact(t, Date.now() + 1_000)).toBe(4);
    // The message's rest lies before this cursor now: said, up to the last delta merged.
    expect(await store.transcripts.compactedAcross(t, inside)).toBe(ids[2]);
    expect(await store.transcripts.compactedAcross(t, clean)).toBeNull();
    expect(await store.transcripts.compactedAcross(t, '0-0')).toBeNull();
    // Items begun after the cursor are read whole; the cursor moves to the front's end.
    const page = await store.transcripts.read(t, { after: inside });
    expect(page.items.map((e) => [e.id, e.event])).toEqual([
      [ids[3], tool('p1', 't1', 'completed', 'ok')],
    ]);
    expect(page.lastId).toBe(ids[3]);
    // The page says so itself, read off the chunk it came from: a compaction between a reader's
    // check and its read is not a silent jump.
    expect(page.compactedThrough).toBe(ids[2]);
    const after = await store.transcripts.read(t, { after: clean });
    expect(after.items.map((e) => e.id)).toEqual([ids[3]]);
    expect(after.compactedThrough).toBeUndefined();
    expect((await store.transcripts.read(t)).compactedThrough).toBeUndefined();
    const whole = await store.transcripts.read(t);
    expect(whole.items.map((e) => e.event)).toEqual([
      text('p1', 'm1', 'Hello, world'),
      tool('p1', 't1', 'completed', 'ok'),
    ]);
    expect(await store.transcripts.issued(t, ids[3]!)).toBe(true);
    // History positions of the time range: the whole items' places.
    const positions = await store.transcripts.positions(t, 0, Date.now() + 1_000);
    expect(positions.get('s1')).toEqual({ first: ids[0], last: ids[3] });
  });

  it('compacts a front once when two compact at the same time', async () => {
    const writes: TranscriptWrite[] = [];
    for (let i = 0; i < 50; i++) writes.push(w(SESSIONS[i % 2]!, text('p1', `m${i % 3}`, `${i}`)));
    for (let i = 0; i < writes.length; i += 5) {
      await store.transcripts.append(t, writes.slice(i, i + 5));
      await pause(1);
    }
    const other = new EventStore(backend.client(), { shards: 16, prefix: store.keys.prefix });
    const done = await Promise.all([
      store.transcripts.compact(t, Date.now() + 1_000),
      other.transcripts.compact(t, Date.now() + 1_000),
    ]);
    await other.close();
    expect(done[0]! + done[1]!).toBe(50);
    expect(await reads(store, t, 7)).toEqual(written(writes));
  });

  /** `fn` on a store of its own (a fresh prefix) that keeps transcripts `retentionMs`. */
  const withRetention = async (retentionMs: number, fn: (s: EventStore) => Promise<void>) => {
    const s = new EventStore(backend.client(), {
      prefix: freshPrefix(),
      transcriptRetentionMs: retentionMs,
    });
    try {
      await fn(s);
    } finally {
      await s.close();
    }
  };

  it('says what the retention removed of the compacted front', async () => {
    await withRetention(1_000, async (short) => {
      await short.transcripts.append(t, [w('s1', text('p1', 'm1', 'old'))]);
      const old = (await short.transcripts.read(t)).items[0]!.id;
      await pause(300);
      expect(await short.transcripts.compact(t, Date.now() + 1_000)).toBe(1);
      expect(await short.transcripts.trimmedAfter(t, '0-0')).toBeNull();
      // Older than the retention, its key not yet expired (1 s after the compaction).
      await pause(800);
      await short.transcripts.append(t, [w('s1', text('p1', 'm2', 'new'))]);
      await pause(5);
      // The next compaction removes the chunk, and says so.
      expect(await short.transcripts.compact(t, Date.now() + 1_000)).toBe(1);
      expect(await short.transcripts.trimmedAfter(t, '0-0')).toBe(old);
      expect((await short.transcripts.read(t)).items.map((e) => e.event)).toEqual([
        text('p1', 'm2', 'new'),
      ]);
      const ttl = Number(await short.redis.pttl(short.keys.transcriptCompacted(t)));
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(1_000);
    });
  });

  it('keeps the compacted front as long as the stream it is the front of', async () => {
    await withRetention(10_000, async (kept) => {
      await kept.transcripts.append(t, [w('s1', text('p1', 'm1', 'old'))]);
      await pause(5);
      expect(await kept.transcripts.compact(t, Date.now() + 1_000)).toBe(1);
      await pause(500);
      // An append renews the stream's life, and its front's with it: an expired front would
      // leave no record of what it held.
      await kept.transcripts.append(t, [w('s1', text('p1', 'm2', 'new'))]);
      const ttl = async (key: string) => Number(await kept.redis.pttl(key));
      const front = await ttl(kept.keys.transcriptCompacted(t));
      const stream = await ttl(kept.keys.transcript(t));
      expect(front).toBeGreaterThanOrEqual(stream - 100);
    });
  });
});
