import type { StreamEntry } from '@baton/protocol';
import { EventStore } from '../src';
import { fact, freshPrefix, startBackend, type Backend } from './fixtures';

jest.setTimeout(120_000);

const WRITERS = 8;
const PER_WRITER = 10_000;
const TASKS = 100;
const CHUNK = 200;

describe.each(['single', 'cluster'] as const)('concurrent writers on %s Redis', (kind) => {
  let backend: Backend;
  beforeAll(async () => {
    backend = await startBackend(kind);
  });
  afterAll(async () => {
    await backend?.stop();
  });

  it('keeps every entry exactly once, in each writer order, despite retried batches', async () => {
    const prefix = freshPrefix();
    // Deterministic per run: task choice and which batches are retried come from a seeded PRNG.
    let state = 7;
    const rand = () => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return state / 2 ** 32;
    };
    const plans = Array.from({ length: WRITERS }, (_, w) =>
      Array.from({ length: PER_WRITER }, (_, i) =>
        fact(`task-${Math.floor(rand() * TASKS)}`, `writer-${w}`, i + 1),
      ),
    );
    const retryPlan = plans.map(() => Array.from({ length: PER_WRITER }, () => rand()));
    let retries = 0;

    const writer = async (w: number) => {
      const store = new EventStore(backend.client(), { prefix });
      const plan = plans[w]!;
      for (let start = 0; start < plan.length; start += CHUNK) {
        const byTask = new Map<string, StreamEntry[]>();
        for (const e of plan.slice(start, start + CHUNK)) {
          const list = byTask.get(e.taskId) ?? [];
          list.push(e);
          byTask.set(e.taskId, list);
        }
        // Different tasks go in parallel; one task's batches go in order, each retried until
        // acknowledged (the writer's contract). A retry resends the whole batch, as a writer
        // that lost the reply would.
        await Promise.all(
          [...byTask.entries()].map(async ([taskId, batch]) => {
            const r = retryPlan[w]![batch[0]!.writer.seq - 1]!;
            const first = await store.append(taskId, batch);
            expect(first.every((id) => id !== null)).toBe(true);
            if (r < 0.3) {
              retries += 1;
              expect(await store.append(taskId, batch)).toEqual(batch.map(() => null));
            }
          }),
        );
      }
    };
    await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
    expect(retries).toBeGreaterThan(1_000);

    const reader = new EventStore(backend.client(), { prefix });
    const seen = new Map<string, number[]>();
    let total = 0;
    for (let t = 0; t < TASKS; t++) {
      const taskId = `task-${t}`;
      let after = '0-0';
      for (;;) {
        const page = await reader.readTask(taskId, after, 1_000);
        if (page.items.length === 0) break;
        for (const { entry } of page.items) {
          const key = `${taskId}/${entry.writer.instance}`;
          const seqs = seen.get(key) ?? [];
          seqs.push(entry.writer.seq);
          seen.set(key, seqs);
          total += 1;
        }
        after = page.lastId;
      }
    }
    expect(total).toBe(WRITERS * PER_WRITER);
    for (let w = 0; w < WRITERS; w++) {
      for (let t = 0; t < TASKS; t++) {
        const expected = plans[w]!.filter((e) => e.taskId === `task-${t}`).map((e) => e.writer.seq);
        expect(seen.get(`task-${t}/writer-${w}`) ?? []).toEqual(expected);
      }
    }
  });
});
