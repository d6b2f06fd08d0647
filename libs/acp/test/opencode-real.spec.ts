import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { clientAdvertisement } from '../src';
import {
  findOpencodeInstall,
  offlineOpencodeEnv,
  OPENCODE_VERSION,
  writeOfflineOpencodeConfig,
} from './support/opencode';
import {
  agentSent,
  describeWhereInstalled,
  expectNegotiated,
  expectSettled,
} from './support/real-session';
import {
  chatServer,
  commonScripts,
  COMMON_PROMPTS,
  playFirstTurn,
  say,
} from './support/chat-agent-scenarios';
import { OfflineSession, type OfflineRun } from './support/offline-session';
import {
  CHILD_TASK,
  subagentTurns,
  type ScriptedItem,
  type ScriptedTurn,
} from './support/scripted-script';

/**
 * The real OpenCode in its ACP mode (`opencode acp`), fully offline: the model is a scripted
 * OpenAI Chat Completions API on 127.0.0.1 (support/scripted-chat-server.ts) configured as an
 * OpenAI-compatible provider, HOME and its config are private, and the tools really run.
 * `exec` and `edit` run with `permission` `ask` for shell commands and edits
 * (`session/request_permission`, answered `allow-once` by the host's policy); the others ask
 * nothing. Skipped, with the reason, only on a platform OpenCode ships no binary for.
 * BATON_RECORD_OPENCODE_FIXTURES=1 rewrites fixtures/opencode-real-*.jsonl from these runs.
 */

const install = findOpencodeInstall();

jest.setTimeout(120_000);

const bash = (command: string): ScriptedItem => ({
  type: 'function_call',
  name: 'bash',
  arguments: { command, description: 'scripted command' },
});
// OpenCode names each session with a model call of its own.
const TITLE: ScriptedTurn = {
  name: 'title',
  when: { system: 'title generator' },
  reply: say('Scripted session'),
  repeat: true,
};

const SCRIPTS = {
  ...commonScripts(
    {
      shellTool: 'bash',
      shell: bash,
      writeTool: 'write',
      write: (filePath, content) => ({
        type: 'function_call',
        name: 'write',
        arguments: { filePath, content },
      }),
    },
    [TITLE],
  ),
  subagent: [
    TITLE,
    ...subagentTurns(bash, 'bash', {
      type: 'function_call',
      name: 'task',
      arguments: { description: 'scripted child', prompt: CHILD_TASK, subagent_type: 'general' },
    }),
    { name: 'child finished', when: { afterTool: 'task' }, reply: say('The child finished.') },
  ],
} satisfies Record<string, ScriptedTurn[]>;
type Scenario = keyof typeof SCRIPTS;

/** Scenarios whose shell commands and edits are asked of the client. */
const ASKS: Record<Scenario, boolean> = {
  plain: false,
  exec: true,
  edit: true,
  subagent: false,
  cancel: false,
};

export const opencodeFixtureName = (scenario: Scenario): string => `opencode-real-${scenario}`;

/** The scenario's run: OpenCode with its private config, against the scripted Chat Completions API. */
const opencodeRun = (scenario: Scenario, binary: string): OfflineRun => ({
  agent: 'opencode',
  scenario,
  fixture: opencodeFixtureName(scenario),
  record: process.env.BATON_RECORD_OPENCODE_FIXTURES === '1',
  startServer: chatServer(SCRIPTS[scenario]),
  configure: (home, server) => {
    writeOfflineOpencodeConfig(home, server.url, ASKS[scenario]);
    return {
      command: binary,
      args: ['acp'],
      env: offlineOpencodeEnv(home),
      advertise: clientAdvertisement({}),
    };
  },
});

const describeReal = describeWhereInstalled(install, 'opencode-real.spec');

describeReal(
  `opencode ${OPENCODE_VERSION} acp, offline against a scripted Chat Completions API`,
  () => {
    const binary = (install as { binary: string }).binary;
    let s: OfflineSession | undefined;

    afterEach(async () => {
      await s?.dispose();
      s = undefined;
    });

    it.each(Object.keys(SCRIPTS) as Scenario[])('%s', async (scenario) => {
      s = await OfflineSession.start(opencodeRun(scenario, binary));
      const session = s;
      expectNegotiated(s, { name: 'OpenCode', version: OPENCODE_VERSION }, 'generic');
      const prompt = scenario === 'subagent' ? 'RUN-AGENT' : COMMON_PROMPTS[scenario];
      await playFirstTurn(s, scenario, prompt, async () => {
        if (scenario !== 'subagent') return;
        await session.until('the child to run its command', () =>
          session.server.used.includes('child: command'),
        );
        session.release('release-agent');
      });
      await s.finish();

      expectSettled(s);
      expect(agentSent(s, 'session/request_permission')).toBe(ASKS[scenario]);
      expect(s.facts.filter((f) => f.type.startsWith('background.'))).toEqual([]);
      if (scenario === 'edit') expect(existsSync(join(s.work, 'notes.txt'))).toBe(true);
    });
  },
);
