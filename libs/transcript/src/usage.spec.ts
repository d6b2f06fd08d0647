import { acpTokenCounts } from './usage';

describe('acpTokenCounts', () => {
  it("reads an ACP usage's token counts by our names, whole non-negative numbers only", () => {
    expect(
      acpTokenCounts({
        inputTokens: 12,
        outputTokens: 3,
        thoughtTokens: 0,
        cachedReadTokens: 400,
        cachedWriteTokens: 7,
        totalTokens: 422,
        other: 5,
      }),
    ).toEqual({ input: 12, output: 3, thought: 0, cachedRead: 400, cachedWrite: 7, total: 422 });
    // Agent output: what is not a count is left out, not trusted.
    expect(
      acpTokenCounts({
        inputTokens: -1,
        outputTokens: 1.5,
        totalTokens: '9',
        cachedReadTokens: Number.NaN,
        cachedWriteTokens: 2 ** 60,
        thoughtTokens: 4,
      }),
    ).toEqual({ thought: 4 });
    for (const none of [undefined, null, 3, 'usage', [], {}, { inputTokens: null }]) {
      expect(acpTokenCounts(none)).toBeUndefined();
    }
  });
});
