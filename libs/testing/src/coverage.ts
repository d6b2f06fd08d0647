// A property over generated histories proves nothing about a case the generator never reaches:
// tests collect the cases their histories reach and check them against the ones they are about.

/** Every case of `wanted` is among those `seen`; a miss names the case. */
export function expectEveryCaseReached(seen: ReadonlySet<string>, wanted: Iterable<string>): void {
  for (const c of wanted) expect([c, seen.has(c)]).toEqual([c, true]);
}
