import { z } from 'zod';
import { Id } from './common';
import type { TaskView } from './views';

/**
 * The board: every task of a tenant in one group, by what needs looking at first. A task is in
 * the first group that holds for any of its sessions.
 */
export const BoardGroup = z.enum(['needs_person', 'failed', 'generating', 'background', 'idle']);
export type BoardGroup = z.infer<typeof BoardGroup>;

export const BOARD_GROUP_TITLES: Record<BoardGroup, string> = {
  needs_person: 'Needs a person',
  failed: 'Failed',
  generating: 'Generating',
  background: 'Background',
  idle: 'Idle',
};

export function boardGroupOf(t: TaskView): BoardGroup {
  const kinds = t.sessions.map((s) => s.activity.attention?.kind);
  if (kinds.includes('needs_person')) return 'needs_person';
  if (kinds.includes('failed') || kinds.includes('needs_operator')) return 'failed';
  if (t.activity.foregroundActivity === 'generating') return 'generating';
  if (
    t.activity.foregroundActivity === 'background' ||
    // Work an unattributed completion may have ended is listed, but not known to run.
    t.sessions.some((s) => s.backgroundWork.some((w) => w.possiblyFinished !== true))
  ) {
    return 'background';
  }
  return 'idle';
}

/** At most this many task ids per group in a board answer; `count` is always whole. */
export const BOARD_IDS_PER_GROUP = 200;

export const Board = z.object({
  /** Every task of the tenant, deleted ones left out. */
  tasks: z.number().int().nonnegative(),
  groups: z.array(
    z.object({
      group: BoardGroup,
      count: z.number().int().nonnegative(),
      /** The group's task ids, sorted, at most BOARD_IDS_PER_GROUP. */
      taskIds: z.array(Id),
    }),
  ),
});
export type Board = z.infer<typeof Board>;

/** The board of these task views, groups in the board's order. */
export function boardOf(views: readonly TaskView[]): Board {
  const live = views.filter((v) => v.status !== 'deleted');
  const groups = BoardGroup.options.map((group) => {
    const ids = live
      .filter((v) => boardGroupOf(v) === group)
      .map((v) => v.taskId)
      .sort();
    return { group, count: ids.length, taskIds: ids.slice(0, BOARD_IDS_PER_GROUP) };
  });
  return { tasks: live.length, groups };
}
