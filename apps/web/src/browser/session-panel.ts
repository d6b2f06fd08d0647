/**
 * The selected session's panel: its state and what needs attention, the permission requests the
 * agent waits on, its background work, its queue, and the lifecycle actions on it.
 */
import type { CommandResult, PermissionRequestView, SessionView } from '@baton/protocol';
import {
  attentionLine,
  queueBlockedText,
  sessionIndicator,
  stateText,
  subagentText,
  workLine,
  type WorkLine,
} from '../model';
import { byId, h, setAttrs, setText, syncList } from './dom';
import { updateIndicator } from './indicator';
import type { Page } from './page';
import { lifecycleCall, path } from './rest';

export class SessionPanel {
  /** Queued prompts and permission requests being answered: their buttons wait. */
  private readonly busyPrompts = new Set<string>();

  constructor(private readonly page: Page) {}

  start(): void {
    this.page.listen(byId('session-reset'), 'click', () => void this.sessionAction('reset'));
    this.page.listen(
      byId('session-force-release'),
      'click',
      () => void this.sessionAction('release'),
    );
    this.page.listen(byId('session-delete'), 'click', () => void this.sessionAction('delete'));
  }

  render(): void {
    const sel = this.page.selected;
    const { session } = this.page.selectedSession();
    const panel = byId('session');
    setText(
      byId('session-title'),
      sel ? `Session ${sel.sessionId} · task ${sel.taskId}` : 'No session selected',
    );
    const details = byId('session-details');
    details.hidden = !session;
    const status = byId('session-status');
    const attention = byId('session-attention');
    const line = session ? attentionLine(session) : null;
    attention.hidden = line === null;
    setAttrs(attention, { 'data-kind': line?.kind });
    setText(attention.querySelector('.attention-headline')!, line ? `${line.headline}:` : '');
    setText(attention.querySelector('.attention-message')!, line?.message ?? '');
    const actions = byId('session-actions');
    actions.hidden = !session;
    const busy = !!sel && this.page.busyActions.has(`${sel.taskId}/${sel.sessionId}`);
    for (const id of ['session-reset', 'session-force-release', 'session-delete']) {
      setAttrs(byId(id), { disabled: busy });
    }
    if (session) {
      const ind = sessionIndicator(session);
      updateIndicator(status.querySelector<HTMLElement>('.ind')!, ind);
      const a = session.activity;
      setText(
        status.querySelector('.status-text')!,
        // The label again in text: a live region announces text changes, not a new aria-label.
        `${ind.label} · ${stateText(session)} · ${subagentText(a.activeSubagentCount)} · ${a.admission} admission`,
      );
      this.renderPermissions(session);
      this.renderWork(session);
      this.renderQueue(session);
    } else {
      const taskStatus = sel ? this.page.tasks.get(sel.taskId)?.view?.status : undefined;
      setText(
        status.querySelector('.status-text')!,
        !sel
          ? 'Select a session in the list.'
          : taskStatus === 'deleted'
            ? 'This task was deleted: its sessions are gone.'
            : this.page.selectedSeen
              ? 'This session was deleted.'
              : !this.page.tasks.has(sel.taskId)
                ? "No such task among this tenant's tasks."
                : this.page.tasks.get(sel.taskId)?.view
                  ? 'No such session in this task.'
                  : 'Loading…',
      );
      status.querySelector<HTMLElement>('.ind')!.hidden = true;
    }
    const loading = !!sel && !session && !this.page.selectedSeen && this.page.tasks.has(sel.taskId);
    setAttrs(panel, { 'aria-busy': loading ? 'true' : false });
  }

  /** The permission requests the agent waits on: what it asks, and a button per option offered. */
  private renderPermissions(session: SessionView): void {
    const requests = session.permissions ?? [];
    byId('permissions').hidden = requests.length === 0;
    syncList(
      byId('permission-list'),
      requests,
      (r) => r.requestId,
      (r) => this.createPermission(r),
      (li, r) => {
        setText(li.querySelector('.permission-title')!, r.title ?? r.toolCallId ?? 'a tool call');
        const kind = li.querySelector<HTMLElement>('.permission-kind')!;
        setText(kind, r.toolKind ? `(${r.toolKind})` : '');
        kind.hidden = !r.toolKind;
        const busy = this.busyPrompts.has(`permission:${r.requestId}`) || !this.page.canPrompt;
        for (const b of Array.from(li.querySelectorAll('button'))) setAttrs(b, { disabled: busy });
      },
    );
  }

