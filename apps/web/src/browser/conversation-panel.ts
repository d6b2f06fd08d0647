/**
 * The selected session's conversation, from its transcript: the person's prompts, the agent's
 * text (markdown), thoughts, tool calls with their command, diff and output, permission requests
 * and how they were settled, and the context meter. History comes over REST page by page; live
 * events over /ws (`transcript.subscribe`), or by asking REST every second where the gateway does
 * not offer that op.
 *
 * Agent output is untrusted: markdown is rendered with raw HTML off, images off, and links only
 * to http, https and mailto; everything else is set as text.
 */
import {
  foldTranscript,
  type Capped,
  type Diff,
  type TranscriptEvent,
  type TranscriptItem,
} from '@baton/transcript';
import MarkdownIt from 'markdown-it';
import { contextText, lineDiff, safeLink, truncatedText, withContext } from '../conversation';
import { byId, h, setAttrs, setText, syncList } from './dom';
import type { Page } from './page';
import { path, RestError } from './rest';

interface Entry {
  id: string;
  executionId: string;
  event: TranscriptEvent;
}

/** Events per REST page. */
const PAGE = 500;
/** How often REST is asked for new events when /ws cannot subscribe to them. */
const POLL_MS = 1_000;
/** Diff lines drawn at most per edit. */
const MAX_DIFF_LINES = 400;

const md = new MarkdownIt({ html: false, linkify: true, typographer: false });
md.disable(['image']);
md.validateLink = safeLink;
// Links open elsewhere and tell the target nothing about the page.
const defaultLinkOpen =
  md.renderer.rules.link_open ??
  ((tokens, i, opts, _env, self) => self.renderToken(tokens, i, opts));
md.renderer.rules.link_open = (tokens, i, opts, env, self) => {
  tokens[i]!.attrSet('rel', 'noopener noreferrer nofollow');
  tokens[i]!.attrSet('target', '_blank');
  return defaultLinkOpen(tokens, i, opts, env, self);
};

/** Markdown to elements: markdown-it's output holds only the tags it makes itself. */
function markdown(el: HTMLElement, text: string): void {
  el.innerHTML = md.render(text);
}

function cmpId(a: string, b: string): number {
  const [am, as] = a.split('-');
  const [bm, bs] = b.split('-');
  if (am!.length !== bm!.length) return am!.length - bm!.length;
  if (am !== bm) return am! < bm! ? -1 : 1;
  if (as!.length !== bs!.length) return as!.length - bs!.length;
  return as === bs ? 0 : as! < bs! ? -1 : 1;
}

interface Conversation {
  key: string;
  taskId: string;
  sessionId: string;
  entries: Entry[];
  cursor: string;
  items: TranscriptItem[];
  error: string | null;
  loaded: boolean;
  live: 'connecting' | 'ws' | 'poll';
  ws: WebSocket | null;
  timer: ReturnType<typeof setTimeout> | null;
  fetching: boolean;
  closed: boolean;
}

const withMore = (c: Capped | undefined): string =>
  c === undefined ? '' : c.text + (truncatedText(c.more) ? `\n… ${truncatedText(c.more)}` : '');

export class ConversationPanel {
  private conv: Conversation | null = null;
  /** The last item rendered into each element: unchanged items are not drawn again. */
  private readonly drawn = new WeakMap<Element, string>();

  constructor(private readonly page: Page) {}

  stop(): void {
    this.close();
  }

  /** Scrolls the conversation to the turn a prompt started, and marks it. */
  reveal(promptId: string): void {
    const el = byId('conversation-list').querySelector<HTMLElement>(
      `[data-turn-start="${CSS.escape(promptId)}"]`,
    );
    if (!el) {
      setText(byId('conversation-note'), `Turn ${promptId} is not in the conversation.`);
      return;
    }
    setText(byId('conversation-note'), '');
    el.scrollIntoView({ block: 'start' });
    el.classList.remove('flash');
    void el.offsetWidth;
    el.classList.add('flash');
    el.focus({ preventScroll: true });
  }

