import type { BackgroundWork, Capabilities } from '@baton/protocol';
import type { FactBody, FactBodyOf } from '../facts';
import { asId, isRecord, path, rec, str, text, type JsonRecord } from '../json';
import {
  backgroundStarted,
  endStatusOf,
  outputFact,
  sessionUpdate,
  toolFact,
  toolFrame,
  usageFact,
  type EndStatus,
  type Ownership,
  type ToolFrame,
} from './common';
import { baseCapabilities } from './generic';
import type { AgentIdentity, Dialect, SessionSetup, Step, StepContext } from './types';
import { versionAtLeast } from './version';

/**
 * `@agentclientprotocol/claude-agent-acp` (and its earlier names) as a plain ACP v1 client sees
 * it. Every rule here is keyed on structured fields (`_meta.claudeCode.*`, hook `toolResponse`,
 * raw SDK task messages); text a model or a tool produced never creates or ends a registration.
 */

export type ClaudeWorkKind = 'subagent' | 'shell' | 'monitor';

/** The adapter stamps `parentToolUseId` on everything a subagent does from this version on. */
const LINEAGE_SINCE = '0.25.0';
/** `_claude/sdkMessage` (raw SDK task messages) exists from this version on. */
const RAW_SDK_SINCE = '0.60.0';

/**
 * Subagents as child sessions (`clientCapabilities.subagents`), with `subagent_update` idle as the
 * identified end: recorded from this version on.
 */
const SUBAGENT_SESSIONS_SINCE = '0.101.0';

const SUBAGENT_TOOLS = new Set(['Agent', 'Task']);
const STOP_TOOLS = new Set(['TaskStop', 'KillShell']);

interface ToolState {
  toolName?: string;
  parent?: string;
  ownership?: Ownership;
  /** The model asked for this launch to run in the background (`rawInput.run_in_background`). */
  runInBackground?: boolean;
  command?: string;
  description?: string;
  /** For TaskStop: the task it stops. */
  stopsTask?: string;
  /** Id of the work this tool call launched, once registered. */
  workId?: string;
  /** Its card completed (or failed). */
  completed?: boolean;
  /** Terminal profile: the launch opened a display terminal (`_meta.terminal_info`)… */
  terminal?: boolean;
  /** …and closed it (`_meta.terminal_exit`). */
  exited?: boolean;
}

interface WorkState {
  kind: ClaudeWorkKind;
  toolCallId?: string;
  ended: boolean;
  /**
   * Its end will be identified: raw task messages, a child session's idle, or a shell whose
   * display terminal stayed open past its launch (terminal profile). Never an unidentified
   * completion's candidate.
   */
  identified: boolean;
  /** The only candidate of an unidentified completion: retired for display, not for admission. */
  presumed?: boolean;
}

export interface ClaudeState {
  /** Top-level tool calls can be called foreground only when the adapter stamps lineage. */
  lineage: boolean;
  attested: boolean;
  tools: Record<string, ToolState>;
  works: Record<string, WorkState>;
  /** SDK task id -> registered work id. */
  tasks: Record<string, string>;
  /** SDK task id -> launching tool use id, from `task_started`, for launches not yet registered. */
  taskTools: Record<string, string>;
  /** Terminal statuses reported before the work was registered (reordered frames). */
  earlyEnds: Record<string, EndStatus>;
  /** The client advertised `subagents` to an adapter that makes each subagent a child session. */
  subagentSessions: boolean;
  /** Child session id -> the subagent work it is. */
  children: Record<string, string>;
  /** Some work ended by its identity since the last task-notification cycle (which may be its). */
  endedSinceCycle: boolean;
  /**
   * ACP v2: `state_update`'s `background` list is the truth — work is registered and retired by
   * its ids only, and tools start with a `tool_call_update`.
   */
  v2: boolean;
  /** v2: what `terminal_update`s said of each terminal. */
  terminals: Record<string, { command?: string; exited?: boolean }>;
}

const claudeMeta = (v: unknown): JsonRecord | undefined => rec(path(v, '_meta', 'claudeCode'));

const isClaudeName = (name: string): boolean => /claude-(agent|code)-acp$/.test(name);

export const isClaudeAgent = (agent: AgentIdentity): boolean =>
  isClaudeName(agent.name) || isRecord(agent.capabilitiesMeta?.claudeCode);