  private createPermission(r: PermissionRequestView): HTMLLIElement {
    const buttons = r.options.map((o) => {
      const b = h(
        'button',
        {
          type: 'button',
          class: o.kind.startsWith('reject') ? 'secondary' : '',
          'data-kind': o.kind,
          title: `Answer the agent: ${o.name} (${o.kind.replace(/_/g, ' ')})`,
        },
        o.name,
      );
      b.addEventListener('click', () => void this.answerPermission(r.requestId, o));
      return b;
    });
    return h(
      'li',
      { class: 'permission' },
      h('span', { class: 'permission-title' }),
      h('span', { class: 'permission-kind' }),
      h(
        'span',
        { class: 'permission-actions', role: 'group', 'aria-label': 'Answer the agent' },
        ...buttons,
      ),
    );
  }

  private async answerPermission(
    requestId: string,
    option: { optionId: string; name: string },
  ): Promise<void> {
    const sel = this.page.selected;
    if (!sel) return;
    await this.command(
      `permission:${requestId}`,
      () =>
        this.page.client.answerPermission({
          taskId: sel.taskId,
          sessionId: sel.sessionId,
          requestId,
          optionId: option.optionId,
        }),
      {
        done: `Answered the agent: ${option.name}.`,
        pending: 'Answered; waiting for Baton to take it…',
        not: 'Not answered',
      },
    );
  }

  private renderWork(session: SessionView): void {
    const lines = session.backgroundWork.map(workLine);
    byId('work-empty').hidden = lines.length > 0;
    syncList(byId('work-list'), lines, (w) => w.id, createWork, updateWork);
  }

  private renderQueue(session: SessionView): void {
    const q = session.queue;
    const entries = q.entries;
    byId('queue-empty').hidden = entries.length > 0;
    setText(
      byId('queue-meta'),
      `${entries.length}${q.capacity > 0 ? ` of ${q.capacity}` : ''} queued${
        q.autoRun ? '' : ' · auto-run is off: prompts wait until sent now'
      }`,
    );
    const blocked = byId('queue-blocked');
    const why = queueBlockedText(q);
    setText(blocked, why ?? '');
    blocked.hidden = why === null;
    syncList(
      byId('queue-list'),
      entries,
      (e) => e.promptId,
      (e) => this.createQueued(e.promptId),
      (li, e, i) => {
        setText(li.querySelector('.queued-badge')!, `Queued · ${i + 1}`);
        setText(li.querySelector('.queued-text')!, e.text);
        const origin = li.querySelector<HTMLElement>('.queued-origin')!;
        setText(origin, e.origin === 'human' ? '' : `from ${e.origin}`);
        origin.hidden = e.origin === 'human';
        const busy = this.busyPrompts.has(e.promptId) || !this.page.canPrompt;
        const [sendNow, cancel] = Array.from(li.querySelectorAll('button'));
        const short = e.text.length > 40 ? `${e.text.slice(0, 40)}…` : e.text;
        setAttrs(sendNow!, { disabled: busy, 'aria-label': `Send now: ${short}` });
        setAttrs(cancel!, { disabled: busy, 'aria-label': `Cancel: ${short}` });
      },
    );
  }

  private createQueued(promptId: string): HTMLLIElement {
    const sendNow = h(
      'button',
      {
        type: 'button',
        class: 'secondary',
        title: 'Run this prompt next, replacing the turn running now',
      },
      'Send now',
    );
    const cancel = h(
      'button',
      { type: 'button', class: 'secondary', title: 'Remove this prompt from the queue' },
      'Cancel',
    );
    sendNow.addEventListener('click', () => void this.queueCommand(promptId, 'send_now'));
    cancel.addEventListener('click', () => void this.queueCommand(promptId, 'cancel'));
    return h(
      'li',
      { class: 'queued' },
      h('span', { class: 'queued-badge' }),
      h('span', { class: 'queued-text' }),
      h('span', { class: 'queued-origin' }),
      h('span', { class: 'queued-actions' }, sendNow, cancel),
    );
  }

