/**
 * Baton's live activity page: sign in with a token, watch the tenant's tasks and sessions over
 * /ws with @baton/client (which reconnects and resumes by itself), and work one session's queue
 * and composer. Everything shown is derived from the views by ../model.
 */
import { BatonClient, type BatonError, type Subscription } from '@baton/client';
import {
  BOARD_GROUP_TITLES,
  Board,
  Id,
  TaskHistory,
  type PermissionRequestView,
  type SessionHistory,
  type SessionView,
  type TaskView,
} from '@baton/protocol';
import { z } from 'zod';
import {
  attentionLine,
  canPrompt,
  composerMode,
  decisionText,
  queueBlockedText,
  sessionIndicator,
  stateText,
  needsYouText,
  subagentText,
  taskIndicator,
  taskStatusText,
  tokenClaims,
  workLine,
  type ComposerMode,
  type Indicator,
  type WorkLine,
} from '../model';
import {
  TIMELINE_RANGES,
  historyQuery,
  isTimelineRange,
  rangeText,
  timelineOf,
  windowStart,
  type Bar,
  type Lane,
  type TimelineRange,
} from '../timeline';
import { byId, h, setAttrs, setText, syncList } from './dom';
import './styles.css';

const TOKEN_KEY = 'baton.token';
/** The gateway holds at most GATEWAY_MAX_SUBSCRIPTIONS (100 by default) per connection. */
const MAX_TASKS = 50;
const TASK_LIST_REFRESH_MS = 5_000;
/** How often the timeline asks again while the session changes. */
const TIMELINE_REFRESH_MS = 1_500;
/** The timeline's range (TIMELINE_RANGES) is remembered on this browser. */
const RANGE_KEY = 'baton.timelineRange';
/** The height of one row of a timeline lane (bars that overlap in time take a row each). */
const ROW_REM = 1.4;
const TIMELINE_HINT = 'Hover over or focus a bar for its exact times.';
const TaskList = z.object({ tasks: z.array(Id) });
const RestError = z.object({ error: z.object({ code: z.string(), message: z.string() }) });
const RestCommandResult = z.object({
  status: z.enum(['done', 'failed', 'pending']),
  reason: z.string().optional(),
  message: z.string().optional(),
});

/** What a lifecycle command came to, in words for the page. */
type ActionOutcome = { outcome: 'done' | 'pending' | 'refused'; text: string };

/**
 * A lifecycle command over REST with the page's token: the owner's answer (done, pending, or
 * failed with its reason), or the gateway's refusal (a missing scope: its message, as it is).
 */
async function lifecycleCall(
  token: string,
  method: 'POST' | 'DELETE',
  path: string,
  done: string,
): Promise<ActionOutcome> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(method === 'POST' ? { body: '{}' } : {}),
      cache: 'no-store',
    });
  } catch (err) {
    return { outcome: 'refused', text: `Not done: cannot reach the gateway (${String(err)}).` };
  }
  const body: unknown = await res.json().catch(() => null);
  const result = RestCommandResult.safeParse(body);
  if (result.success) {
    const r = result.data;
    if (r.status === 'done') return { outcome: 'done', text: done };
    if (r.status === 'pending')
      return { outcome: 'pending', text: 'Asked; waiting for the answer…' };
    return { outcome: 'refused', text: `Not done: ${r.message ?? r.reason ?? 'refused'}` };
  }
  const e = RestError.safeParse(body);
  return {
    outcome: 'refused',
    text: `Not done: ${e.success ? e.data.error.message : `HTTP ${res.status}`}`,
  };
}

const path = (...parts: string[]) => `/v1/tasks/${parts.map(encodeURIComponent).join('/')}`;

const storage = {
  get(): string | null {
    try {
      return sessionStorage.getItem(TOKEN_KEY);
    } catch {
      return null;
    }
  },
  set(token: string | null): void {
    try {
      if (token === null) sessionStorage.removeItem(TOKEN_KEY);
      else sessionStorage.setItem(TOKEN_KEY, token);
    } catch {
      // Storage disabled: the page still works until it is reloaded.
    }
  },
};