/**
 * Which raw SDK messages the session asked for. A filter entry matches a subtype when it names
 * `system` with that subtype or with none; an `origin` narrows it to some cycles only, so it
 * cannot be relied on for every task.
 */
const rawSubtypeEnabled = (setup: SessionSetup | undefined, subtype: string): boolean => {
  const opt = path(setup?.meta, 'claudeCode', 'emitRawSDKMessages');
  if (opt === true) return true;
  if (!Array.isArray(opt)) return false;
  return opt.some(
    (f) =>
      isRecord(f) &&
      f.type === 'system' &&
      (f.subtype === undefined || f.subtype === subtype) &&
      f.origin === undefined,
  );
};

/**
 * Identified completion needs the launch-to-task link (`task_started`) and a terminal message
 * (`task_notification` or `task_updated`), on an adapter that can send them.
 */
export const rawTaskEventsEnabled = (agent: AgentIdentity, setup: SessionSetup | undefined) =>
  versionAtLeast(agent.version, RAW_SDK_SINCE) &&
  rawSubtypeEnabled(setup, 'task_started') &&
  (rawSubtypeEnabled(setup, 'task_notification') || rawSubtypeEnabled(setup, 'task_updated'));

const ATTESTED_KINDS: ClaudeWorkKind[] = ['shell', 'subagent', 'monitor'];

/** The client asked for subagents as child sessions, from an adapter recorded doing so. */
export const subagentSessionsEnabled = (
  agent: AgentIdentity,
  setup: SessionSetup | undefined,
): boolean =>
  versionAtLeast(agent.version, SUBAGENT_SESSIONS_SINCE) &&
  isRecord(setup?.clientCapabilities?.subagents);

const claudeCapabilities = (
  agent: AgentIdentity,
  setup: SessionSetup | undefined,
): Capabilities => {
  const v2 = setup?.protocolVersion === 2;
  const attested = rawTaskEventsEnabled(agent, setup);
  const subagentSessions = subagentSessionsEnabled(agent, setup);
  if (v2) {
    return {
      ...baseCapabilities('claude', agent),
      promptQueueing: path(agent.capabilitiesMeta, 'claudeCode', 'promptQueueing') === true,
      // The list names its items, so their ends are identified; handoff is not proven here.
      // 0.101.0 never lists a Monitor (its call completes at launch): no monitor is attested.
      handoff: false,
      attestedKinds: ['shell', 'subagent'],
      _meta: { claudeCode: { protocolVersion: 2, backgroundList: true } },
    };
  }
  return {
    ...baseCapabilities('claude', agent),
    promptQueueing: path(agent.capabilitiesMeta, 'claudeCode', 'promptQueueing') === true,
    // Handoff is fixture-tested with raw task messages only; a subagent session's idle
    // identifies its end (attested), but the held-prompt successor is not proven there.
    handoff: attested,
    attestedKinds: attested ? [...ATTESTED_KINDS] : subagentSessions ? ['subagent'] : [],
    _meta: {
      claudeCode: {
        rawTaskEvents: attested,
        lineage: versionAtLeast(agent.version, LINEAGE_SINCE),
        subagentSessions,
        terminalOutput: path(setup?.clientCapabilities, '_meta', 'terminal_output') === true,
      },
    },
  };
};

// ------------------------------------------------------------------------------------------------

type Acc = { state: ClaudeState; facts: FactBody[] };

const setTool = (acc: Acc, id: string, patch: Partial<ToolState>): void => {
  // The entry is replaced (callers keep the one they read), the map is updated in place.
  acc.state.tools[id] = { ...acc.state.tools[id], ...patch };
};

/**
 * Ownership of work under a parent tool call: the children of a background launch are
 * background; those of a foreground subagent share its ownership. Unknown parents give none.
 */
const ownershipUnder = (state: ClaudeState, parent: string): Ownership | undefined => {
  const p = state.tools[parent];
  if (p === undefined) return undefined;
  if (p.runInBackground === true || p.workId !== undefined) return 'background';
  return p.ownership;
};

