import type { FactBody } from '../facts';
import { asId, path, rec, str, text } from '../json';
import { genericDialect, baseCapabilities, type GenericState } from './generic';
import { backgroundStarted, endStatusOf, sessionUpdate } from './common';
import type { AgentIdentity, Dialect, Step } from './types';

/**
 * Qwen Code's ACP mode (`qwen --acp`, answering `initialize` as `qwen-code`). Its frames are
 * generic ACP plus one thing: a shell command started with `is_background: true` is a background
 * task the CLI reports from start to end.
 *
 * - Its `run_shell_command` card completes at once with `rawOutput` "Background shell <id> started
 *   (pid N)." — the task's id. It is registered then as a shell by that id, unattested (the id is
 *   read from the card's text, and Qwen claims no handoff).
 * - Its end comes as an agent message whose `_meta.backgroundTask` is `{taskId, status, kind}`
 *   (`completed`, `failed` or `cancelled`), once when the task ends and once more when the CLI
 *   starts its own turn to tell the model (`_meta.source` `background_task_completed`, then
 *   `background_notification`): the first ends the registration by its id, an identified end.
 *
 * Everything else (messages, tools, usage) reads as the generic dialect reads it.
 */

export interface QwenState extends GenericState {
  /** Background task id -> whether its end was reported. */
  shells: Record<string, { ended: boolean }>;
  /** Tool call id -> the shell command it asked to run (known from its permission request). */
  commands: Record<string, string>;
}

export const isQwenAgent = (agent: AgentIdentity): boolean => agent.name === 'qwen-code';

const STARTED = /^Background shell (\S+) started/;

const endStatus = endStatusOf({ completed: 'completed', failed: 'failed', cancelled: 'stopped' });

export const qwenDialect: Dialect<QwenState> = {
  name: 'qwen',
  capabilities: (agent) => baseCapabilities('qwen', agent),
  initial: () => ({ tools: {}, shells: {}, commands: {} }),
  step(state, ctx): Step<QwenState> {
    const facts: FactBody[] = genericDialect.step(state, ctx).facts;
    // The command is in the card's `rawInput` only once the call is prepared, and in the
    // permission request's tool call: whichever carries it.
    const call =
      ctx.message.method === 'session/request_permission'
        ? rec(path(ctx.message, 'params', 'toolCall'))
        : sessionUpdate(ctx.message);
    const callId = asId(call?.toolCallId);
    const command = text(path(call, 'rawInput', 'command'), 20_000);
    if (callId !== undefined && command !== undefined) state.commands[callId] = command;
    const update = sessionUpdate(ctx.message);
    if (update === undefined) return { state, facts };

    const started = STARTED.exec(str(update.rawOutput) ?? '');
    const id = asId(started?.[1]);
    const card = asId(update.toolCallId);
    if (
      update.sessionUpdate === 'tool_call_update' &&
      id !== undefined &&
      state.shells[id] === undefined
    ) {
      state.shells[id] = { ended: false };
      const asked = card !== undefined ? state.commands[card] : undefined;
      facts.push(
        backgroundStarted(
          {
            kind: 'shell',
            id,
            label: asked ?? 'Background shell',
            startedAt: ctx.at,
            command: asked ?? '',
            _meta: { qwen: { taskId: id, ...(card !== undefined ? { toolCallId: card } : {}) } },
          },
          false,
          card,
        ),
      );
    }

    const task = rec(path(update, '_meta', 'backgroundTask'));
    const taskId = asId(task?.taskId);
    const status = endStatus(task?.status);
    const shell = taskId === undefined ? undefined : state.shells[taskId];
    if (taskId !== undefined && status !== undefined && shell !== undefined && !shell.ended) {
      shell.ended = true;
      facts.push({
        type: 'background.ended',
        data: { workId: taskId, kind: text(task?.kind, 100) ?? 'shell', status },
      });
    }
    return { state, facts };
  },
};
