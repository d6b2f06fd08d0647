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
 * There is no timer in here: the caller passes `now` (ms) and drives {@link flushDue}.
 */

type Output = FactBodyOf<'foreground.output'>;

export interface CoalesceState {
  /** When the last output fact went out (ms), if one did. */
  lastEmitAt?: number;
  /** Output seen since then and not yet reported. */
  pending?: Output;
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

const release = (state: CoalesceState, now: number): Coalesced =>
  state.pending === undefined
    ? { state, facts: [] }
    : { state: { lastEmitAt: now }, facts: [state.pending] };

/** One fact in, the facts to report now, in order. */
export const coalesce = (
  state: CoalesceState,
  fact: FactBody,
  now: number,
  periodMs: number,
): Coalesced => {
  if (fact.type !== 'foreground.output') {
    const flushed = release(state, now);
    return { state: flushed.state, facts: [...flushed.facts, fact] };
  }
  if (state.pending !== undefined) {
    return { state: { ...state, pending: merge(state.pending, fact) }, facts: [] };
  }
  if (state.lastEmitAt === undefined || now - state.lastEmitAt >= periodMs) {
    return { state: { lastEmitAt: now }, facts: [fact] };
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

/** When pending output is due (ms), or undefined when nothing is pending. */
export const nextFlushAt = (state: CoalesceState, periodMs: number): number | undefined =>
  state.pending === undefined ? undefined : (state.lastEmitAt ?? 0) + periodMs;

/** Reports the pending output if its period has passed at `now`. */
export const flushDue = (state: CoalesceState, now: number, periodMs: number): Coalesced => {
  const at = nextFlushAt(state, periodMs);
  return at !== undefined && now >= at ? release(state, now) : { state, facts: [] };
};

/** Reports the pending output whatever the time: the execution is ending. */
export const flushAll = (state: CoalesceState, now: number): Coalesced => release(state, now);