const workFor = (
  kind: ClaudeWorkKind,
  id: string,
  tool: ToolState,
  toolCallId: string,
  at: string,
): BackgroundWork => {
  const meta = {
    claudeCode: { toolCallId, ...(tool.toolName ? { toolName: tool.toolName } : {}) },
  };
  switch (kind) {
    case 'subagent':
      return {
        kind,
        id,
        label: tool.description ?? 'Subagent',
        startedAt: at,
        chat: id,
        _meta: meta,
      };
    case 'shell':
      return {
        kind,
        id,
        label: tool.description ?? tool.command ?? 'Background shell',
        startedAt: at,
        command: tool.command ?? '',
        _meta: meta,
      };
    case 'monitor':
      return {
        kind,
        id,
        label: tool.description ?? tool.command ?? 'Monitor',
        startedAt: at,
        ...(tool.command !== undefined ? { command: tool.command } : {}),
        _meta: meta,
      };
  }
};

const launchKind = (tool: ToolState): ClaudeWorkKind | undefined => {
  if (tool.toolName === 'Monitor') return 'monitor';
  if (tool.toolName === 'Bash' || tool.toolName === 'PowerShell') return 'shell';
  if (tool.toolName !== undefined && SUBAGENT_TOOLS.has(tool.toolName)) return 'subagent';
  return undefined;
};

/**
 * Registers the work a launch tool call started, once. The work id is the SDK task id when one
 * is known, else the launch's tool call id; either way the dialect resolves later completions to
 * it, so the core sees one identity per registration.
 */
const register = (
  acc: Acc,
  toolCallId: string,
  kind: ClaudeWorkKind,
  at: string,
  taskId?: string,
): void => {
  const tool = acc.state.tools[toolCallId] ?? {};
  if (tool.workId !== undefined) {
    if (taskId !== undefined) acc.state.tasks[taskId] = tool.workId;
    return;
  }
  const knownTask =
    taskId ?? Object.keys(acc.state.taskTools).find((t) => acc.state.taskTools[t] === toolCallId);
  const workId = knownTask ?? toolCallId;
  setTool(acc, toolCallId, { workId });
  acc.state.works[workId] = { kind, toolCallId, ended: false, identified: acc.state.attested };
  if (knownTask !== undefined) acc.state.tasks[knownTask] = workId;
  acc.facts.push(
    backgroundStarted(
      workFor(kind, workId, acc.state.tools[toolCallId] ?? {}, toolCallId, at),
      acc.state.attested,
      toolCallId,
    ),
  );
  const early = knownTask !== undefined ? acc.state.earlyEnds[knownTask] : undefined;
  if (early !== undefined) end(acc, workId, early);
};

const end = (acc: Acc, workId: string, status: EndStatus): void => {
  const work = acc.state.works[workId];
  if (work === undefined || work.ended) return;
  acc.state.works[workId] = { ...work, ended: true };
  acc.state.endedSinceCycle = true;
  const data: FactBodyOf<'background.ended'>['data'] = { workId, kind: work.kind, status };
  if (work.toolCallId !== undefined) data.toolCallId = work.toolCallId;
  acc.facts.push({ type: 'background.ended', data });
};

/** Resolves an SDK task (by task id, else by its launching tool use id) to registered work. */
const workOfTask = (state: ClaudeState, taskId: string | undefined, toolUseId?: string) => {
  if (taskId !== undefined && state.tasks[taskId] !== undefined) return state.tasks[taskId];
  if (toolUseId !== undefined) return state.tools[toolUseId]?.workId;
  return undefined;
};

// ------------------------------------------------------------------------------------------------

const readInput = (update: JsonRecord, patch: ToolState): void => {
  const input = rec(update.rawInput);
  if (input === undefined) return;
  if (input.run_in_background === true) patch.runInBackground = true;
  const command = text(input.command, 20_000);
  if (command !== undefined) patch.command = command;
  const description = text(input.description, 2_000);
  if (description !== undefined) patch.description = description;
  const stops = asId(input.task_id) ?? asId(input.shell_id);
  if (stops !== undefined) patch.stopsTask = stops;
};