  render(): void {
    const sel = this.page.selected;
    const key = sel ? `${sel.taskId}/${sel.sessionId}` : null;
    if (this.conv?.key !== key) {
      this.close();
      byId('conversation-list').replaceChildren();
      setText(byId('conversation-note'), '');
      if (sel && key) this.open(key, sel.taskId, sel.sessionId);
    }
    const c = this.conv;
    const status = byId('conversation-status');
    setText(
      status,
      !c
        ? ''
        : c.error
          ? `Cannot read the conversation: ${c.error}`
          : !c.loaded
            ? 'Loading the conversation…'
            : c.items.length === 0
              ? 'Nothing said yet.'
              : c.live === 'ws'
                ? 'Live.'
                : c.live === 'poll'
                  ? 'Live (asked every second).'
                  : '',
    );
    this.renderMeter(c?.items ?? []);
    if (!c) return;
    const list = byId('conversation-list');
    const stick = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    // Items only ever grow at the end (a fold of more events): an index is a stable key.
    const shown = c.items
      .map((item, i) => ({ item, key: 'item' in item ? `i-${item.item}` : `${item.type}-${i}` }))
      // The meter above shows the latest usage; commands are the agent's menu, not conversation.
      .filter((x) => x.item.type !== 'commands' && x.item.type !== 'usage');
    syncList(
      list,
      shown,
      (x) => x.key,
      (x) => this.create(x.item),
      (el, { item }) => {
        const sig = JSON.stringify(item);
        if (this.drawn.get(el) === sig) return;
        this.drawn.set(el, sig);
        this.update(el, item);
      },
    );
    if (stick && c.loaded) list.scrollTop = list.scrollHeight;
  }

  private renderMeter(items: readonly TranscriptItem[]): void {
    let used: number | undefined;
    let size: number | undefined;
    let cost: { amount: number; currency: string } | undefined;
    for (const i of items) {
      if (i.type !== 'usage') continue;
      if (i.used !== undefined) used = i.used;
      if (i.size !== undefined) size = i.size;
      if (i.cost !== undefined) cost = i.cost;
    }
    const meter = byId('conversation-usage');
    const text = contextText(used, size);
    meter.hidden = text === null;
    if (text === null) return;
    const bar = meter.querySelector<HTMLMeterElement>('meter')!;
    setAttrs(bar, { max: size ?? used ?? 1, value: used ?? 0, 'aria-label': text });
    setText(
      meter.querySelector('.usage-text')!,
      `${text}${cost ? ` · cost ${cost.amount.toFixed(2)} ${cost.currency}` : ''}`,
    );
  }

  private create(item: TranscriptItem): HTMLElement {
    if (item.type === 'tool' || (item.type === 'message' && item.role === 'thought')) {
      const d = h('details', { class: 'conv-item' }, h('summary', {}), h('div', { class: 'body' }));
      return h('li', {}, d);
    }
    return h('li', {});
  }

