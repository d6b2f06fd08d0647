import type { Capabilities } from '@baton/protocol';
import { sharedCapabilities } from './shared-capabilities';
import type { TaskState } from './state';

/**
 * Version of the folded state's shape. A snapshot records it, and a state of another version is
 * never read as this one: bump it whenever TaskState or SessionState changes shape, and a new
 * owner replays the stream instead of misreading an old snapshot.
 */
export const STATE_VERSION = 5;

export interface TaskSnapshot {
  readonly stateVersion: number;
  readonly state: TaskState;
}

export function snapshotOf(state: TaskState): TaskSnapshot {
  return { stateVersion: STATE_VERSION, state };
}

/**
 * The state a stored snapshot holds, or null when it is of another version or not a state of
 * this task (the caller then replays the stream from its start, if it still has it).
 */
export function stateFromSnapshot(stored: unknown, taskId: string): TaskState | null {
  if (typeof stored !== 'object' || stored === null) return null;
  const snap = stored as Partial<TaskSnapshot>;
  if (snap.stateVersion !== STATE_VERSION) return null;
  const s = snap.state as Partial<TaskState> | undefined;
  if (
    typeof s !== 'object' ||
    s === null ||
    s.taskId !== taskId ||
    !Number.isInteger(s.seq) ||
    typeof s.sessions !== 'object' ||
    s.sessions === null
  ) {
    return null;
  }
  // Sessions share one copy of each capabilities payload, as a fold from the stream holds them.
  const sessions = s.sessions as Record<string, { execution: { capabilities: unknown } | null }>;
  for (const session of Object.values(sessions)) {
    const x = session?.execution;
    if (x && typeof x.capabilities === 'object' && x.capabilities !== null)
      x.capabilities = sharedCapabilities(x.capabilities as Capabilities);
  }
  return s as TaskState;
}
