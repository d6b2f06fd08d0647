import { snapshotOf, type HistorySpan, type TaskState } from '@baton/activity';
import type { EventStore, Lease } from '@baton/store';

/**
 * Writes `state` at `id` as the owner writes a checkpoint (interval 1 ms: every write is kept),
 * then the history span from the previous checkpoint to it. The span and whether it was kept, or
 * undefined where there was no previous checkpoint.
 */
export async function writeCheckpointAndSpan(
  store: EventStore,
  lease: Lease,
  taskId: string,
  id: string,
  state: TaskState,
): Promise<{ span: HistorySpan | null; kept: boolean } | undefined> {
  const { previousCheckpoint } = await store.snapshots.write(
    lease,
    taskId,
    id,
    snapshotOf(state),
    1,
  );
  if (!previousCheckpoint) return undefined;
  const span = await store.historySpans.build(taskId, previousCheckpoint, id);
  return { span, kept: span !== null && (await store.historySpans.write(taskId, span)) };
}