const onTool = (
  acc: Acc,
  update: JsonRecord,
  frame: ToolFrame,
  at: string,
  /** For a child session's frames: the parent when the frame carries no stamp. */
  childOf?: string,
): void => {
  const meta = claudeMeta(update);
  const id = frame.toolCallId;
  const known = acc.state.tools[id];
  const toolName = text(meta?.toolName, 200) ?? text(update.name, 200);
  const parent = asId(meta?.parentToolUseId) ?? childOf;

  // Ownership is fixed by the first frame that carries evidence of it: a lineage stamp, or a
  // `tool_call` without one from an adapter that stamps lineage (a top-level call). An update
  // that lacks the stamp is no evidence: 0.60 sends child hook updates without it.
  let ownership: Ownership | undefined;
  let newParent: string | undefined;
  if (known?.ownership === undefined && known?.parent === undefined) {
    if (parent !== undefined) {
      newParent = parent;
      ownership = ownershipUnder(acc.state, parent);
    } else if (
      (frame.first || (acc.state.v2 && known === undefined)) &&
      acc.state.lineage &&
      (meta !== undefined || acc.state.v2)
    ) {
      ownership = 'foreground';
    }
  } else if (known.ownership === undefined && known.parent !== undefined) {
    // The parent was unknown when this child appeared; its ownership may be known now.
    ownership = ownershipUnder(acc.state, known.parent);
  }

  // A fresh entry (callers keep the one they read), built without intermediate objects: this
  // runs for every tool frame.
  const tool: ToolState = known === undefined ? {} : { ...known };
  if (toolName !== undefined && tool.toolName === undefined) tool.toolName = toolName;
  if (newParent !== undefined) tool.parent = newParent;
  if (ownership !== undefined) tool.ownership = ownership;
  if (frame.status === 'completed' || frame.status === 'failed') tool.completed = true;
  const updateMeta = rec(update._meta);
  if (updateMeta !== undefined) {
    if (rec(updateMeta.terminal_info) !== undefined) tool.terminal = true;
    if (rec(updateMeta.terminal_exit) !== undefined) tool.exited = true;
  }
  readInput(update, tool);
  acc.state.tools[id] = tool;

  const kind = launchKind(tool);
  const response = rec(meta?.toolResponse);

  // v2: the background list alone registers work.
  if (acc.state.v2) {
    const isNew = known === undefined;
    if (isNew || frame.status !== undefined || ownership !== undefined || newParent !== undefined)
      acc.facts.push(toolFact(frame, { started: isNew, ownership, parentToolCallId: newParent }));
    return;
  }
  // Register before the launch card's completion, so no fact order shows the session idle
  // between the card ending and its work appearing.
  if (kind !== undefined && frame.status === 'completed') {
    if (kind === 'monitor' || tool.runInBackground === true) register(acc, id, kind, at);
  }
  if (response !== undefined) {
    if (kind === 'subagent' && response.status === 'async_launched')
      register(acc, id, kind, at, asId(response.agentId));
    const bgTask = asId(response.backgroundTaskId);
    if (kind === 'shell' && bgTask !== undefined) register(acc, id, kind, at, bgTask);
    const monitorTask = asId(response.taskId);
    if (kind === 'monitor' && monitorTask !== undefined) register(acc, id, kind, at, monitorTask);
  }

  const isNew = known === undefined;
  const carriesEvidence = ownership !== undefined || newParent !== undefined;
  if (isNew || frame.status !== undefined || carriesEvidence) {
    acc.facts.push(
      toolFact(frame, { started: isNew && frame.first, ownership, parentToolCallId: newParent }),
    );
  }

  // A stop that ran names its task in the tool's input: that task is over.
  if (
    tool.toolName !== undefined &&
    STOP_TOOLS.has(tool.toolName) &&
    frame.status === 'completed' &&
    tool.stopsTask !== undefined
  ) {
    const workId = workOfTask(acc.state, tool.stopsTask);
    if (workId !== undefined) end(acc, workId, 'stopped');
  }
};

const endStatus = endStatusOf({
  completed: 'completed',
  failed: 'failed',
  stopped: 'stopped',
  killed: 'stopped',
});

