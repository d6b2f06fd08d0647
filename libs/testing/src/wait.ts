/**
 * Polls `cond` until it returns a value other than undefined, null or false, and resolves with
 * it. A throw counts as not yet (and is named if the wait times out): a server still starting
 * refuses connections. The timeout only sharpens the failure message; jest's bounds the test.
 */
export async function waitFor<T>(
  cond: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  what: string,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (let delay = 5; ; delay = Math.min(delay * 2, 100)) {
    try {
      const v = await cond();
      if (v !== undefined && v !== null && v !== false) return v;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, delay));
  }
}
