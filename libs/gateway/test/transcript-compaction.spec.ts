// The transcript read over REST and /ws before and after its front is compacted (the store's
// transcripts.compact, as the projector does behind its hot window): the same items, whole items
// then deltas from the start, and a cursor inside a compacted item told what it lost.
import { BatonClient, type TranscriptEntry } from '@baton/client';
import { taskKey } from '@baton/protocol';
import { foldTranscript, type TranscriptEvent } from '@baton/transcript';
import {
  FakeWorker,
  promptEvent as prompt,
  startStack,
  textEvent as text,
  tokenFor,
  waitFor,
  type Stack,
} from '@baton/testing';
import { appendBetween, RestReader } from './support/transcript-rest';

jest.setTimeout(120_000);

let stack: Stack;
let rest: RestReader;
const tok = tokenFor('tc');
const TASK = 'tc-1';
const KEY = taskKey('tc', TASK);
const S = `/v1/tasks/${TASK}/sessions/s1/transcript`;

const base = { phase: 'turn' as const };
const tool = (turn: string, status: string, out: string): TranscriptEvent => ({
  ...base,
  type: 'tool',
  turn,
  item: 't1',
  toolCallId: 't1',
  status,
  output: { mode: 'append', text: out },
});
const s1Events = [
  prompt('k1'),
  text('k1', 'm1', 'Hel'),
  tool('k1', 'pending', 'a'),
  text('k1', 'm1', 'lo'),
  tool('k1', 'completed', 'b'),
  text('k1', 'm1', ', world'),
  { ...base, type: 'turn_end', turn: 'k1', stopReason: 'end_turn' } as TranscriptEvent,
  prompt('k2'),
  text('k2', 'm2', 'Sec'),
  text('k2', 'm2', 'ond'),
];
const later = [text('k2', 'm2', ' and'), text('k2', 'm2', ' more')];

async function get(path: string) {
  const r = await rest.get(path);
  expect(r.status).toBe(200);
  return r.body;
}

/** Every page from `after`, `limit` at a time, until an empty one. */
const pageAll = (limit: number, after?: string) => rest.pageAll(S, limit, after);

const items = (es: readonly TranscriptEntry[]) => foldTranscript(es.map((e) => e.event));

/** A /ws reader from `after` (the start by default) until it has `n` events. */
async function wsRead(n: number, after?: string) {
  const client = new BatonClient({ backoff: { initialMs: 20, maxMs: 100 } });
  await client.connect(`${stack.gateways[0]!.wsUrl}/ws`, tok);
  const got: TranscriptEntry[] = [];
  const gaps: unknown[] = [];
  try {
    const reader = client.transcript(TASK, 's1', {
      ...(after ? { after } : {}),
      onEvents: (es) => got.push(...es),
      onGap: (g) => gaps.push(g),
    });
    await reader.ready;
    await waitFor(() => got.length >= n, `${n} events over /ws`);
    await new Promise((r) => setTimeout(r, 200));
    return { events: got, gaps };
  } finally {
    await client.close();
  }
}

beforeAll(async () => {
  stack = await startStack({ gateways: 1, projectors: 1 });
  rest = new RestReader(stack.gateways[0]!.url, tok);
  await new FakeWorker(stack.store, KEY, 's1').start();
  await appendBetween(stack.store, KEY, s1Events, (i) => [text('o', `o${i}`, 'other')]);
});
afterAll(() => stack?.stop());

it('reads the same items over REST and /ws before and after compaction', async () => {
  const before = (await pageAll(2)).events;
  expect(before.map((e) => e.event)).toEqual(s1Events);
  const turn = await get(`${S}/turns/k1`);
  const ws = await wsRead(s1Events.length);
  expect(ws.events).toEqual(before);
  const ids = before.map((e) => e.id);

  expect(await stack.store.transcripts.compact(KEY, Date.now() + 1_000)).toBe(2 * s1Events.length);

  for (const limit of [1, 2, 100]) {
    const { events } = await pageAll(limit);
    expect(items(events)).toEqual(items(before));
    // Whole items at the places of their first events.
    expect(events.map((e) => e.id)).toEqual([ids[0], ids[1], ids[2], ids[6], ids[7], ids[8]]);
  }
  const turnAfter = await get(`${S}/turns/k1`);
  expect(turnAfter.items).toEqual(turn.items);
  expect((turnAfter.events as unknown[]).length).toBe(4);
  const wsAfter = await wsRead(6);
  expect(items(wsAfter.events)).toEqual(items(before));
  expect(wsAfter.gaps).toEqual([]);

  // Appended after: whole items from the start, then the new deltas.
  for (const e of later)
    await stack.store.transcripts.append(KEY, [{ sessionId: 's1', executionId: 'x1', event: e }]);
  const rest = (await pageAll(3)).events;
  expect(rest.slice(6).map((e) => e.event)).toEqual(later);
  expect(items(rest)).toEqual(foldTranscript([...s1Events, ...later]));
  const wsRest = await wsRead(8);
  expect(wsRest.events).toEqual(rest);
  // A cursor at an item's end reads on as before, nothing lost.
  const clean = await pageAll(100, ids[7]);
  expect(clean.pages[0]!.gap).toBeUndefined();
  expect(clean.events.map((e) => e.event)).toEqual([text('k2', 'm2', 'Second'), ...later]);
});

it('tells a reader whose cursor is inside a compacted item what it lost, then reads on', async () => {
  const ids = (await pageAll(100)).events;
  // ids[1] is message m1 (merged through its last delta); its deltas' cursors are gone inside it.
  const message = ids[1]!;
  expect(message.event).toEqual(text('k1', 'm1', 'Hello, world'));
  const tool1 = ids[2]!;
  // A cursor just after m1's first delta: m1's id, and before the tool's.
  const inside = message.id;
  const { pages, events } = await pageAll(100, inside);
  const through = await stack.store.transcripts.compactedAcross(KEY, inside);
  expect(through).not.toBeNull();
  expect(pages[0]!.gap).toEqual({ reason: 'retention', after: inside, through });
  expect(events[0]!.id).toBe(tool1.id);
  expect(events.map((e) => e.event)).toEqual(ids.slice(2).map((e) => e.event));

  const ws = await wsRead(events.length, inside);
  expect(ws.gaps).toEqual([{ reason: 'retention', after: inside, through }]);
  expect(ws.events).toEqual(events);
});
