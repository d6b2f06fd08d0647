import type {
  MessageItem,
  PermissionItem,
  ToolItem,
  TranscriptEvent,
  TranscriptItem,
} from '@baton/transcript';
import { foldTranscript } from '@baton/transcript';

type Capped = { text: string; more?: number | undefined };

/** Lines of a tool's output shown at most (the rest is counted). */
const OUTPUT_LINES = 12;
/** Lines of a command, a message or a diff side shown at most. */
const TEXT_LINES = 40;

/* eslint-disable no-control-regex */
/** CSI (colours, cursor moves, erases), OSC (titles, hyperlinks, clipboard) and DCS/PM/APC/SOS strings. */
const ESCAPES =
  /\u001b\[[0-?]*[ -/]*[@-~]|\u009b[0-?]*[ -/]*[@-~]|\u001b[\]P^_X][\s\S]*?(?:\u0007|\u001b\\|\u009c)|[\u009d\u0090\u009e\u009f][\s\S]*?(?:\u0007|\u001b\\|\u009c)|\u001b[ -/]*[0-~]?/g;
/** Every other control character but newline and tab, and Unicode's bidirectional overrides. */
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
/* eslint-enable no-control-regex */

/**
 * Agent output made safe to print on a terminal: escape sequences removed (they could recolour,
 * move the cursor, retitle the window or write the clipboard), a carriage return that would
 * overwrite a line turned into a line break (what was written first stays visible), every other
 * control character dropped, tabs as spaces.
 */
export function sanitize(s: string): string {
  return s
    .replace(ESCAPES, '')
    .replace(/\r\n/g, '\n')
    .replace(/\r/g, '\n')
    .replace(/\t/g, '  ')
    .replace(CONTROLS, '');
}

export interface Style {
  /** Thoughts and secondary lines: dimmed on a terminal that shows colour. */
  dim(s: string): string;
  bold(s: string): string;
}

export const PLAIN: Style = { dim: (s) => s, bold: (s) => s };
export const ANSI: Style = {
  dim: (s) => `\u001b[2m${s}\u001b[22m`,
  bold: (s) => `\u001b[1m${s}\u001b[22m`,
};

const capped = (c: Capped | undefined | null): string =>
  c ? c.text + (c.more ? ` … (${c.more} bytes more)` : '') : '';

/** At most `max` lines of `text`, each after `prefix`, and how many were left out. */
function block(text: string, prefix: string, max = TEXT_LINES, tail = false): string[] {
  const lines = sanitize(text).replace(/\n+$/, '').split('\n');
  if (lines.length === 1 && lines[0] === '') return [];
  if (lines.length <= max) return lines.map((l) => prefix + l);
  const shown = tail ? lines.slice(-max) : lines.slice(0, max);
  const note = `${prefix}… (${lines.length - max} more lines)`;
  return tail ? [note, ...shown.map((l) => prefix + l)] : [...shown.map((l) => prefix + l), note];
}

const one = (s: string | undefined): string => sanitize(s ?? '').replace(/\n/g, ' ');

function tokens(t: { input?: number; output?: number; total?: number } | undefined): string {
  if (!t) return '';
  const parts: string[] = [];
  if (t.input !== undefined) parts.push(`${t.input} in`);
  if (t.output !== undefined) parts.push(`${t.output} out`);
  if (t.total !== undefined) parts.push(`${t.total} total`);
  return parts.length > 0 ? `tokens ${parts.join(', ')}` : '';
}

function diffLines(d: NonNullable<ToolItem['diff']>, style: Style): string[] {
  const old = d.oldText ? sanitize(capped(d.oldText)).split('\n') : [];
  const now = sanitize(capped(d.newText)).split('\n');
  const head = `  ${style.dim('diff')} ${one(d.path)}${d.oldText ? '' : ' (new file)'}: -${old.length} +${now.length} lines`;
  return [
    head,
    ...block(old.join('\n'), '    - ', 6).map(style.dim),
    ...block(now.join('\n'), '    + ', 6),
  ];
}

