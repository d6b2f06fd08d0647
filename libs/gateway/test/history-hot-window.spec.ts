import { entryTime, taskHistory } from '@baton/activity';
import { taskKey } from '@baton/protocol';
import type { StoredEntry, StoredTranscriptEvent, TranscriptWrite } from '@baton/store';
import { foldTranscript } from '@baton/transcript';
import { History } from '../src/history/history';
import { expectHistoryAsFolded, startAdmittedTurn } from './support/history-turns';
import { Client, FakeWorker, startStack, tokenFor, waitFor, type Stack } from '@baton/testing';

/**
 * A hot window shorter than the retention, against real processes: the owner trims the task
 * stream's raw entries behind it while its checkpoints and history spans stay, and the history
 * query still answers, for ranges that start before what the stream holds, exactly what folding
 * every entry from the task's start answers. The transcript older than the hot window is kept
 * compacted by the owner too, and reads back the same items.
 */

jest.setTimeout(60_000);

let stack: Stack;
const TENANT = 'acme';
const TASK = 'hot';
const KEY = taskKey(TENANT, TASK);
const HOT_MS = 1_500;

beforeAll(async () => {
  stack = await startStack({
    gateways: 1,
    projectorEnv: {
      PROJECTOR_SNAPSHOT_ENTRIES: '3',
      PROJECTOR_SNAPSHOT_MS: '100',
      // Checkpoints every hot window / 4 = 375 ms; nothing leaves the retention in the test.
      PROJECTOR_RETENTION_MS: '600000',
      PROJECTOR_HOT_WINDOW_MS: String(HOT_MS),
    },
  });
});
afterAll(() => stack?.stop());

it('trims raw entries behind the hot window, and the history still answers what folding every entry answers', async () => {
  const c = await Client.connect(stack.gateways[0]!.wsUrl, tokenFor(TENANT));
  const w = new FakeWorker(stack.store, KEY, 's1', 'x1');
  await w.start();
  // Every entry, read as it comes (before a trim can take it): the oracle's input.
  const entries: StoredEntry[] = [];
  const collect = async () => {
    for await (const page of stack.store.readTaskPages(KEY, entries.at(-1)?.id ?? '0-0'))
      entries.push(...page.items);
  };
  // A transcript as a worker writes it, a turn's text in many deltas (of a session the history
  // has not, so the answers compared stay those of the stream alone).
  const written: TranscriptWrite[] = [];
  const say = async (turn: number, delta: string) => {
    const write: TranscriptWrite = {
      sessionId: 'talk',
      executionId: 'x1',
      event: {
        type: 'text',
        turn: `t${turn}`,
        phase: 'turn',
        item: `m${turn}`,
        role: 'agent',
        delta,
      },
    };
    written.push(write);
    await stack.store.transcripts.append(KEY, [write]);
  };
  for (let turn = 1; turn <= 6; turn++) {
    await startAdmittedTurn(c, w, TASK, turn);
    for (let i = 0; i < 5; i++) await say(turn, `word ${i} `);
    await w.fact('turn.ended', { admissionGeneration: turn, stopReason: 'end_turn' });
    await collect();
    await new Promise((r) => setTimeout(r, 500));
    // A step after the pause: its snapshot is kept as a checkpoint, and trims.
    await w.fact('foreground.output', { channel: 'thought' });
    await collect();
  }
  await c.close();
  // Wait out the hot window, then one more step: the owner's trim cuts the stream behind it.
  await new Promise((r) => setTimeout(r, HOT_MS + 200));
  await w.fact('foreground.output', { channel: 'message' });
  await collect();
  const lastId = await stack.store.lastId(KEY);
  await waitFor(async () => (await stack.store.snapshots.read(KEY))?.id === lastId, 'all folded');
  await waitFor(() => stack.store.wasTrimmed(KEY), 'the stream trimmed behind the hot window');
  // The transcript's front compacted: whole messages there, the same items read back.
  const compacted = stack.store.keys.transcriptCompacted(KEY);
  await waitFor(async () => (await stack.store.redis.exists(compacted)) === 1, 'compacted');
  const read: StoredTranscriptEvent[] = [];
  for (let after = '0-0'; ;) {
    const page = await stack.store.transcripts.read(KEY, { after, limit: 1_000 });
    read.push(...page.items);
    if (page.lastId === after) break;
    after = page.lastId;
  }
  // Compacted once per checkpoint kept: more than one compacted range.
  expect(Number(await stack.store.redis.xlen(compacted))).toBeGreaterThan(1);
  expect(read.length).toBeLessThan(written.length);
  expect(read[0]!.event).toMatchObject({
    item: 'm1',
    delta: 'word 0 word 1 word 2 word 3 word 4 ',
  });
  expect(foldTranscript(read.map((e) => e.event))).toEqual(
    foldTranscript(written.map((x) => x.event)),
  );
  await collect();
  // The oracle saw every entry ever appended.
  const added = (await stack.store.redis.xinfo('STREAM', stack.store.keys.taskStream(KEY))) as (
    string | number
  )[];
  expect(entries).toHaveLength(Number(added[added.indexOf('entries-added') + 1]));
  const firstHeld = (await stack.store.readTask(KEY)).items[0]!.id;
  expect(entryTime(firstHeld)).toBeGreaterThan(entryTime(entries[0]!.id));

  const history = new History(stack.store);
  const until = entryTime(entries.at(-1)!.id);
  const start = entryTime(entries[0]!.id);
  const cut = entryTime(firstHeld);
  // From the task's start, from between it and the cut, and a range that ends before the cut.
  const ranges = [
    { since: start - 1, until },
    { since: Math.floor((start + cut) / 2), until },
    { since: start + 1, until: cut - 1 },
  ];
  for (const range of ranges) await expectHistoryAsFolded(history, KEY, TASK, entries, range);
  expect(taskHistory(KEY, entries, { from: start - 1, to: until }).sessions[0]!.turns.length).toBe(
    6,
  );
});
