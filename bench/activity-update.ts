import { SCHEMA_VERSION, type Update } from '@baton/protocol';

/** What the benches vary between the `session.activity` updates they publish. */
export interface ActivityFill {
  sessionId: string;
  foregroundActivity: 'generating' | 'background';
  activeSubagentCount: number;
  runningGeneration: number;
}

/**
 * A `session.activity` update as a projector publishes one (the most common update): what the
 * gateway benches fan out, without a projector to make it.
 */
export function activityUpdate(
  taskId: string,
  seq: number,
  fill: ActivityFill,
  entry = `${seq}-0`,
): Update {
  return {
    v: SCHEMA_VERSION,
    taskId,
    seq,
    entry,
    last: true,
    type: 'session.activity',
    data: {
      sessionId: fill.sessionId,
      state: 'running',
      foregroundActivity: fill.foregroundActivity,
      activeSubagentCount: fill.activeSubagentCount,
      supportsSteering: false,
      runningGeneration: fill.runningGeneration,
      admission: 'coarse',
      attention: null,
    },
  };
}
