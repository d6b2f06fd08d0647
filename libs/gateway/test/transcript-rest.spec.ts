// The transcript over REST against a real gateway and Redis: paging with the cursor (other
// sessions' entries in between), a turn whole with its items folded, and what is refused.
import { taskKey, type TranscriptEntry } from '@baton/protocol';
import { foldTranscript } from '@baton/transcript';
import {
  FakeWorker,
  promptEvent as prompt,
  startStack,
  textEvent as text,
  tokenFor,
  type Stack,
} from '@baton/testing';
import { withTranscriptBound } from './support/transcript-bound';
import { appendBetween, RestReader, type TranscriptPage } from './support/transcript-rest';

jest.setTimeout(60_000);

let stack: Stack;
let rest: RestReader;
const tok = tokenFor('tr');
const TASK = 'tr-1';
const KEY = taskKey('tr', TASK);
const S = `/v1/tasks/${TASK}/sessions/s1/transcript`;
type Page = TranscriptPage;

const get = (path: string) => rest.get(path);
/** Every page from the start, `limit` at a time, until an empty one. */
const pageAll = (limit: number) => rest.pageAll(S, limit);

const s1Events = [
  prompt('k1'),
  text('k1', 'm1', 'Hello'),
  text('k1', 'm1', ', world'),
  prompt('k2'),
  text('k2', 'm2', 'Second'),
];

beforeAll(async () => {
  stack = await startStack({ gateways: 1, projectors: 1 });
  rest = new RestReader(stack.gateways[0]!.url, tok);
  // The task exists for the tenant once its owner wrote to it.
  await new FakeWorker(stack.store, KEY, 's1').start();
  // Session s2's entries sit between s1's: a page of s1 reads on past them.
  await appendBetween(stack.store, KEY, s1Events, (i) =>
    Array.from({ length: 3 }, () => text('o', `o${i}`, 'other')),
  );
});
afterAll(() => stack?.stop());

describe('the transcript over REST', () => {
  it('pages through one session with the cursor, each event once, in order', async () => {
    for (const limit of [1, 2, 100]) {
      const { pages, events } = await pageAll(limit);
      expect(events.map((e) => e.event)).toEqual(s1Events);
      expect(events.every((e) => e.executionId === 'x1')).toBe(true);
      for (const p of pages) expect(p.events.length).toBeLessThanOrEqual(limit);
      // Ids ascend, and each page's cursor is at or past its last event.
      const ids = events.map((e) => e.id);
      expect([...ids].sort(cmp)).toEqual(ids);
      expect(new Set(ids).size).toBe(ids.length);
    }
    // The default limit, and the cursor passed back reads nothing more.
    const all = (await get(S)).body as unknown as Page;
    expect(all.events).toHaveLength(s1Events.length);
    expect(((await get(`${S}?after=${all.cursor}`)).body as unknown as Page).events).toEqual([]);
  });

  it('a session with no transcript is an empty page', async () => {
    expect(await get(`/v1/tasks/${TASK}/sessions/none/transcript`)).toEqual({
      status: 200,
      body: { events: [], cursor: expect.any(String) },
    });
  });

  it('fetches a turn whole, its items folded; a turn without events is a 404', async () => {
    const r = await get(`${S}/turns/k1`);
    expect(r.status).toBe(200);
    const events = (r.body.events as TranscriptEntry[]).map((e) => e.event);
    expect(events).toEqual(s1Events.slice(0, 3));
    expect(r.body).toMatchObject({ promptId: 'k1', items: foldTranscript(events) });
    expect((r.body.items as Array<{ text?: string }>)[1]!.text).toBe('Hello, world');
    const none = await get(`${S}/turns/nope`);
    expect(none.status).toBe(404);
    expect(none.body).toEqual({
      error: { code: 'not_found', message: 'turn nope of session s1 not found' },
    });
  });

  it('refuses a malformed cursor or limit with a 400 that says why', async () => {
    for (const q of [
      'after=yesterday',
      'after=1-2-3',
      'after=99999999999999999999-0',
      'limit=0',
      'limit=501',
      'limit=ten',
      'from=0-0',
    ]) {
      const r = await get(`${S}?${q}`);
      expect({ q, status: r.status }).toEqual({ q, status: 400 });
      expect(r.body).toMatchObject({ error: { code: 'invalid_message' } });
    }
    // Well formed, but past anything the transcript handed out: not a cursor of it.
    const future = await get(`${S}?after=${Date.now() + 3_600_000}-0`);
    expect(future.status).toBe(400);
    expect(future.body).toMatchObject({
      error: { message: expect.stringContaining('past the end of this transcript') },
    });
    expect((await get(`${S}?after=yesterday`)).body).toMatchObject({
      error: { message: expect.stringContaining('transcript cursor') },
    });
  });
});