  private async sessionAction(action: 'reset' | 'release' | 'delete'): Promise<void> {
    const sel = this.page.selected;
    if (!sel) return;
    const key = `${sel.taskId}/${sel.sessionId}`;
    const who = `session ${sel.sessionId}`;
    if (
      action !== 'reset' &&
      !confirm(
        action === 'delete'
          ? `Delete ${who}? Its queued prompts are dropped and its agent stopped.`
          : `Force-release ${who}? Its running turn ends now and its agent is stopped.`,
      )
    )
      return;
    const base = path(sel.taskId, 'sessions', sel.sessionId);
    await this.page.act(key, () =>
      action === 'reset'
        ? lifecycleCall(this.page.token, 'POST', `${base}/reset`, `Reset ${who}.`)
        : action === 'release'
          ? lifecycleCall(
              this.page.token,
              'POST',
              `${base}/force-release`,
              `Force-released ${who}.`,
            )
          : lifecycleCall(this.page.token, 'DELETE', base, `Deleted ${who}.`),
    );
  }

  private async queueCommand(promptId: string, op: 'cancel' | 'send_now'): Promise<void> {
    const sel = this.page.selected;
    const { session } = this.page.selectedSession();
    if (!sel || !session) return;
    const ref = { taskId: sel.taskId, sessionId: sel.sessionId, promptId };
    const generation = session.activity.runningGeneration;
    await this.command(
      promptId,
      () =>
        op === 'cancel'
          ? this.page.client.queue.cancel(ref)
          : this.page.client.queue.sendNow(
              generation === null ? ref : { ...ref, observedGeneration: generation },
            ),
      {
        done: op === 'cancel' ? 'Cancelled the queued prompt.' : 'The prompt runs next.',
        pending: 'Asked; waiting for the answer…',
        not: 'Not done',
      },
    );
  }

  /**
   * Runs a command on a queued prompt or a permission request under `busy` (its buttons wait),
   * and says in the composer's result what it came to.
   */
  private async command(
    busy: string,
    run: () => Promise<CommandResult>,
    say: { done: string; pending: string; not: string },
  ): Promise<void> {
    const result = byId('composer-result');
    this.busyPrompts.add(busy);
    this.page.schedule();
    try {
      const r = await run();
      setText(
        result,
        r.status === 'done'
          ? say.done
          : r.status === 'pending'
            ? say.pending
            : `${say.not}: ${r.message}`,
      );
    } catch (err) {
      setText(result, `${say.not}: ${(err as Error).message}`);
    } finally {
      this.busyPrompts.delete(busy);
      this.page.schedule();
    }
  }
}

function createWork(w: WorkLine): HTMLLIElement {
  return h(
    'li',
    { class: `work work-${w.kind === 'shell' || w.kind === 'subagent' ? w.kind : 'other'}` },
    h('span', { class: 'work-kind' }),
    h('span', { class: 'work-label' }),
    h('time', { class: 'work-since' }),
    h('span', { class: 'work-possibly-finished' }),
    h('code', { class: 'work-detail' }),
  );
}

function updateWork(li: HTMLElement, w: WorkLine): void {
  setText(li.querySelector('.work-kind')!, w.kindText);
  setText(li.querySelector('.work-label')!, w.label);
  const detail = li.querySelector<HTMLElement>('.work-detail')!;
  setText(detail, w.detail ?? '');
  detail.hidden = w.detail === null;
  const since = li.querySelector<HTMLElement>('.work-since')!;
  const started = new Date(w.startedAt);
  setAttrs(since, { datetime: w.startedAt, title: started.toString() });
  setText(since, `since ${started.toLocaleTimeString()}`);
  const maybe = li.querySelector<HTMLElement>('.work-possibly-finished')!;
  setText(maybe, w.possiblyFinished ? 'may have finished (the agent did not say which)' : '');
  maybe.hidden = !w.possiblyFinished;
}