/** The range this browser chose last, or 1 h. */
function savedRange(): TimelineRange {
  try {
    const v = localStorage.getItem(RANGE_KEY);
    if (isTimelineRange(v)) return v;
  } catch {
    // Storage disabled.
  }
  return '1h';
}

/** A `?token=` link signs in once; the token must not stay in the address bar or history. */
function takeTokenFromUrl(): string | null {
  const url = new URL(location.href);
  const token = url.searchParams.get('token');
  if (token === null) return null;
  url.searchParams.delete('token');
  history.replaceState(history.state, '', `${url.pathname}${url.search}${url.hash}`);
  return token.trim() || null;
}

type TokenCheck = { ok: true; tasks: string[] } | { ok: false; message: string; refused: boolean };

/**
 * Browsers cannot see why a WebSocket upgrade failed (a 401 is only a close 1006), so the token
 * is tried on REST first, where a refusal comes with its reason.
 */
async function listTasks(token: string): Promise<TokenCheck> {
  let res: Response;
  try {
    res = await fetch('/v1/tasks', {
      headers: { authorization: `Bearer ${token}` },
      cache: 'no-store',
    });
  } catch (err) {
    return { ok: false, refused: false, message: `Cannot reach the gateway (${String(err)}).` };
  }
  const body: unknown = await res.json().catch(() => null);
  if (res.ok) {
    const parsed = TaskList.safeParse(body);
    return parsed.success
      ? { ok: true, tasks: parsed.data.tasks }
      : {
          ok: false,
          refused: false,
          message: 'The gateway answered with an unexpected task list.',
        };
  }
  const reason = RestError.safeParse(body);
  const why = reason.success ? reason.data.error.message : `HTTP ${res.status}`;
  if (res.status === 401)
    return { ok: false, refused: true, message: `The gateway refused this token: ${why}.` };
  if (res.status === 403)
    return { ok: false, refused: true, message: `This token may not read tasks: ${why}.` };
  return { ok: false, refused: false, message: `The gateway answered ${res.status}: ${why}.` };
}

// ---------------------------------------------------------------------------------------------
// Sign-in
// ---------------------------------------------------------------------------------------------

let app: App | null = null;

function showSignIn(message: string): void {
  app?.stop();
  app = null;
  byId('app').hidden = true;
  byId('who').hidden = true;
  byId('sign-out').hidden = true;
  byId('banner').hidden = true;
  byId('sign-in').hidden = false;
  setText(byId('sign-in-error'), message);
  byId<HTMLInputElement>('token').focus();
}

async function signIn(token: string): Promise<void> {
  setText(byId('sign-in-error'), '');
  const check = await listTasks(token);
  if (!check.ok) {
    // A refused token is forgotten; an unreachable gateway keeps it for a reload.
    if (check.refused) storage.set(null);
    showSignIn(check.message);
    return;
  }
  storage.set(token);
  byId('sign-in').hidden = true;
  byId('app').hidden = false;
  const claims = tokenClaims(token);
  const who = byId('who');
  setText(
    who,
    claims.tenant
      ? `Tenant ${claims.tenant}${claims.scopes ? ` · ${claims.scopes.join(', ')}` : ''}`
      : 'Signed in',
  );
  who.hidden = false;
  byId('sign-out').hidden = false;
  app?.stop(); // a second sign-in (a double submit) replaces the first
  app = new App(token, canPrompt(claims.scopes));
  app.start(check.tasks);
}

/** A bar of the timeline: placed by fraction of the window, named by its full description. */
function updateBar(el: HTMLElement, b: Bar): void {
  setAttrs(el, {
    class: `bar lane-${b.kind.replace(/ /g, ' lane-')}`,
    'aria-label': b.detail,
    title: b.detail,
    'data-open': b.open,
    'data-row': b.row,
  });
  el.style.top = `${0.1 + b.row * ROW_REM}rem`;
  el.style.left = `${b.left * 100}%`;
  el.style.width = `${b.width * 100}%`;
  // The label is drawn when there is room for it; the description is always there.
  setText(el, b.width > 0.08 ? b.label : '');
}

