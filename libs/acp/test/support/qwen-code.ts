import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The real Qwen Code CLI (`@qwen-code/qwen-code`, a pinned devDependency: plain JavaScript, so
 * every platform has it) in its ACP mode, and the private HOME and settings that run it offline
 * against a local OpenAI Chat Completions server.
 */

export const QWEN_CODE_VERSION = '0.24.4';

/** Any name: an OpenAI-compatible provider takes the model it is given. */
export const QWEN_OFFLINE_MODEL = 'scripted-model';

/** `node <cli> --acp …`: the CLI's entry, run by this Node, speaking to `modelUrl` only. */
export const qwenCommand = (modelUrl: string): { command: string; args: string[] } => ({
  command: process.execPath,
  args: [
    join(require.resolve('@qwen-code/qwen-code/package.json'), '..', 'cli-entry.js'),
    '--acp',
    '--auth-type',
    'openai',
    '--openai-base-url',
    modelUrl,
    '--model',
    QWEN_OFFLINE_MODEL,
  ],
});

/**
 * Writes `$HOME/.qwen/settings.json`: no update check, no usage statistics or telemetry, and no
 * side calls: by default each turn ends with model calls of a memory-extraction subagent and of a
 * follow-up suggestion.
 */
export const writeOfflineQwenSettings = (home: string): void => {
  mkdirSync(join(home, '.qwen'), { recursive: true });
  writeFileSync(
    join(home, '.qwen', 'settings.json'),
    JSON.stringify(
      {
        general: { enableAutoUpdate: false, disableAutoUpdate: true, disableUpdateNag: true },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        memory: { enableManagedAutoMemory: false, enableManagedAutoDream: false },
        ui: { enableFollowupSuggestions: false },
      },
      null,
      2,
    ),
  );
};

/**
 * The agent's whole environment: nothing inherited but PATH, so no credential or proxy of the
 * machine running the tests reaches the CLI. HOME is private to the run.
 */
export const offlineQwenEnv = (home: string): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: home,
  OPENAI_API_KEY: 'sk-offline-test',
  QWEN_USAGE_STATISTICS_ENABLED: 'false',
});
