import type { OfflineRun, OfflineSession } from './offline-session';
import { cancelRunningCommand, runHeldCommand, turnEnded, waitForFile } from './real-session';
import { startScriptedChatServer } from './scripted-chat-server';
import { say, scriptInWorkFolder, type ScriptedItem, type ScriptedTurn } from './scripted-script';

/**
 * The scenarios every agent on the scripted Chat Completions API (OpenCode, Qwen Code) plays the
 * same way, in its own tools' names: an answer, a command held until released, a file written, a
 * command cancelled while it runs. A spec adds the scenarios only its agent has.
 */

/** An OfflineRun's model server: the scripted Chat Completions API playing `script`. */
export const chatServer =
  (script: ScriptedTurn[]): OfflineRun['startServer'] =>
  (options, work) =>
    startScriptedChatServer({ script: scriptInWorkFolder(script, work), ...options });

export { say } from './scripted-script';

/** How the agent's model calls its shell and file-writing tools. */
export interface ChatAgentTools {
  shellTool: string;
  shell: (command: string) => ScriptedItem;
  writeTool: string;
  /** Writes `content` to `path` (`WORK/…`: the work folder, see scriptInWorkFolder). */
  write: (path: string, content: string) => ScriptedItem;
}

export const commonScripts = (tools: ChatAgentTools, before: ScriptedTurn[] = []) => ({
  plain: [
    ...before,
    { name: 'answer', when: { last: 'SAY-HELLO' }, reply: say('Hello from the script.') },
  ],
  exec: [
    ...before,
    {
      name: 'run command',
      when: { last: 'RUN-EXEC' },
      reply: [tools.shell(`${waitForFile('release-exec')}; echo hello`)],
    },
    { name: 'command done', when: { afterTool: tools.shellTool }, reply: say('It printed hello.') },
  ],
  edit: [
    ...before,
    {
      name: 'write file',
      when: { last: 'RUN-EDIT' },
      reply: [tools.write('WORK/notes.txt', 'written by the script\n')],
    },
    { name: 'written', when: { afterTool: tools.writeTool }, reply: say('The file is written.') },
  ],
  cancel: [
    ...before,
    {
      name: 'run forever',
      when: { last: 'RUN-CANCEL' },
      reply: [tools.shell(`touch started; ${waitForFile('never')}`)],
    },
  ],
});
export type CommonScenario = keyof ReturnType<typeof commonScripts>;

export const COMMON_PROMPTS: Record<CommonScenario, string> = {
  plain: 'SAY-HELLO',
  exec: 'RUN-EXEC',
  edit: 'RUN-EDIT',
  cancel: 'RUN-CANCEL',
};

/**
 * The scenario's first turn: its prompt submitted, the held command released (`exec`), what the
 * spec's own scenario does `meanwhile`, or the running command cancelled (`cancel`), then its end,
 * `cancelled` for a cancel.
 */
export const playFirstTurn = async (
  s: OfflineSession,
  scenario: string,
  prompt: string,
  meanwhile?: () => Promise<void>,
): Promise<void> => {
  s.submit(prompt);
  if (scenario === 'exec') await runHeldCommand(s);
  await meanwhile?.();
  if (scenario === 'cancel') await cancelRunningCommand(s);
  await s.until('the turn to end', () => s.has(turnEnded(1)));
  if (scenario === 'cancel')
    expect(s.facts.find(turnEnded(1))).toMatchObject({ data: { stopReason: 'cancelled' } });
};
