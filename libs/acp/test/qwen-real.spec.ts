import { liveRegistrations, sessionActivity, sessionView } from '@baton/activity';
import { clientAdvertisement, type FactBody } from '../src';
import {
  offlineQwenEnv,
  qwenCommand,
  QWEN_CODE_VERSION,
  writeOfflineQwenSettings,
} from './support/qwen-code';
import {
  agentSent,
  expectNegotiated,
  expectSettled,
  turnEnded,
  waitForFile,
} from './support/real-session';
import {
  chatServer,
  commonScripts,
  COMMON_PROMPTS,
  playFirstTurn,
  say,
} from './support/chat-agent-scenarios';
import { OfflineSession, type OfflineRun } from './support/offline-session';
import type { ScriptedItem, ScriptedTurn } from './support/scripted-script';

/**
 * The real Qwen Code CLI in its ACP mode (`qwen --acp`), fully offline: the model is a scripted
 * OpenAI Chat Completions API on 127.0.0.1 (support/scripted-chat-server.ts), HOME and its
 * settings are private, and the tools really run. In the session mode `default` every shell
 * command and file write is asked of the client (`session/request_permission`, answered
 * `allow-once` by the host's policy). BATON_RECORD_QWEN_FIXTURES=1 rewrites
 * fixtures/qwen-real-*.jsonl from these runs.
 */

jest.setTimeout(120_000);

const shell = (command: string, background = false): ScriptedItem => ({
  type: 'function_call',
  name: 'run_shell_command',
  arguments: { command, is_background: background, description: 'scripted command' },
});

const SCRIPTS = {
  ...commonScripts({
    shellTool: 'run_shell_command',
    shell,
    writeTool: 'write_file',
    write: (file_path, content) => ({
      type: 'function_call',
      name: 'write_file',
      arguments: { file_path, content },
    }),
  }),
  background: [
    {
      name: 'start background command',
      when: { last: 'RUN-BACKGROUND' },
      reply: [shell(`${waitForFile('release-bg')}; echo late > bg-done`, true)],
    },
    {
      name: 'left running',
      when: { afterTool: 'run_shell_command' },
      reply: say('It keeps running in the background.'),
    },
    // The CLI tells the model when a background command ends, in a user message of its own.
    {
      name: 'notification',
      when: { last: '<task-notification>' },
      reply: say('Noted: it finished.'),
    },
    { name: 'second prompt', when: { last: 'SECOND' }, reply: say('Second answer.') },
  ],
} satisfies Record<string, ScriptedTurn[]>;
type Scenario = keyof typeof SCRIPTS;

/**
 * `default` asks the client before every shell command and file write; `yolo` asks nothing, so
 * the background and cancel recordings replay under any permission policy.
 */
const MODES: Record<Scenario, 'default' | 'yolo'> = {
  plain: 'yolo',
  exec: 'default',
  edit: 'default',
  background: 'yolo',
  cancel: 'yolo',
};

export const qwenFixtureName = (scenario: Scenario): string => `qwen-real-${scenario}`;

/** The scenario's run: Qwen Code with its private settings, against the scripted Chat Completions API. */
const qwenRun = (scenario: Scenario): OfflineRun => ({
  agent: 'qwen',
  scenario,
  fixture: qwenFixtureName(scenario),
  record: process.env.BATON_RECORD_QWEN_FIXTURES === '1',
  startServer: chatServer(SCRIPTS[scenario]),
  configure: (home, server) => {
    writeOfflineQwenSettings(home);
    return {
      ...qwenCommand(server.url),
      env: offlineQwenEnv(home),
      advertise: clientAdvertisement({}),
      mode: MODES[scenario],
    };
  },
});

type F = FactBody;
const backgroundEnded = (f: F) =>
  f.type === 'background.ended' && f.data.status === 'completed' && f.data.workId !== undefined;
const permissionAsked = (s: OfflineSession) => agentSent(s, 'session/request_permission');

describe(`qwen-code ${QWEN_CODE_VERSION} --acp, offline against a scripted Chat Completions API`, () => {
  let s: OfflineSession | undefined;

  afterEach(async () => {
    await s?.dispose();
    s = undefined;
  });

  it.each(Object.keys(SCRIPTS) as Scenario[])('%s', async (scenario) => {
    s = await OfflineSession.start(qwenRun(scenario));
    const session = s;
    expectNegotiated(s, { name: 'qwen-code', version: QWEN_CODE_VERSION }, 'qwen');
    const prompt = scenario === 'background' ? 'RUN-BACKGROUND' : COMMON_PROMPTS[scenario];
    await playFirstTurn(s, scenario, prompt);
    if (scenario === 'background') {
      // The turn ended with the command running: a shell by the CLI's task id, shown running.
      expect(sessionActivity(s.session())).toMatchObject({
        state: 'waiting_for_input',
        foregroundActivity: 'background',
      });
      expect(liveRegistrations(s.session()).map((r) => [r.work.kind, r.work.id])).toEqual([
        ['shell', expect.stringMatching(/^bg_/)],
      ]);
      s.release('release-bg');
      await s.until('the command to end', () => session.has(backgroundEnded));
      expect(liveRegistrations(s.session())).toEqual([]);
      expect(sessionView(s.session()).backgroundWork).toEqual([]);
      // The CLI then tells the model in a turn of its own (`_qwencode/start_turn` … `end_turn`,
      // requests Baton answers "method not found"); the next prompt goes after it.
      await s.until('the notification turn to end', () => agentSent(session, '_qwencode/end_turn'));
      s.submit('SECOND');
      await s.until('the second turn to end', () => session.has(turnEnded(2)));
    }
    await s.finish();

    expectSettled(s);
    expect(permissionAsked(s)).toBe(MODES[scenario] === 'default');
    if (scenario === 'background')
      expect(s.server.used).toEqual([
        'start background command',
        'left running',
        'notification',
        'second prompt',
      ]);
    if (scenario !== 'background')
      expect(s.facts.filter((f) => f.type.startsWith('background.'))).toEqual([]);
  });
});
