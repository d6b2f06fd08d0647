import type { ForegroundActivity, UnsequencedUpdate } from '@baton/protocol';

const RANK = { generating: 2, background: 1 } as const;
const rank = (a: ForegroundActivity): number => (a ? RANK[a] : 0);

const isActivity = (u: UnsequencedUpdate) =>
  u.type === 'session.activity' || u.type === 'task.activity';

/**
 * Orders the updates one entry produced so that a client applying them one at a time never
 * passes through a view less busy than both the view before and the view after — fail toward
 * busy, even between two updates of one entry. When the session becomes more active, the
 * activity updates (task, then session) come first: the work that explains it follows. When it
 * becomes less active, the activity updates go last: its finished work is removed while the
 * session still shows busy. A session is never shown done while work it lists runs.
 */
export function orderTowardBusy(
  updates: UnsequencedUpdate[],
  was: ForegroundActivity,
  now: ForegroundActivity,
): UnsequencedUpdate[] {
  const up = rank(now) - rank(was);
  if (up === 0 || updates.length < 2) return updates;
  const activity = updates.filter(isActivity);
  if (activity.length === 0) return updates;
  const rest = updates.filter((u) => !isActivity(u));
  if (up > 0) {
    // The task's aggregate first: it is at least as active as the session.
    activity.sort((a, b) => (a.type === 'task.activity' ? -1 : b.type === 'task.activity' ? 1 : 0));
    return [...activity, ...rest];
  }
  activity.sort((a, b) =>
    a.type === 'session.activity' ? -1 : b.type === 'session.activity' ? 1 : 0,
  );
  return [...rest, ...activity];
}