  private update(li: HTMLElement, item: TranscriptItem): void {
    setAttrs(li, {
      class: `conv conv-${item.type}${item.type === 'message' ? ` conv-${item.role}` : ''}`,
      'data-turn': item.turn ?? null,
      'data-phase': item.phase,
      'data-turn-start': item.type === 'prompt' ? (item.promptId ?? item.turn) : null,
      tabindex: item.type === 'prompt' ? -1 : null,
    });
    switch (item.type) {
      case 'prompt':
        return fill(
          li,
          h('div', { class: 'who' }, item.phase === 'history' ? 'You (earlier)' : 'You'),
          ...item.content.map((b) =>
            b.type === 'text'
              ? h('div', { class: 'prompt-text' }, withMore(b.text))
              : b.type === 'resource_link'
                ? h('div', { class: 'muted' }, `Linked: ${b.name ?? b.uri}`)
                : h(
                    'div',
                    { class: 'muted' },
                    `Attached ${b.kind}${b.mimeType ? ` (${b.mimeType})` : ''}, ${b.bytes.toLocaleString('en-GB')} bytes`,
                  ),
          ),
        );
      case 'message': {
        const more = truncatedText(item.more);
        if (item.role === 'thought') {
          const d = li.querySelector('details')!;
          setText(d.querySelector('summary')!, `Thought${item.subagent ? ' (subagent)' : ''}`);
          const body = d.querySelector<HTMLElement>('.body')!;
          fill(body, h('div', { class: 'thought-text' }, item.text));
          if (more) body.append(h('p', { class: 'truncated' }, more));
          return;
        }
        if (item.role === 'user') {
          fill(
            li,
            h('div', { class: 'who' }, 'You (earlier)'),
            h('div', { class: 'prompt-text' }, item.text),
          );
          return;
        }
        const body = h('div', { class: 'markdown' });
        markdown(body, item.text);
        fill(li, h('div', { class: 'who' }, item.subagent ? 'Subagent' : 'Agent'), body);
        if (more) li.append(h('p', { class: 'truncated' }, more));
        return;
      }
      case 'tool':
        return this.updateTool(li, item);
      case 'permission':
        return this.updatePermission(li, item);
      case 'subagent':
        return fill(
          li,
          h('span', { class: 'badge' }, 'Subagent'),
          ` ${item.title ?? item.description ?? item.sessionId}`,
          item.state ? h('span', { class: 'muted' }, ` · ${item.state.replace(/_/g, ' ')}`) : '',
        );
      case 'plan':
        return fill(
          li,
          h('div', { class: 'who' }, 'Plan'),
          h(
            'ol',
            { class: 'plan' },
            ...item.entries.map((e) =>
              h('li', { 'data-status': e.status }, `${e.content} — ${e.status.replace(/_/g, ' ')}`),
            ),
          ),
        );
      case 'mode':
        return fill(li, h('span', { class: 'muted' }, `Mode: ${item.modeId}`));
      case 'model':
        return fill(li, h('span', { class: 'muted' }, `Model: ${item.modelId}`));
      case 'usage': {
        const t = contextText(item.used, item.size);
        const tokens =
          item.tokens?.total ??
          (item.tokens ? (item.tokens.input ?? 0) + (item.tokens.output ?? 0) : undefined);
        return fill(
          li,
          h(
            'span',
            { class: 'muted' },
            [
              t,
              tokens !== undefined ? `${tokens.toLocaleString('en-GB')} tokens this run` : null,
              item.cost ? `cost ${item.cost.amount.toFixed(2)} ${item.cost.currency}` : null,
            ]
              .filter(Boolean)
              .join(' · ') || 'Usage reported',
          ),
        );
      }
      case 'turn_end':
        return fill(
          li,
          h(
            'span',
            { class: 'muted' },
            `Turn ended${item.stopReason ? `: ${item.stopReason.replace(/_/g, ' ')}` : ''}`,
          ),
        );
      case 'capped':
        return fill(
          li,
          h(
            'p',
            { class: 'truncated' },
            `The conversation reached its limit (${item.max.toLocaleString('en-GB')} ${item.limit}): nothing after this was recorded.`,
          ),
        );
      default:
        return;
    }
  }

  private updateTool(
    li: HTMLElement,
    t: Extract<TranscriptItem, { toolCallId: string; type: 'tool' }>,
  ): void {
    const d = li.querySelector('details')!;
    const status = t.status ?? 'pending';
    setAttrs(d, { 'data-status': status });
    fill(
      d.querySelector('summary')!,
      h('span', { class: 'badge', 'data-status': status }, status.replace(/_/g, ' ')),
      ' ',
      h('span', { class: 'tool-kind' }, t.kind ?? 'tool'),
      ' ',
      h('span', { class: 'tool-title' }, t.title ?? t.toolCallId),
      t.exit?.code !== undefined && t.exit.code !== null
        ? h('span', { class: 'muted' }, ` · exit ${t.exit.code}`)
        : '',
    );
    const body = d.querySelector<HTMLElement>('.body')!;
    const parts: Node[] = [];
    if (t.input?.command)
      parts.push(labelled('Command', pre('command', withMore(t.input.command))));
    else if (t.input?.path) parts.push(labelled('Path', h('code', {}, t.input.path)));
    const diff = t.diff ?? t.input?.diff;
    if (diff) parts.push(diffView(diff));
    for (const c of t.content ?? []) {
      if (c.type === 'text') parts.push(markdownBlock('tool-text', c.text));
      else if (c.type === 'diff' && c.diff !== diff) parts.push(diffView(c.diff));
    }
    if (t.output) parts.push(labelled('Output', pre('output', withMore(t.output))));
    else if (t.result) parts.push(labelled('Result', pre('output', withMore(t.result))));
    if (parts.length === 0 && t.input?.raw)
      parts.push(labelled('Input', pre('raw', withMore(t.input.raw))));
    fill(body, ...parts);
  }

