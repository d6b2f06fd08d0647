import { Board, TaskHistory, type StreamEntry } from '@baton/protocol';
import {
  cli,
  Client,
  FakeWorker,
  readAll,
  shellStarted,
  tenantStack,
  tokenFor,
  waitFor,
} from '@baton/testing';
import { History } from '../src/history/history';

/**
 * The history query over REST, against real processes: a real projector decides, a fake worker
 * writes the agent's facts, a real gateway answers. What it must show is what happened, from the
 * stream: the turns with their stop reasons, the background item with its own end, the queued
 * prompt's wait, the execution; and only to the task's own tenant.
 */

jest.setTimeout(60_000);

const TENANT = 'acme';
const TASK = 'hist';
const files = tenantStack(TENANT, { gateways: 1 });
const KEY = files.K(TASK);

type Json = Record<string, unknown>;
async function get(path: string, tenant = TENANT) {
  const res = await fetch(`${files.stack.gateways[0]!.url}${path}`, {
    headers: { authorization: `Bearer ${tokenFor(tenant)}` },
  });
  return { status: res.status, body: (await res.json()) as Json };
}
const time = (id: string) => Number(id.split('-')[0]);

it('answers what happened: turns, background work, a queued prompt’s wait, the execution', async () => {
  const c = await Client.connect(files.stack.gateways[0]!.wsUrl, tokenFor(TENANT));
  const w = new FakeWorker(files.stack.store, KEY, 's1', 'x1');
  await w.start();
  const ref = { taskId: TASK, sessionId: 's1' };
  const a = (await c.request({ op: 'prompt', ...ref, text: 'a', idempotencyKey: 'a' }))
    .result as Json;
  expect(a).toMatchObject({ decision: { outcome: 'admitted' } });
  await w.fact('prompt.dispatched', { promptId: a.promptId, admissionGeneration: 1 });
  await w.fact('foreground.output', { channel: 'message' });
  await w.fact('background.started', shellStarted('sh1', 'npm test'));
  const b = (await c.request({ op: 'prompt', ...ref, text: 'b', idempotencyKey: 'b' }))
    .result as Json;
  expect(b).toMatchObject({ decision: { outcome: 'queued' } });
  await w.fact('background.ended', { workId: 'sh1', status: 'completed' });
  await w.fact('turn.ended', { admissionGeneration: 1, stopReason: 'end_turn' });
  // b is admitted once a's turn ends.
  await waitFor(
    async () =>
      (await readAll(files.stack.store, KEY)).some(
        (e) => e.type === 'prompt.admitted' && e.data.promptId === b.promptId,
      ),
    'b admitted',
  );
  await c.close();
  const entries = await files.stack.store.readTask(KEY);
  const at = (pred: (e: StreamEntry) => boolean) =>
    time(entries.items.find((i) => pred(i.entry))!.id);

  const r = await get(`/v1/tasks/${TASK}/history`);
  expect(r.status).toBe(200);
  const h = TaskHistory.parse(r.body);
  expect(h.taskId).toBe(TASK);
  const s = h.sessions.find((x) => x.sessionId === 's1')!;
  expect(s.turns.map((t) => [t.promptId, t.stopReason ?? null])).toEqual([
    [a.promptId, 'end_turn'],
    [b.promptId, null],
  ]);
  expect(s.background).toEqual([
    {
      id: 'sh1',
      kind: 'shell',
      label: 'npm test',
      start: at((e) => e.type === 'background.started'),
      end: at((e) => e.type === 'background.ended'),
      endedBy: 'identified',
    },
  ]);
  const pb = s.prompts.find((p) => p.promptId === b.promptId)!;
  const queuedAt = at((e) => e.type === 'prompt.queued');
  const admittedAt = at((e) => e.type === 'prompt.admitted' && e.data.promptId === b.promptId);
  expect(pb).toMatchObject({ decision: 'queued', decidedAt: queuedAt, admittedAt });
  expect(pb.queueWaitMs).toBe(admittedAt - queuedAt);
  expect(s.executions).toEqual([
    {
      executionId: 'x1',
      requestedAt: null,
      start: at((e) => e.type === 'execution.started'),
      end: null,
    },
  ]);
  expect(s.activity.at(-1)).toMatchObject({ state: 'generating', to: null });

  // One session's history; a range that ends before anything happened has nothing in it.
  const one = await get(`/v1/tasks/${TASK}/sessions/s1/history`);
  expect(TaskHistory.parse(one.body).sessions.map((x) => x.sessionId)).toEqual(['s1']);
  const first = time(entries.items[0]!.id);
  const before = TaskHistory.parse(
    (await get(`/v1/tasks/${TASK}/history?since=${first - 60_000}&until=${first - 1}`)).body,
  );
  expect(before.entries).toBe(0);
  expect(before.sessions).toEqual([]);

  // The CLI: a table people read, and --json for scripts.
  const env = { BATON_GATEWAY_URL: files.stack.gateways[0]!.url, BATON_TOKEN: tokenFor(TENANT) };
  const table = await cli(['history', TASK, 's1', '--since', '1h'], env);
  expect(table.code).toBe(0);
  expect(table.stdout).toMatch(/^session s1$/m);
  expect(table.stdout).toMatch(new RegExp(`${String(a.promptId)} #1  end_turn`));
  expect(table.stdout).toMatch(/shell sh1 "npm test" {2}ended/);
  expect(table.stdout).toMatch(new RegExp(`${String(b.promptId)} \\(key b\\), queued \\d+`));
  const json = await cli(['history', TASK, '--json', '--since', String(first - 1)], env);
  expect(TaskHistory.parse(JSON.parse(json.stdout)).sessions[0]!.turns).toHaveLength(2);
  const bad = await cli(['history', TASK, '--since', 'soon'], env);
  expect(bad).toMatchObject({ code: 2, stderr: expect.stringMatching(/not a time: "soon"/) });
});

