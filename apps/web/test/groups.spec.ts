// The page renders the views @baton/client hands it (onView), which come once per whole group of
// updates (one stream entry's). What the page model makes of them never shows a state between two
// updates of one entry: checked over the pure group application the client runs, on generated
// streams folded by the domain core, and on the subagent case that showed "1 subagent" with an
// empty work list when updates were applied one at a time.
import fc from 'fast-check';
import { initialTaskState } from '@baton/activity';
import { GroupBuffer, applyGroup, stepUpdate } from '@baton/client';
import type { TaskView, Update } from '@baton/protocol';
import { CLAUDE_CAPS, play, snapshotOf, streams } from '@baton/testing';
import { startedSession, viewsOneByOne } from '@baton/testing';
import { sessionIndicator, stateText, subagentText, taskIndicator, workLine } from '../src/model';

/** What the page shows of a task view, as the page model derives it. */
function rendered(view: TaskView) {
  return {
    task: taskIndicator(view).label,
    subagents: subagentText(view.activity.activeSubagentCount),
    sessions: view.sessions.map((s) => ({
      id: s.sessionId,
      indicator: sessionIndicator(s).label,
      state: stateText(s),
      subagents: subagentText(s.activity.activeSubagentCount),
      work: s.backgroundWork.map(workLine),
      queued: s.queue.entries.length,
    })),
  };
}

/** The views the page is given when updates arrive one by one: one per completed group. */
function pageViews(start: TaskView, updates: readonly Update[]): TaskView[] {
  const groups = new GroupBuffer();
  const out: TaskView[] = [];
  let view = start;
  for (const u of updates) {
    for (const group of groups.push(u)) {
      const r = applyGroup(view, group);
      if (r.kind !== 'applied') continue;
      out.push((view = r.view));
    }
  }
  return out;
}

describe('the page over whole groups of updates', () => {
  it('renders only what some whole entry left, whatever the stream', () => {
    let partial = 0;
    fc.assert(
      fc.property(streams, (steps) => {
        const { owner, checkpoints } = play(steps);
        const states = [initialTaskState('t1'), ...checkpoints.map((c) => c.state)];
        const allowed = new Set(states.map((s) => JSON.stringify(rendered(snapshotOf(s)))));
        for (const view of pageViews(snapshotOf(states[0]!), owner.updates))
          expect(allowed).toContain(JSON.stringify(rendered(view)));
        // The control: one update at a time, the page would render states that never existed.
        let v = snapshotOf(states[0]!);
        for (const u of owner.updates) {
          const r = stepUpdate(v, u);
          if (r.kind === 'applied') v = r.view;
          if (!allowed.has(JSON.stringify(rendered(v)))) partial++;
        }
      }),
      { numRuns: 200 },
    );
    expect(partial).toBeGreaterThan(0);
  });

  it('never says "1 subagent" beside an empty work list', () => {
    const { o, x } = startedSession(CLAUDE_CAPS);
    const promptId = o.submit('s1', 'k1');
    x.dispatch(promptId, o.session('s1').turn!.generation);
    x.output();
    x.subagent('a1');
    x.finished('a1');
    const shows = (view: TaskView) =>
      rendered(view).sessions.map((s): [string, string[]] => [
        s.subagents,
        s.work.map((w) => w.kind),
      ]);
    const stranded = (view: TaskView) =>
      shows(view).some(([n, work]) => n !== '0 subagents' && work.length === 0);
    const oneByOne = viewsOneByOne(snapshotOf(initialTaskState('t1')), o.updates);
    expect(oneByOne.some(stranded)).toBe(true);
    const views = pageViews(snapshotOf(initialTaskState('t1')), o.updates);
    expect(views.filter(stranded)).toEqual([]);
    expect(views.map(shows)).toContainEqual([['1 subagent', ['subagent']]]);
    expect(shows(views[views.length - 1]!)).toEqual([['0 subagents', []]]);
  });
});
