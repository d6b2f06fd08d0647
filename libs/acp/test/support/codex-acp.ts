import { accessSync, constants, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Where the real codex-acp adapter (`@zed-industries/codex-acp`, a native binary per platform in
 * `@zed-industries/codex-acp-<platform>-<arch>`) is, and the private HOME and config that run it
 * offline against a local Responses API server.
 *
 * It is not a dependency of the repo. To record, install it outside the repo and name the binary:
 *
 *   mkdir /tmp/codex && cd /tmp/codex && npm init -y && npm i @zed-industries/codex-acp@0.16.0
 *   chmod +x node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp   # npm leaves it 0644
 *   CODEX_ACP_EXECUTABLE=/tmp/codex/node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp \
 *     npx jest libs/acp/test/codex-real.spec.ts
 *
 * (If the platform package is ever a devDependency, it is found without the variable.)
 */

export const CODEX_ACP_VERSION = '0.16.0';

export interface CodexInstall {
  /** The native codex-acp binary, run directly (the npm wrapper only spawns it). */
  binary: string;
}

const platformPackage = `@zed-industries/codex-acp-${process.platform}-${process.arch}`;
const binaryName = process.platform === 'win32' ? 'codex-acp.exe' : 'codex-acp';

const usable = (binary: string, from: string): CodexInstall | { missing: string } => {
  if (!existsSync(binary)) return { missing: `${from}: ${binary} does not exist` };
  try {
    accessSync(binary, constants.X_OK);
  } catch {
    return { missing: `${from}: ${binary} is not executable (chmod +x it: npm leaves it 0644)` };
  }
  return { binary };
};

/** The install, or why it is not usable here. */
export const findCodexInstall = (): CodexInstall | { missing: string } => {
  const explicit = process.env.CODEX_ACP_EXECUTABLE;
  if (explicit !== undefined && explicit !== '') return usable(explicit, 'CODEX_ACP_EXECUTABLE');
  try {
    const pkg = require.resolve(`${platformPackage}/package.json`);
    return usable(join(pkg, '..', 'bin', binaryName), platformPackage);
  } catch {
    return {
      missing: `codex-acp ${CODEX_ACP_VERSION} is not installed: set CODEX_ACP_EXECUTABLE to its native binary (npm i @zed-industries/codex-acp@${CODEX_ACP_VERSION} outside the repo; see libs/acp/test/support/codex-acp.ts)`,
    };
  }
};

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
