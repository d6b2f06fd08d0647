/** The tenant's tasks: the board (every task, by group) and the watched tasks and sessions. */
import { BOARD_GROUP_TITLES, Board, type SessionView } from '@baton/protocol';
import {
  needsYouText,
  sessionIndicator,
  stateText,
  subagentText,
  usageText,
  taskIndicator,
  taskStatusText,
} from '../model';
import { byId, h, setAttrs, setText, syncList } from './dom';
import { indicatorElement, updateIndicator } from './indicator';
import { MAX_TASKS, type Page, type TaskEntry } from './page';
import { lifecycleCall, path } from './rest';

export class TaskList {
  private boardData: Board | null = null;

  constructor(private readonly page: Page) {}

  render(): void {
    this.renderBoard();
    this.renderTasks();
  }

  /** The board counts every task of the tenant, watched here or not (GET /v1/board). */
  async refreshBoard(): Promise<void> {
    try {
      const res = await fetch('/v1/board', {
        headers: { authorization: `Bearer ${this.page.token}` },
        cache: 'no-store',
      });
      const parsed = Board.safeParse(await res.json().catch(() => null));
      if (parsed.success && !this.page.stopped) this.boardData = parsed.data;
    } catch {
      // The next refresh tries again; the board keeps what it showed.
    }
  }

  private renderBoard(): void {
    const data = this.boardData;
    const groups = (data?.groups ?? []).map((g) => ({
      ...g,
      title: BOARD_GROUP_TITLES[g.group],
    }));
    syncList(
      byId('board'),
      groups,
      (g) => g.group,
      (g) =>
        h(
          'li',
          { class: 'board-group', 'data-group': g.group },
          h(
            'h3',
            {},
            h('span', { class: 'board-title' }, g.title),
            ' ',
            h('span', { class: 'board-count' }),
          ),
          h('ul', { 'aria-label': g.title }),
        ),
      (el, g) => {
        setAttrs(el, { 'data-count': g.count });
        setText(el.querySelector('.board-count')!, `(${g.count})`);
        syncList(
          el.querySelector('ul')!,
          g.taskIds,
          (id) => id,
          (id) => {
            const b = h('button', { type: 'button', class: 'secondary' }, id);
            b.addEventListener('click', () => {
              const s = this.page.tasks.get(id)?.view?.sessions[0];
              if (s) this.page.select({ taskId: id, sessionId: s.sessionId });
            });
            return h('li', {}, b);
          },
          (li, id) => {
            // A task this page does not watch (past its limit) is counted, not selectable.
            const watched = !!this.page.tasks.get(id)?.view?.sessions[0];
            setAttrs(li.querySelector('button')!, {
              disabled: !watched,
              title: watched ? `Show task ${id}` : 'Not watched on this page',
            });
          },
        );
      },
    );
  }

  private sortedTasks(): TaskEntry[] {
    return [...this.page.tasks.values()].sort((a, b) => a.taskId.localeCompare(b.taskId));
  }

  private renderTasks(): void {
    const tasks = this.sortedTasks();
    const empty = byId('tasks-empty');
    empty.hidden = tasks.length > 0;
    const more = byId('tasks-more');
    more.hidden = this.page.notShown === 0;
    setText(
      more,
      `${this.page.notShown} more tasks are not shown (the page watches ${MAX_TASKS}).`,
    );
    // Nothing chosen yet: the first session of the first task.
    if (!this.page.selected) {
      const first = tasks.find((t) => t.view && t.view.sessions.length > 0);
      const s = first?.view?.sessions[0];
      if (first && s) this.page.select({ taskId: first.taskId, sessionId: s.sessionId });
    }
    syncList(
      byId('task-list'),
      tasks,
      (t) => t.taskId,
      (t) => this.createTask(t),
      (el, t) => this.updateTask(el, t),
    );
  }

  private createTask(t: TaskEntry): HTMLLIElement {
    const el = createTask(t);
    const [archive, remove] = Array.from(
      el.querySelectorAll<HTMLButtonElement>('.task-actions button'),
    );
    archive!.addEventListener('click', () => {
      const status = this.page.tasks.get(t.taskId)?.view?.status;
      void this.taskAction(t.taskId, status === 'archived' ? 'unarchive' : 'archive');
    });
    remove!.addEventListener('click', () => void this.taskAction(t.taskId, 'delete'));
    return el;
  }

