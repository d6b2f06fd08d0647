/**
 * The live page once signed in: one client connection that watches the tenant's tasks, the
 * connection banner, the selection (in the address's hash), and the parts that render the rest.
 */
import { BatonClient, type BatonError } from '@baton/client';
import type { SessionView, TaskView } from '@baton/protocol';
import { Composer } from './composer';
import { ConversationPanel } from './conversation-panel';
import { byId, setAttrs, setText } from './dom';
import { MAX_TASKS, type ConnectionState, type Page, type Selection, type TaskEntry } from './page';
import { listTasks, type ActionOutcome } from './rest';
import { SessionPanel } from './session-panel';
import { storage } from './storage';
import { TaskList } from './task-list';
import { TimelinePanel } from './timeline-panel';

const TASK_LIST_REFRESH_MS = 5_000;

export class App implements Page {
  readonly client = new BatonClient({
    retryInitialConnect: true,
    // A person is watching: retry soon, and never wait long between attempts.
    backoff: { initialMs: 200, maxMs: 3_000 },
  });
  readonly tasks = new Map<string, TaskEntry>();
  notShown = 0;
  selected: Selection | null = null;
  selectedSeen = false;
  connection: ConnectionState = 'connecting';
  stopped = false;
  readonly busyActions = new Set<string>();
  private attempt = 0;
  private frame = 0;
  private readonly timers: Array<ReturnType<typeof setInterval>> = [];
  private readonly offs: Array<() => void> = [];
  private readonly listeners: Array<[EventTarget, string, EventListener]> = [];
  private readonly taskList = new TaskList(this);
  private readonly session = new SessionPanel(this);
  private readonly composer = new Composer(this);
  private readonly conversation = new ConversationPanel(this);
  private readonly timeline = new TimelinePanel(this, (promptId) =>
    this.conversation.reveal(promptId),
  );

  constructor(
    readonly token: string,
    readonly canPrompt: boolean,
    /** Back to the sign-in form, saying why. */
    private readonly showSignIn: (message: string) => void,
  ) {}

  start(taskIds: string[]): void {
    this.selected = selectionFromHash();
    const c = this.client;
    this.offs.push(
      c.on('close', (e) => {
        if (!e.willReconnect) return;
        this.connection = this.connection === 'connecting' ? 'connecting' : 'reconnecting';
        this.schedule();
      }),
      c.on('reconnecting', (e) => {
        this.attempt = e.attempt;
        this.schedule();
      }),
      c.on('open', (e) => {
        this.attempt = 0;
        // Every subscription is renewed from its last seq now; live again once all answered.
        this.connection = e.reconnected ? 'resyncing' : 'connecting';
        this.schedule();
        if (e.reconnected) void this.refreshTasks();
      }),
      c.on('update', (u) => this.composer.updated(u)),
      c.on('error', (e: BatonError) => {
        if (e.code === 'unauthorized' || e.code === 'forbidden') {
          storage.set(null);
          this.showSignIn(`Signed out: the gateway refused the token (${e.message}).`);
        }
      }),
    );
    const wsUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
    c.connect(wsUrl, this.token).catch((e: BatonError) => {
      if (!this.stopped && e.code !== 'closed') this.showSignIn(`Cannot connect: ${e.message}`);
    });
    for (const id of taskIds) this.addTask(id);
    void this.taskList.refreshBoard().then(() => this.schedule());
    this.timers.push(
      setInterval(() => this.checkLive(), 200),
      setInterval(() => void this.refreshTasks(), TASK_LIST_REFRESH_MS),
      // The timeline's right edge is now: it grows while nothing else changes.
      setInterval(() => this.timeline.render(), 1_000),
    );
    this.listen(window, 'hashchange', () => {
      this.selected = selectionFromHash();
      this.selectedSeen = false;
      this.schedule();
    });
    this.composer.start();
    this.session.start();
    this.timeline.buildRangePicker();
    this.render();
  }

  stop(): void {
    this.stopped = true;
    this.conversation.stop();
    for (const t of this.timers) clearInterval(t);
    for (const off of this.offs) off();
    for (const [target, type, fn] of this.listeners) target.removeEventListener(type, fn);
    cancelAnimationFrame(this.frame);
    void this.client.close();
    byId('task-list').replaceChildren();
    for (const id of ['queue-list', 'work-list', 'timeline-lanes', 'board', 'conversation-list']) {
      byId(id).replaceChildren();
    }
    setText(byId('composer-result'), '');
    byId('action-result').hidden = true;
  }

