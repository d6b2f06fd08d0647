import { isDecision, type StreamEntry } from '@baton/protocol';

/**
 * The leases a shard has had (libs/store keeps it with each acquisition, where only projectors
 * can write): epoch -> owner, and the server time (ms) of the first acquisition recorded.
 */
export interface FenceHistory {
  readonly owners: ReadonlyMap<number, string>;
  readonly from?: number;
}

/**
 * Why a decision in a task stream must not count, or undefined when it may. A decision counts
 * only when it carries a fence (epoch and owner) the shard's lease really had, no older than the
 * fence of the last decision counted before it (`floor`, an epoch): the store's fenced write lets
 * a lease's owner append only while it holds the lease, so the real decisions of a task carry
 * epochs that never go down. A decision without a fence counts only if it was appended (its id's
 * time) before the shard's first recorded acquisition, when decisions did not carry one yet.
 *
 * What a writer that may append facts or commands can forge this refuses: a decision with no
 * fence, one naming a lease that never was (an epoch not handed out, or not to that owner), and
 * a replay of an older lease's fence. Copying the current lease's fence from the stream is not
 * told apart here (its owner cannot know it did not write it after a failover).
 */
export function decisionFenceRefusal(
  entry: StreamEntry,
  entryId: string,
  floor: number,
  history: FenceHistory,
): string | undefined {
  if (!isDecision(entry)) return undefined;
  const fence = entry.fence;
  if (!fence) {
    if (history.from !== undefined && streamIdTime(entryId) >= history.from)
      return `decision ${entry.type} carries no owner's fence`;
    return undefined;
  }
  const owner = history.owners.get(fence.epoch);
  if (owner === undefined)
    return `decision ${entry.type} names lease epoch ${fence.epoch}, which the shard never had`;
  if (owner !== fence.owner)
    return `decision ${entry.type} names lease ${fence.epoch}:${fence.owner}, but epoch ${fence.epoch} was ${owner}'s`;
  if (fence.epoch < floor)
    return `decision ${entry.type} names lease epoch ${fence.epoch}, older than epoch ${floor} of a decision before it`;
  return undefined;
}

/** The floor after `entry` counted: its fence's epoch, if it is a decision that carries one. */
export function fenceFloorAfter(entry: StreamEntry, floor: number): number {
  return isDecision(entry) && entry.fence ? Math.max(floor, entry.fence.epoch) : floor;
}

/** The millisecond part of a Redis stream id ("<ms>-<seq>"). */
function streamIdTime(id: string): number {
  const dash = id.indexOf('-');
  return Number(dash < 0 ? id : id.slice(0, dash));
}
