import { taskHistory } from '@baton/activity';
import type { StoredEntry } from '@baton/store';
import type { Client, FakeWorker } from '@baton/testing';
import type { History } from '../../src/history/history';

type Json = Record<string, unknown>;

/**
 * Turn `turn` of session s1 on `task`: a prompt over /ws that the owner admits, dispatched by the
 * worker, which then answers with a message. The turn is left open for the caller to end.
 */
export const startAdmittedTurn = async (
  c: Client,
  w: FakeWorker,
  task: string,
  turn: number,
): Promise<void> => {
  const p = (
    await c.request({
      op: 'prompt',
      taskId: task,
      sessionId: 's1',
      text: `turn ${turn}`,
      idempotencyKey: `k${turn}`,
    })
  ).result as Json;
  expect(p).toMatchObject({ decision: { outcome: 'admitted' } });
  await w.fact('prompt.dispatched', { promptId: p.promptId, admissionGeneration: turn });
  await w.fact('foreground.output', { channel: 'message' });
};

/**
 * Expects the history query for `range` to answer exactly what folding every one of `entries`
 * (the task's whole stream) answers; returns that answer.
 */
export const expectHistoryAsFolded = async (
  history: History,
  key: string,
  task: string,
  entries: StoredEntry[],
  range: { since: number; until: number },
): Promise<ReturnType<typeof taskHistory> & { taskId: string }> => {
  const want = {
    ...taskHistory(key, entries, { from: range.since, to: range.until }),
    taskId: task,
  };
  expect(await history.query(key, task, range)).toEqual(want);
  return want;
};
