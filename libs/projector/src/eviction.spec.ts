import { tasksToEvict, type Evictable } from './eviction';

const task = (quietSince: number, may = true): Evictable => ({ quietSince, mayEvict: () => may });

describe('tasksToEvict', () => {
  it('puts away the tasks quiet for the period and holding nothing', () => {
    const tasks = new Map([
      ['quiet', task(0)],
      ['just now', task(950)],
      ['exactly the period', task(400)],
      ['quiet but busy', task(0, false)],
    ]);
    expect(tasksToEvict(tasks, 1_000, 600)).toEqual(['quiet', 'exactly the period']);
  });

  it('never asks a task that has not been quiet long enough (its check walks its state)', () => {
    const mayEvict = jest.fn(() => true);
    tasksToEvict(new Map([['t', { quietSince: 900, mayEvict }]]), 1_000, 600);
    expect(mayEvict).not.toHaveBeenCalled();
  });

  it('evicts nothing when the period is 0', () => {
    expect(tasksToEvict(new Map([['t', task(0)]]), 1e12, 0)).toEqual([]);
  });
});