function boot(): void {
  byId<HTMLFormElement>('sign-in-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const input = byId<HTMLInputElement>('token');
    const token = input.value.trim();
    if (!token) return;
    input.value = '';
    void signIn(token);
  });
  byId('sign-out').addEventListener('click', () => {
    storage.set(null);
    // What was selected belongs to the tenant that signed out.
    history.replaceState(null, '', location.pathname);
    showSignIn('');
  });
  const token = takeTokenFromUrl() ?? storage.get();
  if (token) void signIn(token);
  else showSignIn('');
}

// ---------------------------------------------------------------------------------------------
// The live page
// ---------------------------------------------------------------------------------------------

interface TaskEntry {
  readonly taskId: string;
  sub: Subscription | null;
  view: TaskView | null;
  error: string | null;
}

type Connection = 'connecting' | 'live' | 'reconnecting' | 'resyncing';

interface Selection {
  readonly taskId: string;
  readonly sessionId: string;
}

class App {
  private readonly client = new BatonClient({
    retryInitialConnect: true,
    // A person is watching: retry soon, and never wait long between attempts.
    backoff: { initialMs: 200, maxMs: 3_000 },
  });
  private readonly tasks = new Map<string, TaskEntry>();
  private notShown = 0;
  private selected: Selection | null = null;
  /** The selected session appeared in a view: its absence later means it was deleted. */
  private selectedSeen = false;
  private connection: Connection = 'connecting';
  private attempt = 0;
  private frame = 0;
  private stopped = false;
  private readonly timers: Array<ReturnType<typeof setInterval>> = [];
  private readonly offs: Array<() => void> = [];
  private readonly busyPrompts = new Set<string>();
  /** Lifecycle commands under way, by task (and session): their buttons wait for the answer. */
  private readonly busyActions = new Set<string>();
  private sending = false;
  /** The last prompt sent from the composer: its later decisions (queued → admitted) show too. */
  private lastPrompt: { taskId: string; promptId: string } | null = null;
  private readonly listeners: Array<[EventTarget, string, EventListener]> = [];
  private boardData: Board | null = null;
  /** The selected session's history (REST), asked again when its view moves on. */
  private history: {
    key: string;
    data: SessionHistory | null;
    seq: number;
    askedAt: number;
    inFlight: boolean;
    error: string | null;
  } | null = null;
  /** How far back the timeline looks (the range picker). */
  private range: TimelineRange = savedRange();

