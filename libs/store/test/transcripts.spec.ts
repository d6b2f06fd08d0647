import type { TranscriptEvent } from '@baton/transcript';
import { EventStore, InvalidEntryError, type TranscriptWrite } from '../src';
import { freshPrefix, startBackend, type Backend } from './fixtures';

jest.setTimeout(60_000);

const text = (turn: string, item: string, delta: string): TranscriptEvent => ({
  type: 'text',
  turn,
  phase: 'turn',
  item,
  role: 'agent',
  delta,
});
const w = (sessionId: string, event: TranscriptEvent): TranscriptWrite => ({
  sessionId,
  executionId: 'exec-1',
  event,
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
});
