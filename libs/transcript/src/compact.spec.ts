import fc from 'fast-check';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  compactTranscript,
  foldTranscript,
  transcriptOf,
  type PlacedEvent,
  type RecordedFrame,
  type TranscriptEvent,
} from './index';

const FIXTURES = join(__dirname, '..', '..', 'acp', 'fixtures');
const RECORDINGS = readdirSync(FIXTURES).filter((f) => f.endsWith('.jsonl'));
const recorded = (name: string): TranscriptEvent[] =>
  transcriptOf(
    readFileSync(join(FIXTURES, name), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as RecordedFrame),
  ).events;

const base = {
  turn: fc.constantFrom(null, 'p1', 'p2'),
  phase: fc.constantFrom('turn' as const, 'background' as const),
};
const item = fc.constantFrom('i1', 'i2', 'i3');
const event: fc.Arbitrary<TranscriptEvent> = fc.oneof(
  fc.record({
    ...base,
    type: fc.constant('text' as const),
    item,
    role: fc.constantFrom('agent' as const, 'thought' as const),
    delta: fc.string({ maxLength: 4 }),
  }),
  fc.record(
    {
      ...base,
      type: fc.constant('tool' as const),
      item,
      toolCallId: item,
      title: fc.string({ maxLength: 3 }),
      status: fc.constantFrom('pending', 'completed'),
      output: fc.record(
        {
          mode: fc.constantFrom('append' as const, 'replace' as const),
          text: fc.string({ maxLength: 4 }),
          more: fc.integer({ min: 1, max: 9 }),
        },
        { requiredKeys: ['mode', 'text'] },
      ),
    },
    { requiredKeys: ['turn', 'phase', 'type', 'item', 'toolCallId'] },
  ),
  fc.record(
    {
      ...base,
      type: fc.constant('subagent' as const),
      item,
      sessionId: fc.constant('sub'),
      title: fc.string({ maxLength: 3 }),
      state: fc.constantFrom('running', 'done'),
    },
    { requiredKeys: ['turn', 'phase', 'type', 'item', 'sessionId'] },
  ),
  fc.record({ ...base, type: fc.constant('truncated' as const), item, more: fc.nat(9) }),
  fc.record({ ...base, type: fc.constant('turn_end' as const) }),
);
const placed = fc
  .array(
    fc.record({
      sessionId: fc.constantFrom('s1', 's2'),
      executionId: fc.constantFrom('x1', 'x2'),
      event,
    }),
    { maxLength: 60 },
  )
  .map((xs): PlacedEvent[] => xs.map((x, i) => ({ ...x, id: `${1000 + i}-0` })));

/** What each reader folds: a session's events, and a turn's of a session. */
function reads(events: readonly PlacedEvent[]): unknown {
  const out: Record<string, unknown> = {};
  for (const s of ['s1', 's2']) {
    const mine = events.filter((e) => e.sessionId === s).map((e) => e.event);
    out[s] = foldTranscript(mine);
    for (const t of [null, 'p1', 'p2'])
      out[`${s}/${t}`] = foldTranscript(mine.filter((e) => e.turn === t));
  }
  return out;
}

/** Compacts `events` as the store does: the ranges before each cut, one after another. */
function compactAt(events: readonly PlacedEvent[], cuts: readonly number[]): PlacedEvent[] {
  const out: PlacedEvent[] = [];
  let from = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    out.push(...compactTranscript(events.slice(from, Math.max(from, cut))));
    from = Math.max(from, cut);
  }
  return [...out, ...events.slice(from)];
}

describe('compactTranscript', () => {
  it('folds to the same items per session and per turn, compacted at any points', () => {
    fc.assert(
      fc.property(placed, fc.array(fc.nat(60), { maxLength: 3 }), (events, cuts) => {
        const compacted = compactAt(events, cuts);
        expect(reads(compacted)).toEqual(reads(events));
        // Places stay in stream order, each a place the range had: cursors keep their meaning.
        const ids = compacted.map((e) => e.id);
        expect(ids).toEqual(events.map((e) => e.id).filter((id) => ids.includes(id)));
      }),
      { numRuns: 500 },
    );
  });

  it("keeps an item's text and output in order across turns and executions", () => {
    const at = (i: number, turn: string, executionId: string, event: TranscriptEvent) => ({
      id: `${i}-0`,
      sessionId: 's1',
      executionId,
      event: { ...event, turn } as TranscriptEvent,
    });
    const say = (delta: string): TranscriptEvent => ({
      type: 'text',
      turn: null,
      phase: 'turn',
      item: 'i1',
      role: 'agent',
      delta,
    });
    const out = (text: string): TranscriptEvent => ({
      type: 'tool',
      turn: null,
      phase: 'turn',
      item: 't1',
      toolCallId: 't1',
      output: { mode: 'append', text },
    });
    const events = [
      at(1, 'p1', 'x1', say('a')),
      at(2, 'p1', 'x1', out('1')),
      at(3, 'p2', 'x1', say('b')),
      at(4, 'p2', 'x1', out('2')),
      at(5, 'p1', 'x1', say('c')),
      at(6, 'p1', 'x1', out('3')),
      at(7, 'p1', 'x2', say('d')),
      at(8, 'p1', 'x1', say('e')),
      at(9, 'p1', 'x1', say('f')),
    ];
    const compacted = compactTranscript(events);
    expect(reads(compacted)).toEqual(reads(events));
    expect(compacted.at(-1)).toMatchObject({ id: '8-0', lastId: '9-0' });
  });

  it.each(RECORDINGS)('folds %s to the same items with far fewer events', (name) => {
    const events: PlacedEvent[] = recorded(name).map((event, i) => ({
      id: `${i + 1}-0`,
      sessionId: 's',
      executionId: 'x',
      event,
    }));
    for (const cut of [0, events.length >> 1, events.length])
      expect(reads(compactAt(events, [cut]))).toEqual(reads(events));
    const whole = compactTranscript(events);
    expect(whole.length).toBeLessThanOrEqual(events.length);
    const last = whole.find((e) => e.lastId !== e.id);
    if (last) expect(events.findIndex((e) => e.id === last.lastId)).toBeGreaterThan(0);
  });
});
