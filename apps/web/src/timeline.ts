import { duration } from '@baton/client';
import type { ActivityLane, SessionHistory } from '@baton/protocol';

/**
 * The timeline of one session, as lanes over time: the foreground (what the session showed),
 * one lane of background bars (shells, subagents, watches), prompts with their queue wait drawn
 * out, and executions. Pure: positions are fractions of the window, every bar carries the words
 * that say what it is (a visible label and a full description for hover, focus and screen
 * readers), so nothing depends on colour.
 */

export interface Bar {
  readonly key: string;
  /** Left edge and width as fractions (0–1) of the window. */
  readonly left: number;
  readonly width: number;
  /** A CSS class for its look (pattern and colour): `lane-<kind>`. */
  readonly kind: string;
  /** Short text drawn on the bar when it is wide enough. */
  readonly label: string;
  /** Exact times and the reason, for the tooltip and the accessible name. */
  readonly detail: string;
  /** Still going at the right edge. */
  readonly open: boolean;
  /** Its row in the lane (0: the first): bars that overlap in time are drawn one above another. */
  readonly row: number;
  /** The turn (Baton prompt id) it belongs to, where it is one's: its place in the conversation. */
  readonly turn?: string;
}

export interface Lane {
  readonly key: 'foreground' | 'background' | 'prompts' | 'executions';
  readonly title: string;
  readonly bars: readonly Bar[];
  /** How many rows its bars take (at least 1). */
  readonly rows: number;
}

export interface Timeline {
  readonly from: number;
  readonly to: number;
  readonly lanes: readonly Lane[];
  /** Axis ticks: fraction of the window and the time of day they mark (UTC). */
  readonly ticks: readonly { at: number; text: string }[];
}

const LANE_TEXT: Record<ActivityLane, string> = {
  generating: 'generating',
  background: 'background',
  waiting_for_person: 'waiting for a person',
  waiting: 'waiting',
  idle: 'idle',
  failed: 'failed',
};

/** HH:MM:SS, UTC. */
export function clock(ms: number): string {
  return new Date(ms).toISOString().slice(11, 19);
}

function when(from: number, to: number | null, now: number): string {
  return to === null
    ? `since ${clock(from)} (${duration(now - from)} so far)`
    : `${clock(from)}–${clock(to)} (${duration(to - from)})`;
}

/**
 * Lays a session's history out over `[from, now]` (default: from its first event). Intervals
 * still open end at `now`, so the right edge grows as time passes and updates arrive.
 */
export function timelineOf(h: SessionHistory, now: number, from?: number): Timeline {
  const starts = [
    ...h.activity.map((a) => a.from),
    ...h.prompts.map((p) => p.submittedAt),
    ...h.executions.flatMap((x) => [x.requestedAt ?? x.start ?? now]),
  ];
  const start = from ?? (starts.length > 0 ? Math.min(...starts) : now - 60_000);
  const end = Math.max(now, start + 1_000);
  const width = end - start;
  const bar = (
    key: string,
    a: number,
    b: number | null,
    kind: string,
    label: string,
    detail: string,
  ): Bar => {
    const l = Math.min(Math.max(a, start), end);
    const r = Math.min(Math.max(b ?? end, l), end);
    return {
      key,
      left: (l - start) / width,
      width: (r - l) / width,
      kind,
      label,
      detail,
      open: b === null,
      row: 0,
    };
  };
  // A turn that ended other than by the agent finishing (cancelled, refused, out of tokens) says
  // so on the foreground bar it ends.
  const stopped = (a: { state: ActivityLane; from: number; to: number | null }) =>
    a.state === 'generating'
      ? h.turns.find(
          (t) =>
            t.end !== null &&
            t.stopReason !== undefined &&
            t.stopReason !== 'end_turn' &&
            t.end > a.from &&
            t.end <= (a.to ?? now),
        )?.stopReason
      : undefined;
  const foreground = h.activity
    .filter((a) => (a.to ?? end) > start)
    .map((a) => {
      const stop = stopped(a)?.replace(/_/g, ' ');
      const turn =
        a.state === 'generating'
          ? h.turns.find((t) => t.start >= a.from && t.start <= (a.to ?? now))?.promptId
          : undefined;
      const made = bar(
        `fg-${a.from}`,
        a.from,
        a.to,
        stop ? `${a.state} stopped` : a.state,
        stop ? `${LANE_TEXT[a.state]} · ${stop}` : LANE_TEXT[a.state],
        `${LANE_TEXT[a.state]}${a.reason ? ` (${a.reason.replace(/_/g, ' ')})` : ''}, ${when(a.from, a.to, now)}${stop ? `, turn ${stop}` : ''}`,
      );
      return turn === undefined ? made : { ...made, turn };
    });
  const background = stack(
    h.background.map((b) =>
      bar(
        `bg-${b.id}`,
        b.start,
        b.end,
        b.end !== null && b.endedBy !== 'identified' ? `${b.kind} unidentified` : b.kind,
        `${b.kind}: ${b.label}`,
        `${b.kind} “${b.label}”, ${when(b.start, b.end, now)}${
          b.end === null
            ? ', still running'
            : b.endedBy === 'identified'
              ? ', ended'
              : b.endedBy === 'execution'
                ? ', ended with its execution (its own end was never reported)'
                : ', ended without saying which it was'
        }`,
      ),
    ),
  );
  const prompts = h.prompts.map((p) => {
    const waited = p.decision === 'queued';
    const until = p.admittedAt ?? (p.decision === 'queued' ? null : (p.decidedAt ?? p.submittedAt));
    const detail = [
      `prompt ${p.idempotencyKey} submitted ${clock(p.submittedAt)}`,
      p.decision === null
        ? 'not decided yet'
        : waited
          ? p.queueWaitMs === null
            ? `queued, waiting ${duration(now - (p.decidedAt ?? p.submittedAt))} so far`
            : `queued ${duration(p.queueWaitMs)}, admitted ${clock(p.admittedAt!)}`
          : p.decision,
      ...(p.dispatchedAt !== null ? [`dispatched ${clock(p.dispatchedAt)}`] : []),
      ...(p.reason ? [p.reason.replace(/_/g, ' ')] : []),
    ].join(', ');
    const made = bar(
      `p-${p.promptId}`,
      p.submittedAt,
      until,
      waited ? 'queued' : p.decision === 'rejected' ? 'rejected' : 'prompt',
      waited
        ? p.queueWaitMs === null
          ? 'queued, waiting'
          : `queued ${duration(p.queueWaitMs)}`
        : (p.decision ?? 'submitted'),
      detail,
    );
    return { ...made, turn: p.promptId };
  });
  const executions = h.executions.map((x) => {
    const a = x.start ?? x.requestedAt ?? start;
    return bar(
      `x-${x.executionId}`,
      a,
      x.end,
      x.start === null ? 'requested' : 'execution',
      x.executionId,
      `execution ${x.executionId}, ${x.start === null ? 'waiting for a worker ' : ''}${when(a, x.end, now)}${
        x.reason ? `, ${x.reason.replace(/_/g, ' ')}` : ''
      }`,
    );
  });
  const ticks = Array.from({ length: 5 }, (_, i) => ({
    at: i / 4,
    text: clock(start + (width * i) / 4),
  }));
  return {
    from: start,
    to: end,
    lanes: [
      { key: 'foreground', title: 'Foreground', bars: foreground, rows: 1 },
      { key: 'background', title: 'Background work', bars: background, rows: rowsOf(background) },
      { key: 'prompts', title: 'Prompts', bars: prompts, rows: 1 },
      { key: 'executions', title: 'Executions', bars: executions, rows: 1 },
    ],
    ticks,
  };
}

