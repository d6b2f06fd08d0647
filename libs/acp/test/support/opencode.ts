import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findPlatformBinary } from './real-session';

/**
 * The real OpenCode (`opencode-ai`, a pinned devDependency whose native binary comes in the
 * platform package `opencode-<platform>-<arch>`, an optional dependency `npm ci` installs for this
 * machine) in its ACP mode (`opencode acp`), and the private HOME and config that run it offline
 * against a local OpenAI Chat Completions server. `OPENCODE_EXECUTABLE` overrides the binary.
 */

export const OPENCODE_VERSION = '1.18.33';

/** The install, or why this machine has none (only a platform OpenCode ships no binary for). */
export const findOpencodeInstall = (): { binary: string } | { missing: string } =>
  findPlatformBinary({
    name: 'opencode',
    version: OPENCODE_VERSION,
    platformPackage: `opencode-${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`,
    envVar: 'OPENCODE_EXECUTABLE',
  });

export const OPENCODE_MODEL = 'scripted/scripted-model';

/**
 * Writes `$HOME/.config/opencode/opencode.json`: one provider through the OpenAI-compatible AI SDK
 * package bundled in the binary, at the local server, as the model for every call (titles
 * included); no update check, no sharing. `permission` asks the client before every shell command
 * and edit when `ask` is set.
 */
export const writeOfflineOpencodeConfig = (home: string, modelUrl: string, ask: boolean): void => {
  const dir = join(home, '.config', 'opencode');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'opencode.json'),
    JSON.stringify(
      {
        $schema: 'https://opencode.ai/config.json',
        autoupdate: false,
        share: 'disabled',
        model: OPENCODE_MODEL,
        small_model: OPENCODE_MODEL,
        ...(ask ? { permission: { bash: 'ask', edit: 'ask' } } : {}),
        provider: {
          scripted: {
            npm: '@ai-sdk/openai-compatible',
            name: 'Scripted Chat Completions',
            options: { baseURL: modelUrl, apiKey: 'sk-offline-test' },
            models: { 'scripted-model': { name: 'Scripted model' } },
          },
        },
      },
      null,
      2,
    ),
  );
};

/**
 * The agent's whole environment: nothing inherited but PATH, so no credential or proxy of the
 * machine running the tests reaches OpenCode. HOME is private; the models.dev catalogue is not
 * fetched (OpenCode would otherwise try to download it at start).
 */
export const offlineOpencodeEnv = (home: string): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: home,
  XDG_CONFIG_HOME: join(home, '.config'),
  XDG_DATA_HOME: join(home, '.local', 'share'),
  XDG_CACHE_HOME: join(home, '.cache'),
  XDG_STATE_HOME: join(home, '.local', 'state'),
  OPENCODE_DISABLE_AUTOUPDATE: '1',
  OPENCODE_DISABLE_MODELS_FETCH: '1',
  OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
});
