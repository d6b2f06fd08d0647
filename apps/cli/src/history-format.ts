import { duration } from '@baton/client';
import type { SessionHistory, TaskHistory } from '@baton/protocol';

/**
 * `baton history` as people read it: per session, what it showed when, its turns, its
 * background work, its prompts (how long each waited) and its executions. Times are UTC.
 */
export function formatHistory(h: TaskHistory): string[] {
  const lines = [
    `task ${h.taskId}  ${iso(h.from)} → ${iso(h.to)}  (${h.entries} entries${
      h.truncated ? ', truncated: narrow the range' : ''
    })`,
  ];
  if (h.trimmed) {
    lines.push('  the stream was trimmed behind this range: what happened before it is gone');
  }
  if (h.sessions.length === 0) lines.push('  nothing happened in this range');
  for (const s of h.sessions) lines.push('', ...session(s));
  return lines;
}

function session(s: SessionHistory): string[] {
  const out = [`session ${s.sessionId}`];
  if (s.activity.length > 0) {
    out.push('  activity');
    for (const a of s.activity) {
      out.push(`    ${span(a.from, a.to)}  ${a.state}${a.reason ? ` (${a.reason})` : ''}`);
    }
  }
  if (s.turns.length > 0) {
    out.push('  turns');
    for (const t of s.turns) {
      out.push(
        `    ${span(t.start, t.end)}  ${t.promptId} #${t.generation}${t.stopReason ? `  ${t.stopReason}` : ''}`,
      );
    }
  }
  if (s.background.length > 0) {
    out.push('  background');
    for (const b of s.background) {
      const end = b.end === null ? '' : `  ${endedBy(b.endedBy)}`;
      out.push(`    ${span(b.start, b.end)}  ${b.kind} ${b.id} ${JSON.stringify(b.label)}${end}`);
    }
  }
  if (s.prompts.length > 0) {
    out.push('  prompts');
    for (const p of s.prompts) {
      const parts = [`${time(p.submittedAt)}  ${p.promptId} (key ${p.idempotencyKey})`];
      if (p.decision === null) parts.push('undecided');
      else if (p.decision === 'queued') {
        parts.push(
          p.queueWaitMs === null ? 'queued, still waiting' : `queued ${duration(p.queueWaitMs)}`,
        );
      } else parts.push(p.decision);
      if (p.dispatchedAt !== null) parts.push(`dispatched ${time(p.dispatchedAt)}`);
      if (p.reason) parts.push(p.reason);
      out.push(`    ${parts.join(', ')}`);
    }
  }
  if (s.executions.length > 0) {
    out.push('  executions');
    for (const x of s.executions) {
      const from = x.start ?? x.requestedAt;
      const head =
        from === null
          ? `${' '.repeat(12)} → ${x.end === null ? 'running' : time(x.end)}`
          : span(from, x.end);
      out.push(
        `    ${head}  ${x.executionId}${x.start === null && x.requestedAt !== null ? ' (requested)' : ''}${x.reason ? `  ${x.reason}` : ''}`,
      );
    }
  }
  return out;
}

const endedBy = (e: string | undefined) =>
  e === 'identified'
    ? 'ended'
    : e === 'execution'
      ? 'ended with its execution'
      : 'ended (unidentified)';

function span(from: number, to: number | null): string {
  return `${time(from)} → ${to === null ? 'now         ' : time(to)}${
    to === null ? '' : `  ${duration(to - from).padStart(7)}`
  }`;
}

/** HH:MM:SS.mmm, UTC. */
function time(ms: number): string {
  return new Date(ms).toISOString().slice(11, 23);
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * A time as the CLI takes it: `30m`, `2h`, `1d` ago (s, m, h, d), ms since the epoch, or ISO 8601.
 * Returned as ms since the epoch, the way the gateway's query takes it.
 */
export function parseWhen(v: string, now = Date.now()): number {
  const rel = /^(\d+)(s|m|h|d)$/.exec(v.trim());
  if (rel) {
    const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[
      rel[2] as 's' | 'm' | 'h' | 'd'
    ];
    return now - Number(rel[1]) * unit;
  }
  if (/^\d+$/.test(v.trim())) return Number(v.trim());
  const ms = Date.parse(v);
  if (Number.isNaN(ms)) {
    throw new Error(
      `not a time: ${JSON.stringify(v)} (30m, 2h, 1d ago; ms since the epoch; ISO 8601)`,
    );
  }
  return ms;
}
