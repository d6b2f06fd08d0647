import type { Capabilities, EntryOf } from '@baton/protocol';
import { sortedIndexOf } from '../state';
import type { Registration, SessionState, ToolOwnership } from '../state';
import {
  copySession,
  insertAt,
  removeAt,
  appended,
  withEntry,
  withoutKey,
  isLive,
  countsAsEvent,
  heard,
} from './draft';
import type { Draft, SessionHandler, SessionHandlers } from './draft';
import { outputChanges, output } from './effects';
import { own } from '../records';

const toolCall: SessionHandler<EntryOf<'tool.started' | 'tool.updated'>> = (s, e) => {
  if (!isLive(s, e)) return null;
  return onTool(s, e);
};

/**
 * Tools and background work: which tool calls are foreground, child or background work, and the
 * registrations of background work.
 */
export const tools = {
  'tool.started': toolCall,
  'tool.updated': toolCall,
  'background.started': (s, e) => {
    if (!isLive(s, e)) return null;
    const d = copySession(s);
    heard(d);
    onBackgroundStarted(d, e);
    return d;
  },
  'background.ended': (s, e) => {
    if (!isLive(s, e)) return null;
    const background = backgroundAfterEnd(s, e);
    if (background === s.background && !countsAsEvent(s)) return null;
    const d = copySession(s);
    heard(d);
    d.background = background;
    return d;
  },
} satisfies Partial<SessionHandlers>;

function onTool(
  s: SessionState,
  e: EntryOf<'tool.started'> | EntryOf<'tool.updated'>,
): Draft | null {
  const { toolCallId, parentToolCallId, ownership: evidence, status } = e.data;
  const done = status === 'completed' || status === 'failed';
  let { tools, foregroundTools, childTools } = s;
  let owner: ToolOwnership | undefined;
  // A known tool keeps the ownership its first evidence gave it; completing forgets it.
  if (own(tools, toolCallId) !== undefined) {
    owner = 'background';
    if (done) tools = withoutKey(tools, toolCallId);
  } else {
    const fg = sortedIndexOf(foregroundTools, toolCallId);
    const child = fg >= 0 ? -1 : sortedIndexOf(childTools, toolCallId);
    if (fg >= 0) {
      owner = 'foreground';
      if (done) foregroundTools = removeAt(foregroundTools, fg);
    } else if (child >= 0) {
      owner = 'child';
      if (done) childTools = removeAt(childTools, child);
    } else {
      // Lineage wins over shape: a tool with any parent is never top-level foreground work,
      // whatever the parent's own ownership (or absence of it) is.
      owner = parentToolCallId !== undefined ? 'child' : evidence;
      // Recorded until it completes (a first frame that completes it records nothing).
      if (!done && owner === 'foreground')
        foregroundTools = insertAt(foregroundTools, -fg - 1, toolCallId);
      else if (!done && owner === 'child')
        childTools = insertAt(childTools, -child - 1, toolCallId);
      else if (!done && owner === 'background') tools = withEntry(tools, toolCallId, 'background');
    }
  }
  const same =
    tools === s.tools && foregroundTools === s.foregroundTools && childTools === s.childTools;
  if (same && !countsAsEvent(s) && !(owner === 'foreground' && outputChanges(s))) return null;
  const d = copySession(s);
  heard(d);
  d.tools = tools;
  d.foregroundTools = foregroundTools;
  d.childTools = childTools;
  if (owner === 'foreground' && outputChanges(d)) output(d);
  return d;
}

function attests(caps: Capabilities | null, kind: string): boolean {
  return caps !== null && caps.attestedKinds.includes(kind);
}

function onBackgroundStarted(d: Draft, e: EntryOf<'background.started'>): void {
  const { work, toolCallId, attested } = e.data;
  const registration: Registration = {
    work,
    toolCallId: toolCallId ?? null,
    attested: attested && attests(d.execution!.capabilities, work.kind),
    presumedEnded: false,
  };
  const index = d.background.findIndex((r) => r.work.id === work.id);
  d.background =
    index === -1
      ? appended(d.background, registration)
      : d.background.map((r, i) => (i === index ? registration : r));
}

/** The registrations after a completion (the same array when it retires nothing). */
function backgroundAfterEnd(
  s: SessionState,
  e: EntryOf<'background.ended'>,
): readonly Registration[] {
  const { workId, toolCallId, kind } = e.data;
  if (workId !== undefined || toolCallId !== undefined) {
    const background = s.background.filter(
      (r) =>
        !(
          (workId !== undefined && r.work.id === workId) ||
          (toolCallId !== undefined && r.toolCallId === toolCallId)
        ),
    );
    return background.length === s.background.length ? s.background : background;
  }
  if (e.data.candidates !== undefined) return unidentifiedEnd(s.background, e.data);
  // No identity: hide one registration from counts only when the adapter says the pairing is
  // unambiguous and exactly one candidate exists; it stays registered, so admission never relies on it.
  const caps = s.execution!.capabilities;
  if (kind === undefined || !caps || !caps.unambiguousCompletionKinds.includes(kind))
    return s.background;
  const candidates = s.background.filter((r) => r.work.kind === kind && !r.presumedEnded);
  if (candidates.length !== 1) return s.background;
  const target = candidates[0]!;
  return s.background.map((r) => (r === target ? { ...r, presumedEnded: true } : r));
}

/**
 * "Some work finished" without saying which: exactly one live unattested candidate (and the report
 * cannot be of none) is retired for display; otherwise each such candidate is marked possibly
 * finished.
 * Both stay registered, so admission never relaxes on it; an identified end or the execution's
 * end removes them.
 */
function unidentifiedEnd(
  background: readonly Registration[],
  { candidates, mayBeNone }: EntryOf<'background.ended'>['data'],
): readonly Registration[] {
  const named = new Set(candidates);
  // Attested work ends by its own identity: it is never a guess's candidate.
  const candidate = (r: Registration) => named.has(r.work.id) && !r.attested && !r.presumedEnded;
  let live = 0;
  for (const r of background) if (candidate(r)) live++;
  if (live === 0) return background;
  if (live === 1 && mayBeNone !== true)
    return background.map((r) => (candidate(r) ? { ...r, presumedEnded: true } : r));
  if (!background.some((r) => candidate(r) && !r.work.possiblyFinished)) return background;
  return background.map((r) =>
    candidate(r) && !r.work.possiblyFinished
      ? { ...r, work: { ...r.work, possiblyFinished: true as const } }
      : r,
  );
}
