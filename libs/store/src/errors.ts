/** The lease at the writer's epoch is gone: another owner took the shard, or the lease expired. */
export class FencedError extends Error {
  override readonly name = 'FencedError';
}

/** The task stream moved past the id the writer expected: catch up and decide again. */
export class ConflictError extends Error {
  override readonly name = 'ConflictError';
  constructor(readonly actualLastId: string) {
    super(`task stream last id is ${actualLastId}`);
  }
}

/** An update seq beyond last published + 1: publishing it would leave clients a silent gap. */
export class GapError extends Error {
  override readonly name = 'GapError';
  constructor(
    readonly lastPublished: number,
    readonly seq: number,
  ) {
    super(`update seq ${seq} would leave a gap after ${lastPublished}`);
  }
}

/** A snapshot older than the stored one: snapshots never move back. */
export class StaleSnapshotError extends Error {
  override readonly name = 'StaleSnapshotError';
  constructor(readonly currentId: string) {
    super(`stored snapshot covers ${currentId}`);
  }
}

/** An entry failed validation on its way into Redis; nothing of its batch was written. */
export class InvalidEntryError extends Error {
  override readonly name = 'InvalidEntryError';
  constructor(
    readonly index: number,
    readonly reason: string,
  ) {
    super(`entry ${index} of the batch is invalid, nothing was appended: ${reason}`);
  }
}

/** Maps the error replies of the Lua scripts to typed errors; anything else is rethrown as is. */
export function mapScriptError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const m = err.message;
  if (m.startsWith('FENCED')) return new FencedError(m);
  if (m.startsWith('CONFLICT ')) return new ConflictError(m.slice('CONFLICT '.length).trim());
  if (m.startsWith('STALE ')) return new StaleSnapshotError(m.slice('STALE '.length).trim());
  const gap = /^GAP (\d+) (\d+)/.exec(m);
  if (gap) return new GapError(Number(gap[1]), Number(gap[2]));
  return err;
}
