const parse = (v: string): number[] | undefined => {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(v.trim());
  return m === null ? undefined : [Number(m[1]), Number(m[2]), Number(m[3])];
};

/**
 * True when `version` is a semver at or above `min`. An absent or unparsable version is never
 * "at least" anything: a capability we cannot date is one we do not claim.
 */
export const versionAtLeast = (version: string | undefined, min: string): boolean => {
  if (version === undefined) return false;
  const a = parse(version);
  const b = parse(min);
  if (a === undefined || b === undefined) return false;
  for (let i = 0; i < 3; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x > y;
  }
  return true;
};