  private updatePermission(
    li: HTMLElement,
    p: Extract<TranscriptItem, { type: 'permission' }>,
  ): void {
    const s = p.settled;
    const chosen = s?.optionId ? p.options.find((o) => o.optionId === s.optionId) : undefined;
    const how = !s
      ? 'Waiting for an answer'
      : s.outcome === 'cancelled'
        ? `Cancelled (${s.by}) at ${new Date(s.at).toLocaleTimeString('en-GB')}`
        : `Answered “${chosen?.name ?? s.optionId}”${s.optionKind ? ` (${s.optionKind.replace(/_/g, ' ')})` : ''} by ${s.by} at ${new Date(s.at).toLocaleTimeString('en-GB')}`;
    setAttrs(li, { 'data-settled': s ? s.outcome : 'waiting' });
    const parts: Node[] = [
      h('div', { class: 'who' }, 'The agent asked permission'),
      h(
        'div',
        { class: 'perm-title' },
        `${p.title ?? p.toolCallId ?? 'a tool call'}${p.kind ? ` (${p.kind})` : ''}`,
      ),
    ];
    if (p.input?.command)
      parts.push(labelled('Command', pre('command', withMore(p.input.command))));
    const diff = p.diff ?? p.input?.diff;
    if (diff) parts.push(diffView(diff));
    for (const c of p.content ?? []) {
      if (c.type === 'text') parts.push(markdownBlock('tool-text', c.text));
      else if (c.type === 'diff' && c.diff !== diff) parts.push(diffView(c.diff));
    }
    parts.push(
      h(
        'ul',
        { class: 'perm-options', 'aria-label': 'Options offered' },
        ...p.options.map((o) =>
          h(
            'li',
            { 'data-chosen': o.optionId === s?.optionId, 'data-kind': o.kind },
            `${o.name} (${o.kind.replace(/_/g, ' ')})${o.optionId === s?.optionId ? ' ✓ chosen' : ''}`,
          ),
        ),
      ),
      h('div', { class: 'perm-settled' }, how),
    );
    fill(li, ...parts);
  }

  private open(key: string, taskId: string, sessionId: string): void {
    const c: Conversation = {
      key,
      taskId,
      sessionId,
      entries: [],
      cursor: '0-0',
      items: [],
      error: null,
      loaded: false,
      live: 'connecting',
      ws: null,
      timer: null,
      fetching: false,
      closed: false,
    };
    this.conv = c;
    void this.catchUp(c).then(() => {
      if (c.closed) return;
      c.loaded = true;
      this.page.schedule();
      this.subscribe(c);
    });
  }

  private close(): void {
    const c = this.conv;
    if (!c) return;
    c.closed = true;
    if (c.timer) clearTimeout(c.timer);
    c.ws?.close();
    this.conv = null;
  }

  /** Adds events past the cursor (each once, in order) and folds them. */
  private add(c: Conversation, events: readonly Entry[], cursor: string): void {
    const fresh = events.filter((e) => cmpId(e.id, c.cursor) > 0);
    if (fresh.length > 0) {
      c.entries.push(...fresh);
      c.items = foldTranscript(c.entries.map((e) => e.event));
    }
    if (cmpId(cursor, c.cursor) > 0) c.cursor = cursor;
    if (fresh.length > 0) this.page.schedule();
  }

  /** Reads REST pages from the cursor until one is empty. */
  private async catchUp(c: Conversation): Promise<void> {
    if (c.fetching) return;
    c.fetching = true;
    try {
      for (;;) {
        const url = `${path(c.taskId, 'sessions', c.sessionId, 'transcript')}?limit=${PAGE}&after=${c.cursor}`;
        const res = await fetch(url, {
          headers: { authorization: `Bearer ${this.page.token}` },
          cache: 'no-store',
        });
        const body = (await res.json().catch(() => null)) as {
          events?: Entry[];
          cursor?: string;
        } | null;
        if (c.closed) return;
        if (!res.ok || !body || !Array.isArray(body.events) || typeof body.cursor !== 'string') {
          const e = RestError.safeParse(body);
          c.error = e.success ? e.data.error.message : `HTTP ${res.status}`;
          this.page.schedule();
          return;
        }
        c.error = null;
        this.add(c, body.events, body.cursor);
        if (body.events.length === 0) return;
      }
    } catch (err) {
      if (!c.closed) c.error = String(err);
    } finally {
      c.fetching = false;
    }
  }