function cmp(a: string, b: string): number {
  const [am, as] = a.split('-').map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split('-').map(BigInt) as [bigint, bigint];
  return am === bm ? Number(as - bs) : am < bm ? -1 : 1;
}

describe('the history query', () => {
  it("gives each session's transcript cursor range in the time range", async () => {
    const { events } = await pageAll(100);
    const now = Date.now();
    const r = await get(`/v1/tasks/${TASK}/history?since=${now - 3_600_000}&until=${now}`);
    expect(r.status).toBe(200);
    const s1 = (r.body.sessions as Array<{ sessionId: string; transcript?: unknown }>).find(
      (s) => s.sessionId === 's1',
    );
    expect(s1?.transcript).toEqual({ first: events[0]!.id, last: events.at(-1)!.id });
    // From the ms of the last event on: only it.
    const lastMs = Number(events.at(-1)!.id.split('-')[0]);
    const late = await get(`/v1/tasks/${TASK}/history?since=${lastMs}&until=${now}`);
    const s1Late = (late.body.sessions as Array<{ sessionId: string; transcript?: unknown }>).find(
      (s) => s.sessionId === 's1',
    );
    expect((s1Late?.transcript as { last: string } | undefined)?.last).toBe(events.at(-1)!.id);
    // A range before any event: none.
    const firstMs = Number(events[0]!.id.split('-')[0]);
    const early = await get(
      `/v1/tasks/${TASK}/history?since=${firstMs - 60_000}&until=${firstMs - 1}`,
    );
    expect(early.status).toBe(200);
    for (const s of early.body.sessions as Array<{ transcript?: unknown }>)
      expect(s.transcript).toBeUndefined();
  });
});

it('a page after a cursor behind the retention says what was lost (gap), then goes on', async () => {
  const task = 'tr-gap';
  const key = taskKey('tr', task);
  await new FakeWorker(stack.store, key, 's1').start();
  // A worker whose transcript bound is 10 events: its append trims the stream in Redis.
  const small = withTranscriptBound(stack.store, 10);
  const writes = Array.from({ length: 130 }, (_, i) => ({
    sessionId: 's1',
    executionId: 'x1',
    event: text('k1', 'm1', `${i};`),
  }));
  await stack.store.transcripts.append(key, writes.slice(0, 20));
  const cursor = (await stack.store.transcripts.read(key, { limit: 100 })).items[4]!.id;
  await small.transcripts.append(key, writes.slice(20));
  const left = (await stack.store.transcripts.read(key, { limit: 200 })).items.map((e) => e.id);
  expect(left).toHaveLength(10);

  const r = await get(`/v1/tasks/${task}/sessions/s1/transcript?after=${cursor}&limit=100`);
  expect(r.status).toBe(200);
  expect(r.body.gap).toMatchObject({ reason: 'retention', after: cursor });
  const through = (r.body.gap as { through: string }).through;
  expect(r.body.cursor).not.toBe(through);
  const page = r.body as unknown as Page;
  expect(page.events.map((e) => e.id)).toEqual(left);
  // Past the gap, the next page says nothing of it.
  const next = await get(`/v1/tasks/${task}/sessions/s1/transcript?after=${page.cursor}`);
  expect(next.body).toEqual({ events: [], cursor: page.cursor });
  // The last event removed is the one just before what is left: its neighbour in the old stream.
  const before = await get(`/v1/tasks/${task}/sessions/s1/transcript?after=${through}`);
  expect(before.body.gap).toBeUndefined();
  expect((before.body as unknown as Page).events.map((e) => e.id)).toEqual(left);
});