  constructor(
    private readonly token: string,
    private readonly canPrompt: boolean,
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
      c.on('update', (u) => {
        const last = this.lastPrompt;
        if (u.type !== 'prompt.decided' || !last) return;
        if (u.taskId !== last.taskId || u.data.promptId !== last.promptId) return;
        setText(byId('composer-result'), decisionText(u.data.decision));
      }),
      c.on('error', (e: BatonError) => {
        if (e.code === 'unauthorized' || e.code === 'forbidden') {
          storage.set(null);
          showSignIn(`Signed out: the gateway refused the token (${e.message}).`);
        }
      }),
    );
    const wsUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
    c.connect(wsUrl, this.token).catch((e: BatonError) => {
      if (!this.stopped && e.code !== 'closed') showSignIn(`Cannot connect: ${e.message}`);
    });
    for (const id of taskIds) this.addTask(id);
    void this.refreshBoard().then(() => this.schedule());
    this.timers.push(
      setInterval(() => this.checkLive(), 200),
      setInterval(() => void this.refreshTasks(), TASK_LIST_REFRESH_MS),
      // The timeline's right edge is now: it grows while nothing else changes.
      setInterval(() => this.renderTimeline(), 1_000),
    );
    this.listen(window, 'hashchange', () => {
      this.selected = selectionFromHash();
      this.selectedSeen = false;
      this.schedule();
    });
    this.listen(byId('composer'), 'submit', (ev) => {
      ev.preventDefault();
      void this.submitPrompt();
    });
    this.listen(byId('prompt'), 'keydown', (ev) => {
      const k = ev as KeyboardEvent;
      if (k.key === 'Enter' && (k.ctrlKey || k.metaKey)) {
        k.preventDefault();
        void this.submitPrompt();
      }
    });
    this.listen(byId('prompt'), 'input', () => this.schedule());
    this.listen(byId('session-reset'), 'click', () => void this.sessionAction('reset'));
    this.listen(byId('session-force-release'), 'click', () => void this.sessionAction('release'));
    this.listen(byId('session-delete'), 'click', () => void this.sessionAction('delete'));
    this.buildRangePicker();
    this.render();
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    for (const off of this.offs) off();
    for (const [target, type, fn] of this.listeners) target.removeEventListener(type, fn);
    cancelAnimationFrame(this.frame);
    void this.client.close();
    byId('task-list').replaceChildren();
    for (const id of ['queue-list', 'work-list', 'timeline-lanes', 'board']) {
      byId(id).replaceChildren();
    }
    setText(byId('composer-result'), '');
    byId('action-result').hidden = true;
  }

  private listen(target: EventTarget, type: string, fn: EventListener): void {
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
        showSignIn(`Signed out: ${check.message}`);
      }
      return;
    }
    this.notShown = 0;
    for (const id of check.tasks) this.addTask(id);
    await this.refreshBoard();
    this.schedule();
  }

  /** The board counts every task of the tenant, watched here or not (GET /v1/board). */
  private async refreshBoard(): Promise<void> {
    try {
      const res = await fetch('/v1/board', {
        headers: { authorization: `Bearer ${this.token}` },
        cache: 'no-store',
      });
      const parsed = Board.safeParse(await res.json().catch(() => null));
      if (parsed.success && !this.stopped) this.boardData = parsed.data;
    } catch {
      // The next refresh tries again; the board keeps what it showed.
    }
  }

  /**
   * Live once connected and every subscription has been answered since the last (re)connect;
   * resyncing again whenever a subscription that had a view has to start over from a snapshot.
   */
  private checkLive(): void {
    if (this.connection === 'reconnecting' || !this.client.connected) return;
    const states = [...this.tasks.values()].map((t) => t.sub?.state);
    let next: Connection = this.connection;
    if (this.connection === 'live') {
      if (states.includes('resyncing')) next = 'resyncing';
    } else if (states.every((s) => s === undefined || s === 'live' || s === 'closed')) {
      next = 'live';
    }
    if (next === this.connection) return;
    this.connection = next;
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped || this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      if (!this.stopped) this.render();
    });
  }

  // -------------------------------------------------------------------------------------------
  // Rendering
  // -------------------------------------------------------------------------------------------

  private render(): void {
    this.renderBanner();
    this.renderBoard();
    this.renderTasks();
    this.renderSession();
    this.renderTimeline();
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
              const s = this.tasks.get(id)?.view?.sessions[0];
              if (s) this.select({ taskId: id, sessionId: s.sessionId });
            });
            return h('li', {}, b);
          },
          (li, id) => {
            // A task this page does not watch (past its limit) is counted, not selectable.
            const watched = !!this.tasks.get(id)?.view?.sessions[0];
            setAttrs(li.querySelector('button')!, {
              disabled: !watched,
              title: watched ? `Show task ${id}` : 'Not watched on this page',
            });
          },
        );
      },
    );
  }

  /** Asks for the selected session's history when it is new or its view moved on (throttled). */
  private loadHistory(): void {
    const sel = this.selected;
    const view = sel ? this.tasks.get(sel.taskId)?.view : null;
    if (!sel || !view) return;
    const key = `${sel.taskId}/${sel.sessionId}/${this.range}`;
    if (this.history?.key !== key) {
      // Another session's bar described below the lanes no longer applies.
      if (this.history && !this.history.key.startsWith(`${sel.taskId}/${sel.sessionId}/`))
        setText(byId('timeline-detail'), TIMELINE_HINT);
      this.history = { key, data: null, seq: -1, askedAt: 0, inFlight: false, error: null };
    }
    const hs = this.history;
    if (hs.inFlight || hs.seq === view.seq || Date.now() - hs.askedAt < TIMELINE_REFRESH_MS) return;
    hs.inFlight = true;
    hs.askedAt = Date.now();
    const seq = view.seq;
    const { since, until } = historyQuery(this.range, Date.now());
    const url = `${path(sel.taskId, 'sessions', sel.sessionId, 'history')}?since=${since}&until=${until}`;
    void fetch(url, {
      headers: { authorization: `Bearer ${this.token}` },
      cache: 'no-store',
    })
      .then(async (res) => {
        const body: unknown = await res.json().catch(() => null);
        const parsed = TaskHistory.safeParse(body);
        if (this.history !== hs) return;
        if (parsed.success) {
          // Nothing in the window yet is an empty history, not a missing one.
          hs.data = parsed.data.sessions.find((s) => s.sessionId === sel.sessionId) ?? {
            sessionId: sel.sessionId,
            activity: [],
            turns: [],
            background: [],
            prompts: [],
            executions: [],
          };
          hs.seq = seq;
          hs.error = null;
        } else {
          const e = RestError.safeParse(body);
          hs.error = e.success ? e.data.error.message : `HTTP ${res.status}`;
        }
      })
      .catch((err: unknown) => {
        if (this.history === hs) hs.error = String(err);
      })
      .finally(() => {
        hs.inFlight = false;
        this.schedule();
      });
  }

  private renderTimeline(): void {
    if (this.stopped) return;
    this.loadHistory();
    const data =
      this.history?.key === `${this.selected?.taskId}/${this.selected?.sessionId}/${this.range}`
        ? this.history?.data
        : null;
    const container = byId('timeline-lanes');
    if (!data) {
      setText(
        byId('timeline-range'),
        this.history?.error ? `No timeline: ${this.history.error}` : 'Loading the timeline…',
      );
      container.replaceChildren();
      return;
    }
    const now = Date.now();
    const t = timelineOf(data, now, windowStart(this.range, data, now));
    setText(byId('timeline-range'), rangeText(this.range, t));
    const rows: (Lane | { key: 'axis' })[] = [...t.lanes, { key: 'axis' }];
    syncList(
      container,
      rows.flatMap((r) => [
        { key: `${r.key}-title`, row: r, part: 'title' as const },
        { key: `${r.key}-track`, row: r, part: 'track' as const },
      ]),
      (x) => x.key,
      (x) =>
        x.part === 'title'
          ? h('div', { class: 'timeline-lane-title' }, 'title' in x.row ? x.row.title : '')
          : x.row.key === 'axis'
            ? h('div', { class: 'timeline-axis', 'aria-hidden': 'true' })
            : h('ul', {
                class: 'timeline-track',
                'aria-label': 'title' in x.row ? x.row.title : '',
              }),
      (el, x) => {
        if (x.part === 'title') return;
        if (x.row.key === 'axis') {
          syncList(
            el,
            t.ticks,
            (k) => String(k.at),
            () => h('span'),
            (s, k) => {
              s.style.left = `${k.at * 100}%`;
              setText(s, k.text);
            },
          );
          return;
        }
        const lane = x.row as Lane;
        el.style.height = `${lane.rows * ROW_REM}rem`;
        setAttrs(el, { 'data-rows': lane.rows });
        syncList(
          el,
          lane.bars,
          (b) => b.key,
          (b) => this.createBar(b),
          updateBar,
        );
      },
    );
  }

  /**
   * The range picker: one radio button per range in a labelled group, so the arrow keys move
   * between them and the chosen one is said in words (its check mark and bold label, not colour).
   */
  private buildRangePicker(): void {
    const group = byId('timeline-ranges');
    group.replaceChildren(
      h('legend', {}, 'Range'),
      ...TIMELINE_RANGES.map((r) =>
        h(
          'label',
          { class: 'timeline-range-option' },
          h('input', {
            type: 'radio',
            name: 'timeline-range',
            value: r.key,
            checked: r.key === this.range,
          }),
          r.label,
        ),
      ),
    );
    this.listen(group, 'change', (ev) => {
      const value = (ev.target as HTMLInputElement).value;
      if (!isTimelineRange(value) || value === this.range) return;
      this.range = value;
      try {
        localStorage.setItem(RANGE_KEY, value);
      } catch {
        // Storage disabled: the choice lasts until the page is reloaded.
      }
      this.renderTimeline();
    });
  }

  private createBar(b: Bar): HTMLLIElement {
    const el = h('li', { class: 'bar', tabindex: 0 });
    const show = () => setText(byId('timeline-detail'), el.getAttribute('aria-label') ?? '');
    el.addEventListener('mouseenter', show);
    el.addEventListener('focus', show);
    updateBar(el, b);
    return el;
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

  private sortedTasks(): TaskEntry[] {
    return [...this.tasks.values()].sort((a, b) => a.taskId.localeCompare(b.taskId));
  }

  private renderTasks(): void {
    const tasks = this.sortedTasks();
    const empty = byId('tasks-empty');
    empty.hidden = tasks.length > 0;
    const more = byId('tasks-more');
    more.hidden = this.notShown === 0;
    setText(more, `${this.notShown} more tasks are not shown (the page watches ${MAX_TASKS}).`);
    // Nothing chosen yet: the first session of the first task.
    if (!this.selected) {
      const first = tasks.find((t) => t.view && t.view.sessions.length > 0);
      const s = first?.view?.sessions[0];
      if (first && s) this.select({ taskId: first.taskId, sessionId: s.sessionId });
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
      const status = this.tasks.get(t.taskId)?.view?.status;
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
    const busy = this.busyActions.has(t.taskId);
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
    button.addEventListener('click', () => this.select({ taskId, sessionId: s.sessionId }));
    return h(
      'li',
      { class: 'session-row', 'data-session': `${taskId}/${s.sessionId}` },
      indicatorElement(),
      button,
      h('span', { class: 'session-state' }),
      h('span', { class: 'session-queued' }),
      h('span', { class: 'session-needs needs-you' }),
    );
  }

  private updateSessionRow(row: HTMLElement, taskId: string, s: SessionView): void {
    updateIndicator(row.querySelector<HTMLElement>('.ind')!, sessionIndicator(s));
    const selected = this.selected?.taskId === taskId && this.selected.sessionId === s.sessionId;
    setAttrs(row.querySelector('button')!, {
      'aria-pressed': selected ? 'true' : 'false',
      'aria-label': `Session ${s.sessionId}`,
    });
    setAttrs(row, { class: selected ? 'session-row selected' : 'session-row' });
    setText(row.querySelector('.session-state')!, stateText(s));
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

  private select(sel: Selection): void {
    this.selected = sel;
    this.selectedSeen = false;
    const hash = `#${encodeURIComponent(sel.taskId)}/${encodeURIComponent(sel.sessionId)}`;
    if (location.hash !== hash) history.replaceState(history.state, '', hash);
    setText(byId('composer-result'), '');
    this.schedule();
  }

  private selectedSession(): { view: TaskView | null; session: SessionView | undefined } {
    const sel = this.selected;
    if (!sel) return { view: null, session: undefined };
    const view = this.tasks.get(sel.taskId)?.view ?? null;
    const session = view?.sessions.find((s) => s.sessionId === sel.sessionId);
    if (session) this.selectedSeen = true;
    return { view, session };
  }

  private renderSession(): void {
    const sel = this.selected;
    const { session } = this.selectedSession();
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
    const busy = !!sel && this.busyActions.has(`${sel.taskId}/${sel.sessionId}`);
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
      const taskStatus = sel ? this.tasks.get(sel.taskId)?.view?.status : undefined;
      setText(
        status.querySelector('.status-text')!,
        !sel
          ? 'Select a session in the list.'
          : taskStatus === 'deleted'
            ? 'This task was deleted: its sessions are gone.'
            : this.selectedSeen
              ? 'This session was deleted.'
              : !this.tasks.has(sel.taskId)
                ? "No such task among this tenant's tasks."
                : this.tasks.get(sel.taskId)?.view
                  ? 'No such session in this task.'
                  : 'Loading…',
      );
      status.querySelector<HTMLElement>('.ind')!.hidden = true;
    }
    const loading = !!sel && !session && !this.selectedSeen && this.tasks.has(sel.taskId);
    setAttrs(panel, { 'aria-busy': loading ? 'true' : false });
    this.renderComposer();
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
        const busy = this.busyPrompts.has(`permission:${r.requestId}`) || !this.canPrompt;
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
    const sel = this.selected;
    if (!sel) return;
    const result = byId('composer-result');
    const busy = `permission:${requestId}`;
    this.busyPrompts.add(busy);
    this.schedule();
    try {
      const r = await this.client.answerPermission({
        taskId: sel.taskId,
        sessionId: sel.sessionId,
        requestId,
        optionId: option.optionId,
      });
      setText(
        result,
        r.status === 'done'
          ? `Answered the agent: ${option.name}.`
          : r.status === 'pending'
            ? 'Answered; waiting for Baton to take it…'
            : `Not answered: ${r.message}`,
      );
    } catch (err) {
      setText(result, `Not answered: ${(err as Error).message}`);
    } finally {
      this.busyPrompts.delete(busy);
      this.schedule();
    }
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
        const busy = this.busyPrompts.has(e.promptId) || !this.canPrompt;
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

  private currentMode(): ComposerMode {
    const { view, session } = this.selectedSession();
    return composerMode(session, {
      canPrompt: this.canPrompt,
      online: this.connection === 'live',
      deleted: this.selectedSeen && !session,
      ...(view ? { taskStatus: view.status } : {}),
    });
  }

  private renderComposer(): void {
    const mode = this.currentMode();
    const form = byId('composer');
    const button = byId<HTMLButtonElement>('composer-submit');
    const textarea = byId<HTMLTextAreaElement>('prompt');
    setAttrs(form, { 'data-mode': mode.kind });
    setText(button, this.sending ? 'Sending…' : mode.kind === 'queue' ? 'Queue' : 'Send');
    setAttrs(button, {
      disabled: mode.kind === 'unavailable' || this.sending,
      'aria-describedby': 'composer-hint',
    });
    setAttrs(textarea, { disabled: mode.kind === 'unavailable' && mode.reason !== 'offline' });
    const badge = byId('composer-badge');
    badge.hidden = mode.kind !== 'queue';
    setText(badge, mode.kind === 'queue' ? `Will be queued · position ${mode.position}` : '');
    setText(
      byId('composer-hint'),
      mode.kind === 'unavailable' ? `Unavailable: ${mode.hint}` : mode.hint,
    );
  }

  // -------------------------------------------------------------------------------------------
  // Actions
  // -------------------------------------------------------------------------------------------

  private async submitPrompt(): Promise<void> {
    const sel = this.selected;
    const textarea = byId<HTMLTextAreaElement>('prompt');
    const text = textarea.value.trim();
    const mode = this.currentMode();
    if (!sel || !text || mode.kind === 'unavailable' || this.sending) return;
    const result = byId('composer-result');
    this.sending = true;
    textarea.value = '';
    setText(result, mode.kind === 'queue' ? 'Queueing…' : 'Sending…');
    this.schedule();
    let pending = false;
    try {
      const d = await this.client.prompt(
        { taskId: sel.taskId, sessionId: sel.sessionId, text },
        {
          onPending: () => {
            pending = true;
            this.sending = false;
            setText(result, 'Accepted; waiting for its decision…');
            this.schedule();
          },
        },
      );
      this.lastPrompt = { taskId: d.taskId, promptId: d.promptId };
      setText(result, decisionText(d.decision));
    } catch (err) {
      if (!textarea.value) textarea.value = text;
      setText(result, `Not sent: ${(err as Error).message}`);
    } finally {
      if (!pending) this.sending = false;
      this.schedule();
    }
  }

  private showAction(r: ActionOutcome): void {
    const el = byId('action-result');
    setAttrs(el, { 'data-outcome': r.outcome });
    setText(el, r.text);
    el.hidden = false;
  }

  private async sessionAction(action: 'reset' | 'release' | 'delete'): Promise<void> {
    const sel = this.selected;
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
    this.busyActions.add(key);
    this.schedule();
    try {
      const base = path(sel.taskId, 'sessions', sel.sessionId);
      this.showAction(
        action === 'reset'
          ? await lifecycleCall(this.token, 'POST', `${base}/reset`, `Reset ${who}.`)
          : action === 'release'
            ? await lifecycleCall(
                this.token,
                'POST',
                `${base}/force-release`,
                `Force-released ${who}.`,
              )
            : await lifecycleCall(this.token, 'DELETE', base, `Deleted ${who}.`),
      );
    } finally {
      this.busyActions.delete(key);
      this.schedule();
    }
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
    this.busyActions.add(taskId);
    this.schedule();
    try {
      this.showAction(
        action === 'delete'
          ? await lifecycleCall(this.token, 'DELETE', path(taskId), `Deleted task ${taskId}.`)
          : await lifecycleCall(
              this.token,
              'POST',
              `${path(taskId)}/${action}`,
              `${action === 'archive' ? 'Archived' : 'Unarchived'} task ${taskId}.`,
            ),
      );
    } finally {
      this.busyActions.delete(taskId);
      this.schedule();
    }
  }

  private async queueCommand(promptId: string, op: 'cancel' | 'send_now'): Promise<void> {
    const sel = this.selected;
    const { session } = this.selectedSession();
    if (!sel || !session) return;
    const result = byId('composer-result');
    this.busyPrompts.add(promptId);
    this.schedule();
    try {
      const ref = { taskId: sel.taskId, sessionId: sel.sessionId, promptId };
      const generation = session.activity.runningGeneration;
      const r =
        op === 'cancel'
          ? await this.client.queue.cancel(ref)
          : await this.client.queue.sendNow(
              generation === null ? ref : { ...ref, observedGeneration: generation },
            );
      setText(
        result,
        r.status === 'done'
          ? op === 'cancel'
            ? 'Cancelled the queued prompt.'
            : 'The prompt runs next.'
          : r.status === 'pending'
            ? 'Asked; waiting for the answer…'
            : `Not done: ${r.message}`,
      );
    } catch (err) {
      setText(result, `Not done: ${(err as Error).message}`);
    } finally {
      this.busyPrompts.delete(promptId);
      this.schedule();
    }
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

function indicatorElement(extra = ''): HTMLSpanElement {
  return h(
    'span',
    { class: `ind ${extra}`.trim(), role: 'img' },
    h('span', { class: 'ind-mark', 'aria-hidden': 'true' }),
    h('span', { class: 'ind-text', 'aria-hidden': 'true' }),
  );
}

function updateIndicator(el: HTMLElement, ind: Indicator): void {
  const base = el.classList.contains('task-activity') ? 'ind task-activity' : 'ind';
  setAttrs(el, {
    class: `${base} ind-${ind.activity}`,
    'aria-label': ind.label,
    title: ind.title,
    'data-activity': ind.activity,
  });
  setText(el.querySelector('.ind-text')!, ind.text);
  el.hidden = false;
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

boot();
