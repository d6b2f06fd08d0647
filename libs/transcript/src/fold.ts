import type { Capped, EventOf, TranscriptEvent } from './schema';

/** A message whole: its deltas joined, `more` the bytes left out past the cap. */
export type MessageItem = Omit<EventOf<'text'>, 'type' | 'delta'> & {
  type: 'message';
  text: string;
  more?: number;
};
/** A tool call whole: its patches applied in order, its output joined. */
export type ToolItem = Omit<EventOf<'tool'>, 'output'> & { output?: Capped };
/** A subagent with its last title and state. */
export type SubagentItem = EventOf<'subagent'>;
/** A permission request with how it was settled, once it was. */
export type PermissionItem = EventOf<'permission'> & {
  settled?: Omit<EventOf<'settled'>, 'type' | 'item' | 'turn' | 'phase'>;
};

/** A transcript item whole, as a reader shows it. */
export type TranscriptItem =
  | EventOf<'prompt'>
  | MessageItem
  | ToolItem
  | PermissionItem
  | SubagentItem
  | EventOf<'plan'>
  | EventOf<'mode'>
  | EventOf<'model'>
  | EventOf<'commands'>
  | EventOf<'usage'>
  | EventOf<'turn_end'>
  | EventOf<'capped'>;

const addMore = (a: number | undefined, b: number | undefined): number | undefined =>
  a === undefined ? b : b === undefined ? a : a + b;

function applyOutput(prev: Capped | undefined, o: NonNullable<EventOf<'tool'>['output']>): Capped {
  const more = o.mode === 'append' ? addMore(prev?.more, o.more) : o.more;
  const text = o.mode === 'append' ? (prev?.text ?? '') + o.text : o.text;
  return more !== undefined ? { text, more } : { text };
}

/**
 * Events to whole items, in the order each item first appeared. An item keeps the turn and phase
 * of its first event. Pure; `events` may be any prefix of a transcript.
 */
export function foldTranscript(events: readonly TranscriptEvent[]): TranscriptItem[] {
  const items: TranscriptItem[] = [];
  const byItem = new Map<string, number>();
  for (const e of events) {
    switch (e.type) {
      case 'text': {
        const i = byItem.get(e.item);
        if (i === undefined) {
          byItem.set(e.item, items.length);
          const { delta, type: _t, ...rest } = e;
          items.push({ ...rest, type: 'message', text: delta });
        } else (items[i] as MessageItem).text += e.delta;
        break;
      }
      case 'truncated': {
        const i = byItem.get(e.item);
        if (i === undefined) break;
        const m = items[i] as MessageItem;
        m.more = addMore(m.more, e.more);
        break;
      }
      case 'tool': {
        const i = byItem.get(e.item);
        const { output, ...patch } = e;
        if (i === undefined) {
          byItem.set(e.item, items.length);
          const item: ToolItem = { ...patch };
          if (output !== undefined) item.output = applyOutput(undefined, output);
          items.push(item);
        } else {
          const t = items[i] as ToolItem;
          const { turn: _turn, phase: _phase, ...fields } = patch;
          Object.assign(t, fields);
          if (output !== undefined) t.output = applyOutput(t.output, output);
        }
        break;
      }
      case 'subagent': {
        const i = byItem.get(e.item);
        if (i === undefined) {
          byItem.set(e.item, items.length);
          items.push({ ...e });
        } else {
          const { turn: _turn, phase: _phase, ...fields } = e;
          Object.assign(items[i]!, fields);
        }
        break;
      }
      case 'permission':
        byItem.set(e.item, items.length);
        items.push({ ...e });
        break;
      case 'settled': {
        const i = byItem.get(e.item);
        if (i === undefined) break;
        const { type: _t, item: _i, turn: _turn, phase: _p, ...settled } = e;
        (items[i] as PermissionItem).settled = settled;
        break;
      }
      case 'usage': {
        // As coalesceEvents merges them: reports of one model run (no cost yet) are one item.
        const last = items[items.length - 1];
        if (
          last?.type === 'usage' &&
          last.cost === undefined &&
          last.turn === e.turn &&
          last.phase === e.phase
        )
          items[items.length - 1] = { ...last, ...e };
        else items.push(e);
        break;
      }
      default:
        items.push(e);
    }
  }
  return items;
}

function mergeTool(a: EventOf<'tool'>, b: EventOf<'tool'>): EventOf<'tool'> {
  const { output: ao } = a;
  const { output: bo, turn: _t, phase: _p, ...fields } = b;
  const merged: EventOf<'tool'> = { ...a, ...fields };
  if (bo === undefined) {
    if (ao !== undefined) merged.output = ao;
  } else if (ao === undefined || bo.mode === 'replace') merged.output = bo;
  else {
    const more = addMore(ao.more, bo.more);
    merged.output = {
      mode: ao.mode,
      text: ao.text + bo.text,
      ...(more !== undefined ? { more } : {}),
    };
  }
  return merged;
}