  /** Live events over /ws; where the gateway lacks the op, REST every second. */
  private subscribe(c: Conversation): void {
    if (c.closed) return;
    const url = new URL('/ws', location.href);
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    url.searchParams.set('token', this.page.token);
    const ws = new WebSocket(url);
    c.ws = ws;
    const id = `transcript-${Math.random().toString(36).slice(2)}`;
    let answered = false;
    ws.onopen = () =>
      ws.send(
        JSON.stringify({
          op: 'transcript.subscribe',
          id,
          taskId: c.taskId,
          sessionId: c.sessionId,
          after: c.cursor,
        }),
      );
    ws.onmessage = (ev) => {
      let m: Record<string, unknown>;
      try {
        m = JSON.parse(String(ev.data)) as Record<string, unknown>;
      } catch {
        return;
      }
      if (m.type === 'reply' && m.id === id) {
        answered = true;
        if (m.ok === true) {
          c.live = 'ws';
          this.page.schedule();
        } else {
          // The gateway does not offer the op (yet): ask REST instead.
          ws.onclose = null;
          ws.close();
          c.ws = null;
          this.poll(c);
        }
        return;
      }
      if (m.type !== 'transcript' || m.sessionId !== c.sessionId || m.taskId !== c.taskId) return;
      if (m.resync === true) {
        // Too slow a reader: catch up from the last delivered cursor, then subscribe again.
        ws.onclose = null;
        ws.close();
        c.ws = null;
        void this.catchUp(c).then(() => this.subscribe(c));
        return;
      }
      if (Array.isArray(m.events) && typeof m.cursor === 'string')
        this.add(c, m.events as Entry[], m.cursor);
    };
    ws.onclose = () => {
      if (c.closed) return;
      c.ws = null;
      if (!answered) {
        this.poll(c);
        return;
      }
      // Dropped: catch up over REST and subscribe again from the cursor.
      c.timer = setTimeout(() => void this.catchUp(c).then(() => this.subscribe(c)), POLL_MS);
    };
  }

  private poll(c: Conversation): void {
    if (c.closed) return;
    c.live = 'poll';
    this.page.schedule();
    c.timer = setTimeout(
      () =>
        void this.catchUp(c).then(() => {
          this.page.schedule();
          this.poll(c);
        }),
      POLL_MS,
    );
  }
}

function fill(el: Element, ...children: Array<Node | string>): void {
  el.replaceChildren(...children);
}

/** Text the agent wrote as markdown (a tool's content often fences its output). */
function markdownBlock(cls: string, c: Capped): HTMLElement {
  const el = h('div', { class: `markdown ${cls}` });
  markdown(el, c.text);
  const more = truncatedText(c.more);
  if (more) el.append(h('p', { class: 'truncated' }, more));
  return el;
}

function pre(cls: string, text: string): HTMLElement {
  return h('pre', { class: cls }, text);
}

function labelled(label: string, el: HTMLElement): HTMLElement {
  return h('div', { class: 'field' }, h('div', { class: 'field-label' }, label), el);
}

/** An edit as a unified diff: removed lines marked −, added +, unchanged context around them. */
function diffView(d: Diff): HTMLElement {
  const lines = withContext(lineDiff(d.oldText?.text ?? null, d.newText.text));
  const shown = lines.slice(0, MAX_DIFF_LINES);
  const rows = shown.map((l) =>
    l === null
      ? h('div', { class: 'diff-gap', 'aria-label': 'unchanged lines left out' }, '⋯')
      : h(
          'div',
          { class: l.op === '-' ? 'diff-del' : l.op === '+' ? 'diff-ins' : 'diff-ctx' },
          h('span', { class: 'diff-op', 'aria-hidden': 'true' }, l.op === '-' ? '−' : l.op),
          h(
            'span',
            { class: 'sr-only' },
            l.op === '-' ? 'removed: ' : l.op === '+' ? 'added: ' : '',
          ),
          l.text,
        ),
  );
  const notes = [
    truncatedText(d.oldText?.more) ? `old text ${truncatedText(d.oldText?.more)}` : null,
    truncatedText(d.newText.more) ? `new text ${truncatedText(d.newText.more)}` : null,
    lines.length > shown.length ? `${lines.length - shown.length} more diff lines not shown` : null,
  ].filter((x): x is string => x !== null);
  return h(
    'figure',
    { class: 'diff' },
    h('figcaption', {}, `${d.oldText === null ? 'New file' : 'Edit'} ${d.path}`),
    h('div', { class: 'diff-lines' }, ...rows),
    ...notes.map((n) => h('p', { class: 'truncated' }, n)),
  );
}