/** `_claude/sdkMessage` task messages: the only identified completion on a plain client. */
const onSdkMessage = (acc: Acc, message: JsonRecord, at: string): void => {
  if (message.type !== 'system') return;
  const taskId = asId(message.task_id);
  const toolUseId = asId(message.tool_use_id);
  switch (message.subtype) {
    case 'task_started': {
      if (taskId === undefined) return;
      if (toolUseId !== undefined) {
        acc.state.taskTools[taskId] = toolUseId;
        const tool = acc.state.tools[toolUseId];
        const kind = tool === undefined ? undefined : launchKind(tool);
        if (tool?.workId !== undefined) {
          acc.state.tasks[taskId] = tool.workId;
        } else if (
          tool !== undefined &&
          kind !== undefined &&
          (kind === 'monitor' || tool.runInBackground === true || message.is_backgrounded === true)
        ) {
          register(acc, toolUseId, kind, at, taskId);
        }
      }
      return;
    }
    case 'task_updated': {
      if (taskId === undefined) return;
      const patch = rec(message.patch);
      const launch = acc.state.taskTools[taskId];
      if (patch?.is_backgrounded === true && launch !== undefined) {
        const tool = acc.state.tools[launch];
        const kind = tool === undefined ? undefined : launchKind(tool);
        if (kind !== undefined) register(acc, launch, kind, at, taskId);
      }
      const status = endStatus(patch?.status);
      if (status !== undefined) finishTask(acc, taskId, undefined, status);
      return;
    }
    case 'task_notification': {
      const status = endStatus(message.status);
      if (status !== undefined && (taskId !== undefined || toolUseId !== undefined)) {
        finishTask(acc, taskId, toolUseId, status);
      }
      return;
    }
    default:
      return;
  }
};

const finishTask = (
  acc: Acc,
  taskId: string | undefined,
  toolUseId: string | undefined,
  status: EndStatus,
): void => {
  const workId = workOfTask(acc.state, taskId, toolUseId);
  if (workId !== undefined) return end(acc, workId, status);
  if (taskId !== undefined && acc.state.earlyEnds[taskId] === undefined) {
    acc.state.earlyEnds[taskId] = status;
  }
};

/**
 * A task-notification cycle ended (no `subkind`: not a delivered prompt): Claude Code told the
 * model that some task finished, and a plain client is not told which. The work that could be it
 * is every registration whose end would not be identified; with a Monitor among them the cycle
 * may be one of its events, so it may be of none. Attested work ends by its own task id and is
 * never a candidate.
 */
const unidentifiedCompletion = (acc: Acc): void => {
  // A work that just ended by its identity may be what this cycle reports.
  let mayBeNone = acc.state.endedSinceCycle;
  acc.state.endedSinceCycle = false;
  const candidates: string[] = [];
  for (const id in acc.state.works) {
    const w = acc.state.works[id]!;
    if (w.ended || w.presumed || w.identified) continue;
    candidates.push(id);
    if (w.kind === 'monitor') mayBeNone = true;
  }
  if (candidates.length === 0) return;
  if (candidates.length === 1 && !mayBeNone) {
    const id = candidates[0]!;
    acc.state.works[id] = { ...acc.state.works[id]!, presumed: true };
  }
  acc.facts.push({
    type: 'background.ended',
    data: {
      status: 'unknown',
      candidates: candidates.slice(0, 100),
      ...(mayBeNone ? { mayBeNone } : {}),
    },
  });
};

const subagentEnd = (stopReason: unknown): EndStatus => {
  switch (stopReason) {
    case 'end_turn':
      return 'completed';
    case 'cancelled':
      return 'stopped';
    case 'refusal':
    case 'max_tokens':
    case 'max_turn_requests':
      return 'failed';
    default:
      return 'unknown';
  }
};

/**
 * `subagent_update` (subagents profile): each subagent is a child session, named by its
 * sessionId, running then idle. The parent has no tool call for the Agent tool, so the work is
 * registered by the child session id (the SDK's agent id, so raw task messages resolve to it too)
 * and ends when the child goes idle.
 */
const onSubagentUpdate = (acc: Acc, update: JsonRecord, at: string): void => {
  const child = asId(update.sessionId);
  if (child === undefined) return;
  const state = path(update, 'state', 'state');
  const known = acc.state.children[child];
  const work = known === undefined ? undefined : acc.state.works[known];
  if (state === 'running' && (work === undefined || work.ended)) {
    const label = text(update.title, 2_000) ?? text(update.description, 2_000) ?? 'Subagent';
    acc.state.children[child] = child;
    acc.state.works[child] = {
      kind: 'subagent',
      ended: false,
      identified: acc.state.subagentSessions,
    };
    acc.state.tasks[child] = child;
    // Unstamped child frames hang under the child session itself.
    acc.state.tools[child] = { workId: child, runInBackground: true };
    acc.facts.push(
      backgroundStarted(
        {
          kind: 'subagent',
          id: child,
          label,
          startedAt: at,
          chat: child,
          _meta: { claudeCode: { sessionId: child } },
        },
        acc.state.subagentSessions,
      ),
    );
    const early = acc.state.earlyEnds[child];
    if (early !== undefined) end(acc, child, early);
  } else if (state === 'idle' && known !== undefined) {
    end(acc, known, subagentEnd(path(update, 'state', 'stopReason')));
  }
};

