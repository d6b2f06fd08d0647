import { entryTime, taskHistory } from '@baton/activity';
import type { StoredEntry } from '@baton/store';
import { History } from '../src/history/history';
import { expectHistoryAsFolded, startAdmittedTurn } from './support/history-turns';
import { Client, FakeWorker, readAll, tenantStack, tokenFor, waitFor } from '@baton/testing';

/**
 * The history's read model against real processes: a real projector that keeps checkpoints
 * (every 500 ms here) writes the span between each two of them; the history query reads the
 * spans, and answers exactly what folding the whole stream from its start answers, for a range
 * from the task's start and one that starts inside a span. Spans that are missing (an owner that
 * could not build them, a deployment older than them) the query folds and writes back.
 */

jest.setTimeout(60_000);

const TENANT = 'acme';
const TASK = 'spans';
const files = tenantStack(TENANT, {
  gateways: 1,
  projectorEnv: {
    PROJECTOR_SNAPSHOT_ENTRIES: '3',
    PROJECTOR_SNAPSHOT_MS: '100',
    // A checkpoint at most every retention / 24 = 500 ms; nothing is trimmed within 12 s.
    PROJECTOR_RETENTION_MS: '12000',
  },
});
const KEY = files.K(TASK);

it('reads the spans the owner wrote, and answers what folding every entry answers', async () => {
  const c = await Client.connect(files.stack.gateways[0]!.wsUrl, tokenFor(TENANT));
  const w = new FakeWorker(files.stack.store, KEY, 's1', 'x1');
  await w.start();
  for (let turn = 1; turn <= 5; turn++) {
    await startAdmittedTurn(c, w, TASK, turn);
    if (turn === 2) {
      await w.fact('background.started', {
        attested: false,
        work: {
          kind: 'shell',
          id: 'sh1',
          label: 'make',
          command: 'make',
          startedAt: new Date().toISOString(),
        },
      });
    }
    if (turn === 4) await w.fact('background.ended', { workId: 'sh1', status: 'completed' });
    await w.fact('turn.ended', { admissionGeneration: turn, stopReason: 'end_turn' });
    await waitFor(
      async () =>
        (await readAll(files.stack.store, KEY)).some(
          (e) => e.type === 'turn.ended' && e.data.admissionGeneration === turn,
        ) && (await files.stack.store.snapshots.read(KEY)),
      `turn ${turn} folded`,
    );
    await new Promise((r) => setTimeout(r, 600));
    // A step after the pause: the snapshot it writes is kept as a checkpoint.
    await w.fact('foreground.output', { channel: 'thought' });
  }
  await c.close();

  // The owner kept checkpoints and wrote the span between each two (and from the stream's start,
  // '0-0', to the first), before anyone asked.
  const lastId = await files.stack.store.lastId(KEY);
  await waitFor(
    async () => (await files.stack.store.snapshots.read(KEY))?.id === lastId,
    'all folded',
  );
  const checkpoints = (await files.stack.store.snapshots.checkpoints(KEY)).map((c) => c.id);
  expect(checkpoints.length).toBeGreaterThanOrEqual(4);
  const spans = await waitFor(async () => {
    const s = await files.stack.store.historySpans.read(KEY);
    return s.size === checkpoints.length && s;
  }, 'a span between each two checkpoints');
  for (const [from, span] of spans) {
    expect(['0-0', ...checkpoints]).toContain(from);
    expect(checkpoints).toContain(span.to);
  }
  expect(await files.stack.store.wasTrimmed(KEY)).toBe(false);

  const entries: StoredEntry[] = [];
  for await (const page of files.stack.store.readTaskPages(KEY)) entries.push(...page.items);
  const history = new History(files.stack.store);
  const until = entryTime(entries.at(-1)!.id);
  // From the task's start, and from inside the second span (between its checkpoints).
  const [first, second] = [...spans.values()]
    .filter((span) => span.from !== '0-0')
    .sort((a, b) => (a.from < b.from ? -1 : 1));
  const ranges = [
    { since: entryTime(entries[0]!.id) - 1, until },
    { since: Math.floor((entryTime(second!.from) + entryTime(second!.to)) / 2), until },
    { since: entryTime(first!.from) + 1, until: entryTime(second!.to) },
  ];
  for (const range of ranges) {
    const want = await expectHistoryAsFolded(history, KEY, TASK, entries, range);
    expect(want.sessions[0]!.turns.length).toBeGreaterThan(0);
  }

  // Without the spans: the same answers, and the query writes back the spans it folded.
  await files.stack.store.redis.del(files.stack.store.keys.historySpans(KEY));
  const whole = {
    ...taskHistory(KEY, entries, { from: ranges[0]!.since, to: until }),
    taskId: TASK,
  };
  expect(await history.query(KEY, TASK, ranges[0]!)).toEqual(whole);
  const rebuilt = await files.stack.store.historySpans.read(KEY);
  expect([...rebuilt.keys()].sort()).toEqual([...spans.keys()].sort());
  for (const [from, span] of rebuilt) expect(span).toEqual(spans.get(from));
});
