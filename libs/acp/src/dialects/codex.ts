import type { FactBody } from '../facts';
import { asId, isRecord, path, rec, text, type JsonRecord } from '../json';
import { backgroundStarted, endStatusOf, readUpdate, toolFact } from './common';
import { baseCapabilities } from './generic';
import type { AgentIdentity, Dialect, Step } from './types';

/**
 * `codex-acp` in its plain v1 rendering. Child threads appear only as collaboration tool cards,
 * where an adapter renders them (the real @zed-industries/codex-acp 0.16.0 renders none: its
 * children never reach the wire); they are registered unattested (display and counts) and the
 * session stays busy while they run. Exec cards are the turn's own tools, except a command still
 * running when its prompt is answered (`codexTurnEnded`). docs/recordings.md (## Codex).
 */

const COLLAB_TOOLS = new Set([
  'spawnAgent',
  'sendInput',
  'resumeAgent',
  'wait',
  'closeAgent',
  'followupTask',
]);

const childEnd = endStatusOf({
  completed: 'completed',
  errored: 'failed',
  shutdown: 'stopped',
  interrupted: 'stopped',
  notFound: 'unknown',
});

/** An exec card (`kind: execute`) not yet completed: a command Codex is running. */
interface OpenCommand {
  startedAt: string;
  label: string;
  command: string;
  terminal?: string;
}

export interface CodexState {
  tools: Record<string, { collab?: string }>;
  /** Exec cards in progress, by card id: only these are looked at when a turn ends. */
  commands: Record<string, OpenCommand>;
  /** Commands left running at a turn's end, registered as shells by their card id. */
  shells: Record<string, { ended: boolean }>;
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
  const read = readUpdate(message);
  if ('facts' in read) return { state, facts: read.facts };
  const { update, frame } = read;

  const facts: FactBody[] = [];
  const next = state;
  const id = frame.toolCallId;
  const known = state.tools[id];
  const collab = known?.collab ?? collabTool(update);
  const input = rec(update.rawInput);
  if (known === undefined) {
    next.tools[id] = collab !== undefined ? { collab } : {};
    if (frame.toolKind === 'execute' && frame.status !== 'completed' && frame.status !== 'failed')
      next.commands[id] = openCommand(frame.title, input, update, at);
  } else if (frame.status === 'completed' || frame.status === 'failed') {
    delete next.commands[id];
  }

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
      facts.push(
        backgroundStarted(
          {
            kind: 'subagent',
            id: thread,
            label: text(input?.prompt, 2_000) ?? 'Subagent',
            startedAt: at,
            chat: thread,
            _meta: { codex: { threadId: thread, toolCallId: id } },
          },
          false,
          id,
        ),
      );
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

  // A command left running past its turn ends when its card does, if the card ever completes.
  const shell = next.shells[id];
  if (shell !== undefined && !shell.ended && frame.status !== undefined) {
    const status =
      frame.status === 'completed' ? 'completed' : frame.status === 'failed' ? 'failed' : undefined;
    if (status !== undefined) {
      next.shells[id] = { ended: true };
      facts.push({
        type: 'background.ended',
        data: { workId: id, toolCallId: id, kind: 'shell', status },
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

/** What an exec card says it runs: `rawInput.command` is the argv (`bash -lc <command>`). */
const openCommand = (
  title: string | undefined,
  input: JsonRecord | undefined,
  update: JsonRecord,
  at: string,
): OpenCommand => {
  const argv = Array.isArray(input?.command) ? input.command : undefined;
  const command =
    (argv !== undefined ? text(argv.at(-1), 20_000) : text(input?.command, 20_000)) ?? title ?? '';
  const terminal = asId(path(update, '_meta', 'terminal_info', 'terminal_id'));
  return {
    startedAt: at,
    label: title ?? 'Command',
    command,
    ...(terminal !== undefined ? { terminal } : {}),
  };
};

/**
 * The prompt was answered with exec cards still in progress: Codex's unified exec left those
 * commands running as processes of their own (the call yielded with "Process running with session
 * ID …"), and codex-acp 0.16.0 never reports their end, not even when the process exits. Each is
 * registered as a shell by its card id, unattested, and at once reported as possibly finished (an
 * unidentified completion that may be of none): shown, never as surely running, until its card
 * completes (an identified end) or the execution ends. Admission is not touched.
 */
export const codexTurnEnded = (state: CodexState): Step<CodexState> => {
  const facts: FactBody[] = [];
  const left: string[] = [];
  for (const id in state.commands) {
    const command = state.commands[id]!;
    delete state.commands[id];
    if (state.shells[id] !== undefined) continue;
    state.shells[id] = { ended: false };
    left.push(id);
    facts.push(
      backgroundStarted(
        {
          kind: 'shell',
          id,
          label: command.label,
          startedAt: command.startedAt,
          command: command.command,
          ...(command.terminal !== undefined ? { terminal: command.terminal } : {}),
          _meta: { codex: { toolCallId: id } },
        },
        false,
        id,
      ),
    );
  }
  if (left.length > 0)
    facts.push({
      type: 'background.ended',
      data: { status: 'unknown', candidates: left.slice(0, 100), mayBeNone: true },
    });
  return { state, facts };
};

export const codexDialect: Dialect<CodexState> = {
  name: 'codex',
  capabilities: (agent) => baseCapabilities('codex', agent),
  initial: () => ({ tools: {}, commands: {}, threads: {}, shells: {} }),
  step,
  turnEnded: codexTurnEnded,
};
