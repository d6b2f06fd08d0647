import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findPlatformBinary } from './real-session';

/**
 * Where the real codex-acp adapter is, and the private HOME and config that run it offline against
 * a local Responses API server. `@zed-industries/codex-acp` is a pinned devDependency; its native
 * binary comes in the platform package `@zed-industries/codex-acp-<platform>-<arch>` (an optional
 * dependency, so `npm ci` installs the one for this machine). `CODEX_ACP_EXECUTABLE` overrides it.
 */

export const CODEX_ACP_VERSION = '0.16.0';

export interface CodexInstall {
  /** The native codex-acp binary, run directly (the npm wrapper only spawns it). */
  binary: string;
}

/** The install, or why this machine has none (only a platform the adapter ships no binary for). */
export const findCodexInstall = (): CodexInstall | { missing: string } =>
  findPlatformBinary({
    name: 'codex-acp',
    version: CODEX_ACP_VERSION,
    platformPackage: `@zed-industries/codex-acp-${process.platform}-${process.arch}`,
    envVar: 'CODEX_ACP_EXECUTABLE',
  });

/**
 * A bundled model slug, so Codex finds its metadata (an unknown one makes the adapter say
 * "Model metadata … not found" as an agent message at every session start).
 */
export const OFFLINE_MODEL = 'gpt-5.4';

/**
 * Writes `$CODEX_HOME/config.toml`: one model provider, the local server, over the Responses
 * wire API, with its key read from `BATON_OFFLINE_MODEL_KEY`. A provider other than `openai`
 * needs no login, so `session/new` does not ask for authentication. Nothing else is configured:
 * the sandbox comes from the session mode the host sets (`full-access`: the machine has no
 * bubblewrap, which Codex's Linux sandbox needs).
 */
export const writeOfflineCodexConfig = (codexHome: string, modelUrl: string): void => {
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(
    join(codexHome, 'config.toml'),
    [
      `model = "${OFFLINE_MODEL}"`,
      `model_provider = "scripted"`,
      '',
      '[model_providers.scripted]',
      'name = "Scripted Responses API"',
      `base_url = "${modelUrl}"`,
      'wire_api = "responses"',
      'env_key = "BATON_OFFLINE_MODEL_KEY"',
      'request_max_retries = 0',
      'stream_max_retries = 0',
      '',
    ].join('\n'),
  );
};

/**
 * The agent's whole environment: nothing inherited but PATH, so no credential or proxy of the
 * machine running the tests reaches Codex. HOME and CODEX_HOME are private to the run.
 */
export const offlineCodexEnv = (home: string): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: home,
  CODEX_HOME: join(home, '.codex'),
  BATON_OFFLINE_MODEL_KEY: 'sk-offline-test',
});