  listen(target: EventTarget, type: string, fn: EventListener): void {
    target.addEventListener(type, fn);
    this.listeners.push([target, type, fn]);
  }

  private addTask(taskId: string): void {
    if (this.tasks.has(taskId)) return;
    if (this.tasks.size >= MAX_TASKS) {
      this.notShown++;
      return;
    }
    const entry: TaskEntry = { taskId, sub: null, view: null, error: null };
    this.tasks.set(taskId, entry);
    entry.sub = this.client.subscribe(taskId, {
      // Once per whole group of updates (one stream entry's): never a view between two of them.
      onView: (view) => {
        entry.view = view;
        entry.error = null;
        this.schedule();
      },
      onError: (e) => {
        entry.error = e.message;
        this.schedule();
      },
    });
  }

  /** New tasks of the tenant appear without a reload. */
  private async refreshTasks(): Promise<void> {
    const check = await listTasks(this.token);
    if (this.stopped) return;
    if (!check.ok) {
      if (check.refused) {
        storage.set(null);
        this.showSignIn(`Signed out: ${check.message}`);
      }
      return;
    }
    this.notShown = 0;
    for (const id of check.tasks) this.addTask(id);
    await this.taskList.refreshBoard();
    this.schedule();
  }

  /**
   * Live once connected and every subscription has been answered since the last (re)connect;
   * resyncing again whenever a subscription that had a view has to start over from a snapshot.
   */
  private checkLive(): void {
    if (this.connection === 'reconnecting' || !this.client.connected) return;
    const states = [...this.tasks.values()].map((t) => t.sub?.state);
    let next: ConnectionState = this.connection;
    if (this.connection === 'live') {
      if (states.includes('resyncing')) next = 'resyncing';
    } else if (states.every((s) => s === undefined || s === 'live' || s === 'closed')) {
      next = 'live';
    }
    if (next === this.connection) return;
    this.connection = next;
    this.schedule();
  }

  schedule(): void {
    if (this.stopped || this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      if (!this.stopped) this.render();
    });
  }

  private render(): void {
    this.renderBanner();
    this.taskList.render();
    this.session.render();
    this.composer.render();
    this.timeline.render();
    this.conversation.render();
  }

  private renderBanner(): void {
    const banner = byId('banner');
    const text =
      this.connection === 'connecting'
        ? 'Connecting…'
        : this.connection === 'reconnecting'
          ? `Connection lost — reconnecting…${this.attempt > 1 ? ` (attempt ${this.attempt})` : ''}`
          : this.connection === 'resyncing'
            ? 'Reconnected — resyncing…'
            : '';
    setAttrs(banner, { 'data-state': this.connection });
    setText(banner, text);
    banner.hidden = text === '';
  }

  select(sel: Selection): void {
    this.selected = sel;
    this.selectedSeen = false;
    const hash = `#${encodeURIComponent(sel.taskId)}/${encodeURIComponent(sel.sessionId)}`;
    if (location.hash !== hash) history.replaceState(history.state, '', hash);
    setText(byId('composer-result'), '');
    this.schedule();
  }

  selectedSession(): { view: TaskView | null; session: SessionView | undefined } {
    const sel = this.selected;
    if (!sel) return { view: null, session: undefined };
    const view = this.tasks.get(sel.taskId)?.view ?? null;
    const session = view?.sessions.find((s) => s.sessionId === sel.sessionId);
    if (session) this.selectedSeen = true;
    return { view, session };
  }

  async act(key: string, run: () => Promise<ActionOutcome>): Promise<void> {
    this.busyActions.add(key);
    this.schedule();
    try {
      this.showAction(await run());
    } finally {
      this.busyActions.delete(key);
      this.schedule();
    }
  }

  private showAction(r: ActionOutcome): void {
    const el = byId('action-result');
    setAttrs(el, { 'data-outcome': r.outcome });
    setText(el, r.text);
    el.hidden = false;
  }
}

function selectionFromHash(): Selection | null {
  const m = /^#([^/]+)\/(.+)$/.exec(location.hash);
  if (!m) return null;
  try {
    return { taskId: decodeURIComponent(m[1]!), sessionId: decodeURIComponent(m[2]!) };
  } catch {
    return null;
  }
}
