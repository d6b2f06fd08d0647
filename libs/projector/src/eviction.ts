/** What the eviction policy reads of a task owner. */
export interface Evictable {
  /** Local monotonic time of the task's last folded entry (or of its load). */
  readonly quietSince: number;
  /** True when nothing of the task is held only in memory and nothing waits on its clocks. */
  mayEvict(): boolean;
}

/**
 * The tasks of a shard to put away now: quiet for `idleMs` (0: never evict) and holding nothing
 * but what their snapshot holds. A shard keeps only its active tasks in memory; a task put away
 * is loaded again from its snapshot by its next feed note (a new entry) or lapsed execution
 * lease, so the bound costs one snapshot read per task that comes back, and nothing for the
 * many that never do.
 */
export function tasksToEvict<K, T extends Evictable>(
  tasks: ReadonlyMap<K, T>,
  now: number,
  idleMs: number,
): K[] {
  if (idleMs <= 0) return [];
  const out: K[] = [];
  for (const [k, t] of tasks) if (now - t.quietSince >= idleMs && t.mayEvict()) out.push(k);
  return out;
}
