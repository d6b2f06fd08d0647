import type { FactBody, FactBodyOf } from './facts';

/**
 * Output coalescing for one session, as a pure function of the facts and the time they arrive.
 *
 * Agents stream output a token at a time; the activity core only needs to know that the
 * foreground is generating (and roughly how much). So `foreground.output` becomes a fact at most
 * once per `periodMs`: the first chunk after a quiet period goes out at once (the session turns
 * `generating` without delay), later chunks in the same period add up into one pending fact that
 * the caller flushes when {@link nextFlushAt} comes. Nothing else is ever delayed or reordered:
 * any other fact first flushes the pending output, so output stays exactly where it happened
 * relative to tools, turn ends and dispatches (the core compares their order, e.g. "output after
 * the claim").
 *
 * `usage.reported` is coalesced the same way on a clock of its own (at most one per `periodMs`,
 * the latest value of each field), and the pending one goes out just before a `turn.ended`.
 *
 * There is no timer in here: the caller passes `now` (ms) and drives {@link flushDue}.
 */

type Output = FactBodyOf<'foreground.output'>;
type Usage = FactBodyOf<'usage.reported'>;

export interface CoalesceState {
  /** When the last output fact went out (ms), if one did. */
  lastEmitAt?: number;
  /** Output seen since then and not yet reported. */
  pending?: Output;
  /** When the last usage fact went out (ms), if one did. */
  usageAt?: number;
  /** Usage reported since then and not yet passed on (the latest of each field). */
  usage?: Usage;
}

export interface Coalesced {
  state: CoalesceState;
  facts: FactBody[];
}

export const initialCoalesceState = (): CoalesceState => ({});

/** Chars add up; unknown chars (a plan update) count as none. The latest channel names the fact. */
const merge = (a: Output, b: Output): Output => {
  const chars =
    a.data.chars === undefined && b.data.chars === undefined
      ? undefined
      : (a.data.chars ?? 0) + (b.data.chars ?? 0);
  return {
    type: 'foreground.output',
    data: chars === undefined ? { channel: b.data.channel } : { channel: b.data.channel, chars },
  };
};

/** Each usage field is the latest reported: a later report's fields replace an earlier one's. */
const mergeUsage = (a: Usage, b: Usage): Usage => ({
  type: 'usage.reported',
  data: { ...a.data, ...b.data },
});

const release = (state: CoalesceState, now: number): Coalesced =>
  state.pending === undefined
    ? { state, facts: [] }
    : { state: { ...state, lastEmitAt: now, pending: undefined }, facts: [state.pending] };

const releaseUsage = (state: CoalesceState, now: number): Coalesced =>
  state.usage === undefined
    ? { state, facts: [] }
    : { state: { ...state, usageAt: now, usage: undefined }, facts: [state.usage] };

/**
 * Usage is not ordered against other facts (it says how full the context is, not what happened
 * when), so it waits out its period past them; only a turn's end takes the latest with it.
 */
const coalesceUsage = (state: CoalesceState, fact: Usage, now: number, periodMs: number) => {
  if (state.usage !== undefined)
    return { state: { ...state, usage: mergeUsage(state.usage, fact) }, facts: [] };
  if (state.usageAt === undefined || now - state.usageAt >= periodMs)
    return { state: { ...state, usageAt: now }, facts: [fact] };
  return { state: { ...state, usage: fact }, facts: [] };
};

/** One fact in, the facts to report now, in order. */
export const coalesce = (
  state: CoalesceState,
  fact: FactBody,
  now: number,
  periodMs: number,
): Coalesced => {
  if (fact.type === 'usage.reported') return coalesceUsage(state, fact, now, periodMs);
  if (fact.type !== 'foreground.output') {
    const flushed = release(state, now);
    if (fact.type !== 'turn.ended')
      return { state: flushed.state, facts: [...flushed.facts, fact] };
    const usage = releaseUsage(flushed.state, now);
    return { state: usage.state, facts: [...flushed.facts, ...usage.facts, fact] };
  }
  if (state.pending !== undefined) {
    return { state: { ...state, pending: merge(state.pending, fact) }, facts: [] };
  }
  if (state.lastEmitAt === undefined || now - state.lastEmitAt >= periodMs) {
    return { state: { ...state, lastEmitAt: now }, facts: [fact] };
  }
  return { state: { ...state, pending: fact }, facts: [] };
};

/** A batch of facts in arrival order, all seen at `now`. */
export const coalesceAll = (
  state: CoalesceState,
  facts: readonly FactBody[],
  now: number,
  periodMs: number,
): Coalesced => {
  let s = state;
  const out: FactBody[] = [];
  for (const f of facts) {
    const r = coalesce(s, f, now, periodMs);
    s = r.state;
    out.push(...r.facts);
  }
  return { state: s, facts: out };
};

/** When pending output or usage is due (ms), or undefined when nothing is pending. */
export const nextFlushAt = (state: CoalesceState, periodMs: number): number | undefined => {
  const output = state.pending === undefined ? undefined : (state.lastEmitAt ?? 0) + periodMs;
  const usage = state.usage === undefined ? undefined : (state.usageAt ?? 0) + periodMs;
  return output === undefined ? usage : usage === undefined ? output : Math.min(output, usage);
};

/** Reports the pending output and usage whose period has passed at `now`. */
export const flushDue = (state: CoalesceState, now: number, periodMs: number): Coalesced => {
  const output =
    state.pending !== undefined && now >= (state.lastEmitAt ?? 0) + periodMs
      ? release(state, now)
      : { state, facts: [] };
  const usage =
    output.state.usage !== undefined && now >= (output.state.usageAt ?? 0) + periodMs
      ? releaseUsage(output.state, now)
      : { state: output.state, facts: [] };
  return { state: usage.state, facts: [...output.facts, ...usage.facts] };
};

/** Reports the pending output and usage whatever the time: the execution is ending. */
export const flushAll = (state: CoalesceState, now: number): Coalesced => {
  const output = release(state, now);
  const usage = releaseUsage(output.state, now);
  return { state: usage.state, facts: [...output.facts, ...usage.facts] };
};