  private updateTask(el: HTMLElement, t: TaskEntry): void {
    const view = t.view;
    const status = view?.status ?? 'active';
    setAttrs(el, { 'data-status': status });
    const badge = el.querySelector<HTMLElement>('.task-status')!;
    setAttrs(badge, { 'data-status': status });
    setText(badge, status === 'active' ? '' : status);
    badge.hidden = status === 'active';
    const actions = el.querySelector<HTMLElement>('.task-actions')!;
    // A tombstone has nothing left to do.
    actions.hidden = !view || status === 'deleted';
    const [archive, remove] = Array.from(actions.querySelectorAll('button'));
    const busy = this.page.busyActions.has(t.taskId);
    setText(archive!, status === 'archived' ? 'Unarchive' : 'Archive');
    setAttrs(archive!, {
      disabled: busy,
      'aria-label': `${status === 'archived' ? 'Unarchive' : 'Archive'} task ${t.taskId}`,
    });
    setAttrs(remove!, { disabled: busy, 'aria-label': `Delete task ${t.taskId}` });
    const agg = el.querySelector<HTMLElement>('.task-activity')!;
    const subagents = el.querySelector<HTMLElement>('.subagents')!;
    const note = el.querySelector<HTMLElement>('.task-note')!;
    if (view) {
      const ind = taskIndicator(view);
      updateIndicator(agg, {
        ...ind,
        title: `${ind.title} (the most active of the task's sessions)`,
      });
      agg.hidden = false;
      const n = view.activity.activeSubagentCount;
      setText(subagents, subagentText(n));
      setAttrs(subagents, { title: 'Subagents running now, over all sessions of the task' });
      subagents.hidden = false;
    } else {
      agg.hidden = true;
      subagents.hidden = true;
    }
    const needing = view?.activity.sessionsNeedingPerson ?? 0;
    const needs = el.querySelector<HTMLElement>('.task-needs')!;
    setText(needs, needsYouText(needing));
    needs.hidden = needing === 0;
    const noteText = t.error
      ? `Cannot watch this task: ${t.error}`
      : !view
        ? 'Loading…'
        : (taskStatusText(view.status) ?? (view.sessions.length === 0 ? 'No sessions.' : ''));
    setText(note, noteText);
    note.hidden = noteText === '';
    setAttrs(note, { class: t.error ? 'task-note error' : 'task-note' });
    syncList(
      el.querySelector<HTMLElement>('.sessions')!,
      view?.sessions ?? [],
      (s) => s.sessionId,
      (s) => this.createSessionRow(t.taskId, s),
      (row, s) => this.updateSessionRow(row, t.taskId, s),
    );
  }

  private createSessionRow(taskId: string, s: SessionView): HTMLLIElement {
    const button = h('button', { type: 'button', class: 'session-button' }, s.sessionId);
    button.addEventListener('click', () => this.page.select({ taskId, sessionId: s.sessionId }));
    return h(
      'li',
      { class: 'session-row', 'data-session': `${taskId}/${s.sessionId}` },
      indicatorElement(),
      button,
      h('span', { class: 'session-state' }),
      h('span', { class: 'session-usage' }),
      h('span', { class: 'session-queued' }),
      h('span', { class: 'session-needs needs-you' }),
    );
  }

  private updateSessionRow(row: HTMLElement, taskId: string, s: SessionView): void {
    updateIndicator(row.querySelector<HTMLElement>('.ind')!, sessionIndicator(s));
    const selected =
      this.page.selected?.taskId === taskId && this.page.selected.sessionId === s.sessionId;
    setAttrs(row.querySelector('button')!, {
      'aria-pressed': selected ? 'true' : 'false',
      'aria-label': `Session ${s.sessionId}`,
    });
    setAttrs(row, { class: selected ? 'session-row selected' : 'session-row' });
    setText(row.querySelector('.session-state')!, stateText(s));
    const usage = usageText(s.activity.usage);
    const u = row.querySelector<HTMLElement>('.session-usage')!;
    setText(u, usage ?? '');
    setAttrs(u, { title: usage ? "The agent's context window, as it last reported" : false });
    u.hidden = usage === null;
    const queued = s.queue.entries.length;
    const q = row.querySelector<HTMLElement>('.session-queued')!;
    setText(q, queued > 0 ? `${queued} queued` : '');
    q.hidden = queued === 0;
    const asks = (s.permissions ?? []).length;
    const needs = row.querySelector<HTMLElement>('.session-needs')!;
    setText(needs, asks > 0 ? 'needs you' : '');
    setAttrs(needs, {
      title: asks > 0 ? 'The agent waits for your answer to a permission request' : false,
    });
    needs.hidden = asks === 0;
  }

  private async taskAction(
    taskId: string,
    action: 'archive' | 'unarchive' | 'delete',
  ): Promise<void> {
    if (
      action === 'delete' &&
      !confirm(
        `Delete task ${taskId} for good? Its queued prompts are dropped, its agents stopped, and its id stays taken.`,
      )
    )
      return;
    await this.page.act(taskId, () =>
      action === 'delete'
        ? lifecycleCall(this.page.token, 'DELETE', path(taskId), `Deleted task ${taskId}.`)
        : lifecycleCall(
            this.page.token,
            'POST',
            `${path(taskId)}/${action}`,
            `${action === 'archive' ? 'Archived' : 'Unarchived'} task ${taskId}.`,
          ),
    );
  }
}

let nextTitleId = 0;

function createTask(t: TaskEntry): HTMLLIElement {
  const titleId = `task-title-${++nextTitleId}`;
  return h(
    'li',
    { class: 'task', 'data-task': t.taskId },
    h(
      'article',
      { 'aria-labelledby': titleId },
      h(
        'header',
        { class: 'task-header' },
        h('h3', { id: titleId }, t.taskId),
        h('span', { class: 'task-status' }),
        indicatorElement('task-activity'),
        h('span', { class: 'subagents' }),
        h('span', { class: 'task-needs needs-you' }),
      ),
      h('p', { class: 'task-note' }),
      h(
        'div',
        { class: 'task-actions', role: 'group', 'aria-label': `Actions on task ${t.taskId}` },
        h(
          'button',
          {
            type: 'button',
            class: 'secondary',
            title: 'Archive: no prompts, no agents, queues dropped, until it is unarchived',
          },
          'Archive',
        ),
        h(
          'button',
          {
            type: 'button',
            class: 'secondary danger',
            title: 'Delete for good: a tombstone stays, and its id stays taken',
          },
          'Delete task',
        ),
      ),
      h('ul', { class: 'sessions', 'aria-label': `Sessions of task ${t.taskId}` }),
    ),
  );
}
