import { backoffDelay } from './index';

describe('backoffDelay', () => {
  it('grows exponentially to its cap, with half of each delay random', () => {
    const low = { initialMs: 100, maxMs: 1_000, random: () => 0 };
    const high = { ...low, random: () => 0.999999 };
    expect([0, 1, 2, 3, 4, 10, 100].map((a) => backoffDelay(a, low))).toEqual([
      50, 100, 200, 400, 500, 500, 500,
    ]);
    expect([0, 1, 2, 3, 4, 10].map((a) => backoffDelay(a, high))).toEqual([
      100, 200, 400, 800, 1_000, 1_000,
    ]);
  });

  it('without jitter, is the capped exponential delay itself', () => {
    const o = { initialMs: 50, maxMs: 2_000, jitter: false };
    expect([0, 1, 2, 5, 6, 10, 1_000].map((a) => backoffDelay(a, o))).toEqual([
      50, 100, 200, 1_600, 2_000, 2_000, 2_000,
    ]);
  });
});