/**
 * Puts bars that overlap in time on rows of their own: each bar, in order of its left edge, on
 * the first row whose last bar has ended by then (an open bar never ends). A bar of no width (an
 * instant, or one clipped to the window's edge) is still drawn a few pixels wide from its left
 * edge, so it holds its point: nothing else starting there shares its row.
 */
export function stack(bars: readonly Bar[]): Bar[] {
  const rows: { end: number; instant: boolean }[] = [];
  const order = bars.map((b, i) => ({ b, i })).sort((x, y) => x.b.left - y.b.left || x.i - y.i);
  const out: Bar[] = [...bars];
  for (const { b, i } of order) {
    let row = rows.findIndex((r) => r.end < b.left || (r.end === b.left && !r.instant));
    if (row < 0) row = rows.push({ end: 0, instant: false }) - 1;
    rows[row] = b.open
      ? { end: Infinity, instant: false }
      : { end: b.left + b.width, instant: b.width === 0 };
    out[i] = { ...b, row };
  }
  return out;
}

function rowsOf(bars: readonly Bar[]): number {
  return Math.max(1, ...bars.map((b) => b.row + 1));
}

/** The ranges the page's timeline offers: a look-back from now, or the whole session. */
export type TimelineRange = '15m' | '1h' | '6h' | '24h' | 'session';

/** The widest range the gateway answers (MAX_HISTORY_RANGE_MS: 31 days), less a margin. */
export const SESSION_LOOKBACK_MS = 30 * 24 * 3_600_000;

export const TIMELINE_RANGES: readonly {
  readonly key: TimelineRange;
  readonly label: string;
  /** How far back from now; null: since the session began. */
  readonly ms: number | null;
}[] = [
  { key: '15m', label: '15 min', ms: 15 * 60_000 },
  { key: '1h', label: '1 h', ms: 3_600_000 },
  { key: '6h', label: '6 h', ms: 6 * 3_600_000 },
  { key: '24h', label: '24 h', ms: 24 * 3_600_000 },
  { key: 'session', label: 'Since the session began', ms: null },
];

export function isTimelineRange(x: unknown): x is TimelineRange {
  return TIMELINE_RANGES.some((r) => r.key === x);
}

/**
 * The history query of a range at `now` (`since`/`until`, ms): a look-back asks for exactly its
 * window; "since the session began" asks for as far back as the gateway answers.
 */
export function historyQuery(range: TimelineRange, now: number): { since: number; until: number } {
  const ms = TIMELINE_RANGES.find((r) => r.key === range)?.ms ?? null;
  return { since: now - (ms ?? SESSION_LOOKBACK_MS), until: now };
}

/**
 * Where the drawn window starts: a look-back starts at its `since`, or at the session's first
 * event when that is later (a young session fills the width); "since the session began" at its
 * first event (undefined: timelineOf finds it).
 */
export function windowStart(
  range: TimelineRange,
  h: SessionHistory,
  now: number,
): number | undefined {
  if (range === 'session') return undefined;
  const since = historyQuery(range, now).since;
  const first = h.activity[0]?.from;
  return first === undefined ? since : Math.max(first, since);
}

/** The range in words, for the line above the lanes (readable without the picker's look). */
export function rangeText(range: TimelineRange, t: Timeline): string {
  const r = TIMELINE_RANGES.find((x) => x.key === range)!;
  const what = r.ms === null ? 'since the session began' : `last ${r.label}`;
  return `${what}: ${clock(t.from)}–now (UTC); dashed right edge: still going`;
}