/** A frame of a subagent's child session: its work, never the parent's foreground. */
const onChildFrame = (acc: Acc, update: JsonRecord, workId: string, at: string): void => {
  const frame = toolFrame(update);
  if (frame === undefined) return;
  const stamped = asId(claudeMeta(update)?.parentToolUseId);
  // The launch the child's frames name is the Agent call the parent never showed: link it.
  if (stamped !== undefined && acc.state.tools[stamped] === undefined)
    setTool(acc, stamped, { toolName: 'Agent', workId, runInBackground: true });
  onTool(acc, update, frame, at, stamped ?? workId);
};

/**
 * Terminal profile: a later `tool_call_update` with `_meta.terminal_exit` on a registered shell's
 * launch, after its card completed, is the shell's real end (0.101.0 keeps the display terminal
 * open until the task ends). An exit on or before the launch's completion is the launch's own.
 */
const onTerminalExit = (acc: Acc, update: JsonRecord, frame: ToolFrame, before?: ToolState) => {
  const tool = acc.state.tools[frame.toolCallId];
  const launched = tool?.workId === undefined ? undefined : acc.state.works[tool.workId];
  // A shell launch that completes with its display terminal still open will report its end.
  if (
    before?.completed !== true &&
    tool?.completed === true &&
    tool.terminal === true &&
    tool.exited !== true &&
    launched?.kind === 'shell' &&
    !launched.identified
  ) {
    acc.state.works[tool.workId!] = { ...launched, identified: true };
  }
  const exit = rec(path(update, '_meta', 'terminal_exit'));
  if (exit === undefined || before?.completed !== true || frame.status !== undefined) return;
  const workId = before.workId;
  if (workId === undefined || acc.state.works[workId]?.kind !== 'shell') return;
  const code = exit.exit_code;
  end(
    acc,
    workId,
    typeof exit.signal === 'string'
      ? 'stopped'
      : code === 0
        ? 'completed'
        : typeof code === 'number'
          ? 'failed'
          : 'unknown',
  );
};

/** A v2 background item: its id and what it is. */
const listItem = (
  state: ClaudeState,
  item: unknown,
): { id: string; work: (at: string) => BackgroundWork } | undefined => {
  const it = rec(item);
  switch (it?.type) {
    case 'terminal': {
      const id = asId(it.terminalId);
      if (id === undefined) return undefined;
      const tool = state.tools[id];
      const command = state.terminals[id]?.command ?? tool?.command ?? '';
      return {
        id,
        work: (at) => ({
          kind: 'shell',
          id,
          label: tool?.description ?? (command || 'Background shell'),
          startedAt: at,
          command,
          terminal: id,
        }),
      };
    }
    case 'subagent': {
      const id = asId(it.sessionId);
      if (id === undefined) return undefined;
      return {
        id,
        work: (at) => ({ kind: 'subagent', id, label: 'Subagent', startedAt: at, chat: id }),
      };
    }
    case 'tool_call': {
      const id = asId(it.toolCallId);
      if (id === undefined) return undefined;
      const tool = state.tools[id];
      const kind = tool === undefined ? undefined : launchKind(tool);
      return {
        id,
        work: (at) =>
          kind === 'shell'
            ? {
                kind,
                id,
                label: tool?.description ?? 'Background shell',
                startedAt: at,
                command: tool?.command ?? '',
              }
            : kind === 'subagent'
              ? { kind, id, label: tool?.description ?? 'Subagent', startedAt: at, chat: id }
              : {
                  kind: kind ?? 'tool',
                  id,
                  label: tool?.description ?? tool?.command ?? tool?.toolName ?? 'Background tool',
                  startedAt: at,
                  ...(tool?.command !== undefined ? { command: tool.command } : {}),
                },
      };
    }
    case '_claude/task': {
      const id = asId(it.taskId);
      if (id === undefined) return undefined;
      return {
        id,
        work: (at) => ({
          kind: 'task',
          id,
          label: text(it.description, 2_000) ?? 'Background task',
          startedAt: at,
        }),
      };
    }
    default:
      return undefined;
  }
};

/**
 * v2: the session's `background` list is the whole truth. Items it adds are registered by their
 * ids (attested: the list names their end); registered items it no longer holds ended.
 */