function message(m: MessageItem, style: Style): string[] {
  const text = m.text + (m.more ? ` … (${m.more} bytes more)` : '');
  const who = m.subagent ? ` (subagent ${one(m.subagent)})` : '';
  if (m.role === 'thought')
    return block(text, '').map((l, i) => style.dim(`${i === 0 ? `(thought${who}) ` : '  '}${l}`));
  const label = m.role === 'user' ? 'user' : 'agent';
  const lines = block(text, '  ');
  return [`${style.bold(label)}${who}:`, ...lines];
}

function tool(t: ToolItem, style: Style): string[] {
  const command = t.input?.command?.text;
  // A title that only repeats the command is not said twice.
  const title = t.title !== undefined && t.title !== command ? ` ${one(t.title)}` : '';
  const status = t.status ? ` [${one(t.status)}]` : '';
  const kind = t.kind ? ` ${one(t.kind)}` : '';
  const out = [`${style.bold('tool')}${kind}${title}${status}`];
  if (t.input?.command) out.push(...block(capped(t.input.command), '  $ '));
  if (t.input?.path) out.push(`  ${style.dim('path')} ${one(t.input.path)}`);
  const diff = t.diff ?? t.input?.diff;
  if (diff) out.push(...diffLines(diff, style));
  const output = t.output ? capped(t.output) : '';
  const texts = (t.content ?? [])
    .map((c) => (c.type === 'text' ? capped(c.text) : ''))
    .filter((x) => x !== '')
    .join('\n');
  const shown = output || texts || capped(t.result);
  if (shown) out.push(`  ${style.dim('output:')}`, ...block(shown, '  │ ', OUTPUT_LINES, true));
  const exit = t.exit;
  if (exit && (typeof exit.code === 'number' || exit.signal)) {
    out.push(`  ${style.dim('exit')} ${exit.signal ? one(exit.signal) : String(exit.code)}`);
  }
  return out;
}

function permission(p: PermissionItem, style: Style): string[] {
  const options = p.options.map((o) => `${one(o.name)} (${one(o.kind)})`).join(', ');
  const out = [`${style.bold('permission')} ${one(p.title ?? p.kind ?? p.toolCallId ?? '')}`];
  if (p.input?.command) out.push(...block(capped(p.input.command), '  $ '));
  if (p.input?.path) out.push(`  ${style.dim('path')} ${one(p.input.path)}`);
  const diff = p.diff ?? p.input?.diff;
  if (diff) out.push(...diffLines(diff, style));
  out.push(`  options: ${options}`);
  const s = p.settled;
  if (!s) out.push('  waiting for an answer');
  else if (s.outcome === 'cancelled') out.push(`  cancelled (by ${one(s.by)})`);
  else {
    const chosen = p.options.find((o) => o.optionId === s.optionId);
    const what = chosen
      ? `${one(chosen.name)} (${one(chosen.kind)})`
      : one(s.optionKind ?? s.optionId);
    out.push(`  answered: ${what} by ${one(s.by)}`);
  }
  return out;
}

