// Views as a client receives them, for tests of what clients make of them.
import { NEW_SESSION_ACTIVITY } from '@baton/ahp';
import type { QueueView, SessionActivityView } from '@baton/protocol';

/** A session's activity: idle, with nothing running and nothing asked, but for `over`. */
export const activityView = (over: Partial<SessionActivityView> = {}): SessionActivityView => ({
  ...NEW_SESSION_ACTIVITY,
  state: 'idle',
  ...over,
});

/** A session's queue: empty, running on its own, with room for ten prompts. */
export const EMPTY_QUEUE: QueueView = { autoRun: true, capacity: 10, entries: [], blockedBy: null };