const onBackgroundList = (acc: Acc, list: unknown[], at: string): void => {
  const present = new Set<string>();
  for (const raw of list) {
    const item = listItem(acc.state, raw);
    if (item === undefined) continue;
    present.add(item.id);
    const known = acc.state.works[item.id];
    if (known !== undefined && !known.ended) continue;
    const work = item.work(at);
    acc.state.works[item.id] = {
      kind: work.kind as ClaudeWorkKind,
      ...(acc.state.tools[item.id] !== undefined ? { toolCallId: item.id } : {}),
      ended: false,
      identified: true,
    };
    acc.facts.push(
      backgroundStarted(work, true, acc.state.tools[item.id] !== undefined ? item.id : undefined),
    );
  }
  for (const id in acc.state.works) {
    const w = acc.state.works[id]!;
    if (w.ended || present.has(id)) continue;
    end(acc, id, acc.state.terminals[id]?.exited === true ? 'completed' : 'unknown');
  }
};

const step = (state: ClaudeState, { message, at }: StepContext): Step<ClaudeState> => {
  const acc: Acc = { state, facts: [] };
  if (message.method === '_claude/sdkMessage') {
    const sdk = rec(rec(message.params)?.message);
    if (sdk !== undefined) onSdkMessage(acc, sdk, at);
    return acc;
  }
  const update = sessionUpdate(message);
  if (update === undefined) return acc;
  const sessionId = asId(rec(message.params)?.sessionId);
  const childWork = sessionId === undefined ? undefined : state.children[sessionId];
  if (childWork !== undefined) {
    onChildFrame(acc, update, childWork, at);
    return acc;
  }
  if (update.sessionUpdate === 'subagent_update') {
    if (!state.v2) onSubagentUpdate(acc, update, at);
    else {
      // v2 lists the subagent itself; its session's frames are its work.
      const child = asId(update.sessionId);
      if (child !== undefined) acc.state.children[child] = child;
    }
    return acc;
  }
  if (state.v2 && update.sessionUpdate === 'terminal_update') {
    const id = asId(update.terminalId);
    if (id !== undefined) {
      const t = (acc.state.terminals[id] ??= {});
      const command = text(update.command, 20_000);
      if (command !== undefined) t.command = command;
      if (update.exitStatus !== undefined) t.exited = true;
    }
    return acc;
  }
  if (state.v2 && update.sessionUpdate === 'state_update') {
    if (Array.isArray(update.background)) onBackgroundList(acc, update.background, at);
    return acc;
  }

  const parent = asId(claudeMeta(update)?.parentToolUseId);
  const output = outputFact(update);
  if (output !== undefined) {
    // A background subagent talking is not the foreground generating. An unknown parent could
    // be either; busy is the safe reading.
    if (parent === undefined || ownershipUnder(state, parent) !== 'background')
      acc.facts.push(output);
    return acc;
  }
  if (update.sessionUpdate === 'usage_update') {
    // A subagent's own usage is its context, not the session's.
    const usage = parent === undefined ? usageFact(update) : undefined;
    if (usage !== undefined) acc.facts.push(usage);
    const origin = text(str(path(update, '_meta', '_claude/origin', 'kind')), 100);
    if (origin !== undefined && parent === undefined) {
      acc.facts.push({ type: 'foreground.idle', data: { origin } });
      if (
        origin === 'task-notification' &&
        path(update, '_meta', '_claude/origin', 'subkind') === undefined
      )
        unidentifiedCompletion(acc);
    }
    return acc;
  }
  const frame = toolFrame(update);
  if (frame !== undefined) {
    const before = acc.state.tools[frame.toolCallId];
    onTool(acc, update, frame, at);
    onTerminalExit(acc, update, frame, before);
  }
  return acc;
};

export const claudeDialect: Dialect<ClaudeState> = {
  name: 'claude',
  capabilities: claudeCapabilities,
  initial: (agent, setup) => ({
    lineage: versionAtLeast(agent.version, LINEAGE_SINCE),
    attested: rawTaskEventsEnabled(agent, setup),
    tools: {},
    works: {},
    tasks: {},
    taskTools: {},
    earlyEnds: {},
    subagentSessions: subagentSessionsEnabled(agent, setup),
    children: {},
    endedSinceCycle: false,
    v2: setup?.protocolVersion === 2,
    terminals: {},
  }),
  step,
};
