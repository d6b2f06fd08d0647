import type { FactBody, FactBodyOf } from '../facts';
import { asId, isRecord, path, rec, text, type JsonRecord } from '../json';
import { outputFact, sessionUpdate, toolFact, toolFrame } from './common';
import { baseCapabilities } from './generic';
import type { AgentIdentity, Dialect, Step } from './types';

/**
 * `codex-acp` in its legacy (plain v1) rendering. Child threads appear only as collaboration
 * tool cards; nothing reliable says when a child stops, so children are registered unattested
 * (display and counts) and the session stays busy while it runs.
 */

const COLLAB_TOOLS = new Set([
  'spawnAgent',
  'sendInput',
  'resumeAgent',
  'wait',
  'closeAgent',
  'followupTask',
]);

type EndStatus = FactBodyOf<'background.ended'>['data']['status'];

const childEnd = (status: unknown): EndStatus | undefined => {
  switch (status) {
    case 'completed':
      return 'completed';
    case 'errored':
      return 'failed';
    case 'shutdown':
    case 'interrupted':
      return 'stopped';
    case 'notFound':
      return 'unknown';
    default:
      return undefined;
  }
};

export interface CodexState {
  tools: Record<string, { collab?: string }>;
  /** Child thread id -> the spawn card that registered it and whether it has ended. */
  threads: Record<string, { toolCallId: string; ended: boolean }>;
}

export const isCodexAgent = (agent: AgentIdentity): boolean => /codex-acp$/.test(agent.name);

/** 1.x tags collaboration cards in `_meta.codex`; 2.x only by title (the tool name). */
const collabTool = (update: JsonRecord): string | undefined => {
  const tagged = text(path(update, '_meta', 'codex', 'collaboration', 'tool'), 100);
  if (tagged !== undefined) return tagged;
  const title = text(update.title, 100);
  return title !== undefined && COLLAB_TOOLS.has(title) ? title : undefined;
};

const firstThread = (v: unknown): string | undefined => (Array.isArray(v) ? asId(v[0]) : undefined);

const step = (
  state: CodexState,
  { message, at }: { message: JsonRecord; at: string },
): Step<CodexState> => {
  const update = sessionUpdate(message);
  if (update === undefined) return { state, facts: [] };
  const output = outputFact(update);
  if (output !== undefined) return { state, facts: [output] };
  const frame = toolFrame(update);
  if (frame === undefined) return { state, facts: [] };

  const facts: FactBody[] = [];
  const next = state;
  const id = frame.toolCallId;
  const known = state.tools[id];
  const collab = known?.collab ?? collabTool(update);
  if (known === undefined) {
    next.tools[id] = collab !== undefined ? { collab } : {};
  }
  const input = rec(update.rawInput);

  // Without lineage every tool call is the root thread's: legacy mode never shows child tools.
  if (known === undefined)
    facts.push(toolFact(frame, { started: frame.first, ownership: 'foreground' }));
  else if (frame.status !== undefined) facts.push(toolFact(frame, { started: false }));

  if (collab === 'spawnAgent' && frame.status !== 'failed') {
    const thread =
      firstThread(input?.receiverThreadIds) ??
      firstThread(path(update, '_meta', 'codex', 'collaboration', 'receiverThreadIds'));
    if (thread !== undefined && next.threads[thread] === undefined) {
      next.threads[thread] = { toolCallId: id, ended: false };
      facts.push({
        type: 'background.started',
        data: {
          work: {
            kind: 'subagent',
            id: thread,
            label: text(input?.prompt, 2_000) ?? 'Subagent',
            startedAt: at,
            chat: thread,
            _meta: { codex: { threadId: thread, toolCallId: id } },
          },
          toolCallId: id,
          attested: false,
        },
      });
    }
  }

  // An activity card (1.x `_meta.codex.subagent`, 2.x `rawInput.agentThreadId`) says what one
  // thread did, whichever card carries it: a child's own end retires it.
  const activity = rec(path(update, '_meta', 'codex', 'subagent'));
  const actThread = asId(activity?.threadId) ?? asId(input?.agentThreadId);
  const actKind = text(activity?.activity, 100) ?? text(input?.activityKind, 100);
  if (actThread !== undefined && actKind !== undefined) {
    const reg = next.threads[actThread];
    const status =
      actKind === 'completed' ? 'completed' : actKind === 'interrupted' ? 'stopped' : undefined;
    if (reg !== undefined && !reg.ended && status !== undefined) {
      next.threads[actThread] = { ...reg, ended: true };
      facts.push({
        type: 'background.ended',
        data: { workId: actThread, toolCallId: reg.toolCallId, kind: 'subagent', status },
      });
    }
  }

  // `wait` / `closeAgent` (and any collaboration card) report each child's state by thread id.
  const states = rec(input?.agentsStates);
  if (collab !== undefined && states !== undefined) {
    for (const [thread, s] of Object.entries(states)) {
      const reg = next.threads[thread];
      const status = isRecord(s) ? childEnd(s.status) : undefined;
      if (reg === undefined || reg.ended || status === undefined) continue;
      next.threads[thread] = { ...reg, ended: true };
      facts.push({
        type: 'background.ended',
        data: { workId: thread, toolCallId: reg.toolCallId, kind: 'subagent', status },
      });
    }
  }
  return { state: next, facts };
};

export const codexDialect: Dialect<CodexState> = {
  name: 'codex',
  capabilities: (agent) => baseCapabilities('codex', agent),
  initial: () => ({ tools: {}, threads: {} }),
  step,
};
