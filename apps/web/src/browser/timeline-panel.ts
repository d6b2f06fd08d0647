/** The selected session's timeline: its lanes over the chosen range, from its history (REST). */
import { TaskHistory, type SessionHistory } from '@baton/protocol';
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
import type { Page } from './page';
import { path, RestError } from './rest';

/** How often the timeline asks again while the session changes. */
const TIMELINE_REFRESH_MS = 1_500;
/** The timeline's range (TIMELINE_RANGES) is remembered on this browser. */
const RANGE_KEY = 'baton.timelineRange';
/** The height of one row of a timeline lane (bars that overlap in time take a row each). */
const ROW_REM = 1.4;
const TIMELINE_HINT = 'Hover over or focus a bar for its exact times.';

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

/** A bar of the timeline: placed by fraction of the window, named by its full description. */
function updateBar(el: HTMLElement, b: Bar): void {
  setAttrs(el, {
    class: `bar lane-${b.kind.replace(/ /g, ' lane-')}`,
    'aria-label': b.detail,
    title: b.detail,
    'data-open': b.open,
    'data-row': b.row,
    'data-turn': b.turn ?? null,
  });
  el.style.top = `${0.1 + b.row * ROW_REM}rem`;
  el.style.left = `${b.left * 100}%`;
  el.style.width = `${b.width * 100}%`;
  // The label is drawn when there is room for it; the description is always there.
  setText(el, b.width > 0.08 ? b.label : '');
}

export class TimelinePanel {
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
    private readonly page: Page,
    /** Shows the turn a prompt started in the conversation. */
    private readonly revealTurn: (promptId: string) => void,
  ) {}

  /** Asks for the selected session's history when it is new or its view moved on (throttled). */
  private load(): void {
    const sel = this.page.selected;
    const view = sel ? this.page.tasks.get(sel.taskId)?.view : null;
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
      headers: { authorization: `Bearer ${this.page.token}` },
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
        this.page.schedule();
      });
  }

  render(): void {
    if (this.page.stopped) return;
    this.load();
    const data =
      this.history?.key ===
      `${this.page.selected?.taskId}/${this.page.selected?.sessionId}/${this.range}`
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
  buildRangePicker(): void {
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
    this.page.listen(group, 'change', (ev) => {
      const value = (ev.target as HTMLInputElement).value;
      if (!isTimelineRange(value) || value === this.range) return;
      this.range = value;
      try {
        localStorage.setItem(RANGE_KEY, value);
      } catch {
        // Storage disabled: the choice lasts until the page is reloaded.
      }
      this.render();
    });
  }

  private createBar(b: Bar): HTMLLIElement {
    const el = h('li', { class: 'bar', tabindex: 0 });
    const show = () => setText(byId('timeline-detail'), el.getAttribute('aria-label') ?? '');
    el.addEventListener('mouseenter', show);
    el.addEventListener('focus', show);
    // A bar of a turn leads to its place in the conversation.
    const go = () => {
      const turn = el.dataset.turn;
      if (turn) this.revealTurn(turn);
    };
    el.addEventListener('click', go);
    el.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') go();
    });
    updateBar(el, b);
    return el;
  }
}
