import { JoinedCalls } from './joined-calls';

interface Item {
  readonly taskId: string;
  readonly n: number;
}

function recorder(answer: (items: Item[]) => (string | Error)[] | Promise<never>) {
  const batches: Item[][] = [];
  const calls = new JoinedCalls<Item, string>(
    async (items) => {
      batches.push(items);
      return answer(items);
    },
    3,
    (i) => i.n,
    10,
  );
  return { calls, batches };
}

const echo = (items: Item[]) => items.map((i) => `${i.taskId}:${i.n}`);

it('sends the calls of one turn together, at most `most` tasks and `mostWeight` per batch', async () => {
  const { calls, batches } = recorder(echo);
  const replies = Promise.all(
    ['a', 'b', 'c', 'd'].map((taskId, i) => calls.call({ taskId, n: i === 3 ? 9 : 1 })),
  );
  expect(batches).toEqual([]);
  expect(await replies).toEqual(['a:1', 'b:1', 'c:1', 'd:9']);
  expect(batches.map((b) => b.map((i) => i.taskId))).toEqual([['a', 'b', 'c'], ['d']]);
  // A heavy call goes alone rather than never.
  const { calls: c2, batches: b2 } = recorder(echo);
  await Promise.all([c2.call({ taskId: 'a', n: 4 }), c2.call({ taskId: 'b', n: 7 })]);
  expect(b2.map((b) => b.map((i) => i.taskId))).toEqual([['a'], ['b']]);
  // A later turn makes a new batch.
  await calls.call({ taskId: 'a', n: 1 });
  expect(batches).toHaveLength(3);
});

it('puts a task asked twice in one turn in a later batch, in order', async () => {
  const { calls, batches } = recorder(echo);
  const r = await Promise.all([
    calls.call({ taskId: 'a', n: 1 }),
    calls.call({ taskId: 'a', n: 2 }),
    calls.call({ taskId: 'b', n: 1 }),
  ]);
  expect(r).toEqual(['a:1', 'a:2', 'b:1']);
  expect(batches.map((b) => b.map((i) => `${i.taskId}${i.n}`))).toEqual([['a1', 'b1'], ['a2']]);
});

it('fails a call alone on its Error, and every call of a batch that fails', async () => {
  const gap = new Error('gap');
  const { calls } = recorder((items) => items.map((i) => (i.taskId === 'b' ? gap : i.taskId)));
  const a = calls.call({ taskId: 'a', n: 1 });
  const b = calls.call({ taskId: 'b', n: 1 });
  await expect(a).resolves.toBe('a');
  await expect(b).rejects.toBe(gap);

  const fenced = new Error('fenced');
  const { calls: c2 } = recorder(() => Promise.reject(fenced));
  const all = [c2.call({ taskId: 'a', n: 1 }), c2.call({ taskId: 'b', n: 1 })];
  for (const p of all) await expect(p).rejects.toBe(fenced);
});