it('pages a range that holds more entries than one answer folds', async () => {
  const small = new History(files.stack.store, { maxEntries: 7, maxItems: 1_000 });
  const all = (await files.stack.store.readTask(KEY)).items.length;
  const pages: TaskHistory[] = [];
  let since = Date.now() - 3_600_000;
  for (;;) {
    const page = await small.query(KEY, TASK, { since, until: Date.now() });
    pages.push(page);
    if (page.next === undefined) break;
    expect(page.truncated).toBe(true);
    expect(page.to).toBe(page.next - 1);
    since = page.next;
  }
  expect(pages.length).toBeGreaterThan(1);
  // Every entry is folded in exactly one page.
  expect(pages.reduce((n, p) => n + p.entries, 0)).toBe(all);
});

it('puts every task of the tenant on the board, and only the tenant’s', async () => {
  const b = Board.parse((await get('/v1/board')).body);
  expect(b.tasks).toBe(1);
  // b's turn is running: generating.
  expect(b.groups.find((g) => g.group === 'generating')).toEqual({
    group: 'generating',
    count: 1,
    taskIds: [TASK],
  });
  expect(Board.parse((await get('/v1/board', 'other')).body)).toMatchObject({ tasks: 0 });
});

it('answers only the task’s tenant, and says what is wrong with a bad range', async () => {
  expect(await get(`/v1/tasks/${TASK}/history`, 'other')).toMatchObject({
    status: 404,
    body: { error: { code: 'not_found' } },
  });
  expect(await get(`/v1/tasks/${TASK}/history?since=yesterday`)).toMatchObject({
    status: 400,
    body: { error: { code: 'invalid_message', path: 'since' } },
  });
  expect(await get(`/v1/tasks/${TASK}/history?since=2000&until=1000`)).toMatchObject({
    status: 400,
    body: { error: { code: 'invalid_message', message: 'since is after until' } },
  });
  expect(await get(`/v1/tasks/${TASK}/history?since=0&until=${40 * 86_400_000}`)).toMatchObject({
    status: 400,
    body: { error: { message: expect.stringMatching(/at most 31 days/) } },
  });
  expect(await get(`/v1/tasks/${TASK}/history?from=1`)).toMatchObject({
    status: 400,
    body: { error: { code: 'invalid_message' } },
  });
});