/** One item as lines of text, safe for a terminal. */
export function formatItem(item: TranscriptItem, style: Style = PLAIN): string[] {
  switch (item.type) {
    case 'prompt': {
      const text = item.content
        .map((b) =>
          b.type === 'text'
            ? capped(b.text)
            : b.type === 'resource_link'
              ? `[${b.name ?? b.uri}]`
              : `[${b.kind} attachment, ${b.bytes} bytes]`,
        )
        .join('\n');
      return [
        `${style.bold('prompt')}${item.promptId ? ` ${one(item.promptId)}` : ''}:`,
        ...block(text, '  '),
      ];
    }
    case 'message':
      return message(item, style);
    case 'tool':
      return tool(item, style);
    case 'permission':
      return permission(item, style);
    case 'subagent':
      return [
        `${style.bold('subagent')} ${one(item.title ?? item.description ?? item.sessionId)}` +
          (item.state ? ` [${one(item.state)}]` : ''),
      ];
    case 'plan':
      return [
        style.bold('plan:'),
        ...item.entries.map((e) => `  [${one(e.status)}] ${one(e.content)}`),
      ];
    case 'mode':
      return [style.dim(`mode: ${one(item.modeId)}`)];
    case 'model':
      return [style.dim(`model: ${one(item.modelId)}`)];
    case 'commands':
      return [style.dim(`commands: ${item.commands.map((c) => `/${one(c.name)}`).join(' ')}`)];
    case 'usage': {
      const parts: string[] = [];
      if (item.used !== undefined)
        parts.push(`context ${item.used}${item.size !== undefined ? `/${item.size}` : ''}`);
      if (item.cost)
        parts.push(`cost ${Number(item.cost.amount.toFixed(4))} ${one(item.cost.currency)}`);
      const t = tokens(item.tokens);
      if (t) parts.push(t);
      return [style.dim(`usage: ${parts.join(', ') || '—'}`)];
    }
    case 'turn_end': {
      const t = tokens(item.tokens);
      return [
        style.dim(
          `— turn ended${item.stopReason ? ` (${one(item.stopReason)})` : ''}${t ? `, ${t}` : ''}`,
        ),
      ];
    }
    case 'capped':
      return [
        style.dim(
          `(the transcript reached its limit of ${item.max} ${item.limit}; nothing after is kept)`,
        ),
      ];
  }
}

/**
 * A whole transcript (its events), as lines: a blank line before each prompt, and of usage
 * reports in a row only the last.
 */
export function formatTranscript(
  events: readonly TranscriptEvent[],
  style: Style = PLAIN,
): string[] {
  const items = foldTranscript(events);
  const lines: string[] = [];
  items.forEach((item, i) => {
    if (item.type === 'usage' && items[i + 1]?.type === 'usage') return;
    if (item.type === 'prompt' && lines.length > 0) lines.push('');
    lines.push(...formatItem(item, style));
  });
  return lines;
}

/**
 * `baton follow`: prints items as they become whole, each once: a message (or a model run's
 * usage) once another item follows it, a tool once it completed or failed (its first line earlier when its turn ended
 * without it: background work), a permission when asked and how it was settled when it was.
 */
export class Follower {
  private readonly events: TranscriptEvent[] = [];
  /** How far each item (by its index in the fold) was printed: 1 in part, 2 whole. */
  private readonly stage = new Map<number, 1 | 2>();

  constructor(
    private readonly out: (line: string) => void,
    private readonly style: Style = PLAIN,
  ) {}

  take(events: readonly TranscriptEvent[]): void {
    this.events.push(...events);
    const items = foldTranscript(this.events);
    items.forEach((item, i) => {
      const was = this.stage.get(i);
      if (was === 2) return;
      const last = i === items.length - 1;
      const lines = formatItem(item, this.style);
      let now: 1 | 2 | undefined;
      if (item.type === 'message') now = last ? undefined : 2;
      // Reports of one model run merge into one item until one with a cost closes it.
      else if (item.type === 'usage') now = last && item.cost === undefined ? undefined : 2;
      else if (item.type === 'tool') {
        const done = item.status === 'completed' || item.status === 'failed';
        const turnOver = items.slice(i + 1).some((x) => x.type === 'turn_end');
        now = done ? 2 : turnOver ? 1 : undefined;
      } else if (item.type === 'permission') now = item.settled ? 2 : 1;
      else now = 2;
      if (now === undefined || now === was) return;
      this.stage.set(i, now);
      if (was === undefined) {
        for (const l of now === 1 && item.type === 'tool' ? lines.slice(0, 1) : lines) this.out(l);
      } else if (item.type === 'permission') this.out(lines[lines.length - 1]!);
      else for (const l of lines) this.out(l);
    });
  }
}