/**
 * Fewer events that fold to the same items: consecutive deltas of one message joined, patches of
 * one tool merged, consecutive usage reports of one model run merged. What a writer does to a
 * window of events before it stores them.
 *
 * A tool's patch joins its tool's last event in the window, consecutive or not, when no event
 * since touched its item and the turn and phase are the same: an agent running tools side by
 * side interleaves their updates, which would otherwise be stored one event each. The fold reads
 * the same items: a patch changes no item but its own and makes none (the event it joins comes
 * first, so the item exists by then), so moving it earlier, past other items' events, changes
 * neither what they fold to nor where any item first appears.
 */
export function coalesceEvents(events: readonly TranscriptEvent[]): TranscriptEvent[] {
  const out: TranscriptEvent[] = [];
  /** Where in `out` each tool item's last event is, while no later event touched the item. */
  const toolAt = new Map<string, number>();
  for (const e of events) {
    if (e.type === 'tool') {
      const at = toolAt.get(e.item);
      const target = at === undefined ? undefined : (out[at] as EventOf<'tool'>);
      if (target !== undefined && target.turn === e.turn && target.phase === e.phase) {
        out[at!] = mergeTool(target, e);
        continue;
      }
    }
    const last = out[out.length - 1];
    if (last !== undefined && last.turn === e.turn && last.phase === e.phase) {
      if (last.type === 'text' && e.type === 'text' && last.item === e.item) {
        out[out.length - 1] = { ...last, delta: last.delta + e.delta };
        continue;
      }
      if (last.type === 'truncated' && e.type === 'truncated' && last.item === e.item) {
        out[out.length - 1] = { ...last, more: last.more + e.more };
        continue;
      }
      // A usage with a cost closes a model run: the next one is another run's.
      if (last.type === 'usage' && e.type === 'usage' && last.cost === undefined) {
        out[out.length - 1] = { ...last, ...e };
        continue;
      }
    }
    if ('item' in e) {
      if (e.type === 'tool') toolAt.set(e.item, out.length);
      else toolAt.delete(e.item);
    }
    out.push(e);
  }
  return out;
}

/** A stored event with its place in a task's transcript (its stream id) and its session. */
export interface PlacedEvent {
  id: string;
  sessionId: string;
  executionId: string;
  event: TranscriptEvent;
}

/** An event of a compacted range: `lastId` is the id of the last event merged into it. */
export interface CompactedEvent extends PlacedEvent {
  lastId: string;
}

/** What makes two patches of one item (of one session) mergeable: the same of each. */
function mergeable(e: PlacedEvent): string | null {
  const { event } = e;
  if (event.type !== 'text' && event.type !== 'tool' && event.type !== 'subagent') return null;
  return JSON.stringify([e.executionId, event.type, event.turn, event.phase]);
}

function mergeInto(a: TranscriptEvent, b: TranscriptEvent): TranscriptEvent {
  if (a.type === 'text' && b.type === 'text') return { ...a, delta: a.delta + b.delta };
  if (a.type === 'tool' && b.type === 'tool') return mergeTool(a, b);
  const { turn: _t, phase: _p, ...fields } = b;
  return { ...a, ...fields } as TranscriptEvent;
}

/**
 * A range of a transcript (in stream order) compacted: every delta of a message joined into its
 * first, every patch of a tool call or subagent merged into its first, across the whole range;
 * each event keeps the id (place) of the first event it merges and says the last in `lastId`.
 * Per session, and per turn, the events fold ({@link foldTranscript}) to the same items as the
 * range's, also with the events after the range appended. Pure.
 */
export function compactTranscript(range: readonly PlacedEvent[]): CompactedEvent[] {
  const out: CompactedEvent[] = [];
  // Per session and item, the event later patches of that item merge into, while they can: a
  // patch of the item that cannot (another turn, phase, execution or kind of event) comes
  // between, and an item's output or text must keep its order, so the next patches start anew.
  const open = new Map<string, { at: number; as: string | null }>();
  for (const e of range) {
    const item = 'item' in e.event ? JSON.stringify([e.sessionId, e.event.item]) : null;
    const as = mergeable(e);
    const target = item === null ? undefined : open.get(item);
    if (target !== undefined && as !== null && target.as === as) {
      const merged = out[target.at]!;
      out[target.at] = { ...merged, event: mergeInto(merged.event, e.event), lastId: e.id };
      continue;
    }
    if (item !== null) open.set(item, { at: out.length, as });
    out.push({ ...e, lastId: e.id });
  }
  return out;
}
