import {
  decide,
  fold,
  initialTaskState,
  stateFromSnapshot,
  taskView,
  type TaskState,
} from '@baton/activity';
import type { EventStore } from '@baton/store';

/**
 * Rebuilds a task's state from its stream alone, exactly as a new owner with no snapshot would;
 * from its snapshot only when the stream was trimmed behind it (then nothing else can). Reports
 * what the owner would still decide, so an operator can see a stuck task at a glance.
 */
export async function rebuildTask(
  store: EventStore,
  taskId: string,
): Promise<{ state: TaskState; entries: number; fromSnapshot: string | null; undecided: number }> {
  let snapshot: { id: string; state: TaskState } | null = null;
  if (await store.wasTrimmed(taskId)) {
    const stored = await store.snapshots.read(taskId);
    const restored = stored && stateFromSnapshot(stored.state, taskId);
    if (!stored || !restored) {
      throw new Error(
        `task ${taskId}: its stream is trimmed behind a snapshot of another state version (or none)`,
      );
    }
    snapshot = { id: stored.id, state: restored };
  }
  let state = snapshot?.state ?? initialTaskState(taskId);
  let after = snapshot?.id ?? '0-0';
  let entries = 0;
  for (;;) {
    const page = await store.readTask(taskId, after, 1_000);
    for (const { entry } of page.items) state = fold(state, entry).state;
    entries += page.items.length;
    if (page.lastId === after) break;
    after = page.lastId;
  }
  return { state, entries, fromSnapshot: snapshot?.id ?? null, undecided: decide(state).length };
}

export interface ShardRow {
  shard: number;
  owner: string | null;
  epoch: number;
  /** ms until the lease lapses (negative: lapsed), by the caller's clock. */
  expiresInMs: number | null;
}

/** Who owns each shard, with its epoch; shards nobody holds are listed with owner null. */
export async function shardOwnership(store: EventStore, now = Date.now()): Promise<ShardRow[]> {
  const leases = new Map((await store.leases.list()).map((l) => [l.shard, l]));
  const rows: ShardRow[] = [];
  for (let shard = 0; shard < store.keys.shards; shard++) {
    const l = leases.get(shard);
    rows.push(
      l
        ? { shard, owner: l.owner, epoch: l.epoch, expiresInMs: l.expiresAt - now }
        : { shard, owner: null, epoch: await store.leases.epoch(shard), expiresInMs: null },
    );
  }
  return rows;
}

export { taskView };
