import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * Where the installed claude-agent-acp adapter and the Claude Code CLI it drives live, and the
 * environment that runs them offline against a local model server.
 */

export interface ClaudeInstall {
  /** The adapter's bin entry, run with `node`. */
  adapter: string;
  /** The native Claude Code CLI the adapter spawns. */
  cli: string;
}

/** The install, or why it is not usable here. */
export const findClaudeInstall = (): ClaudeInstall | { missing: string } => {
  let pkgPath: string;
  try {
    pkgPath = require.resolve('@agentclientprotocol/claude-agent-acp/package.json');
  } catch {
    return { missing: '@agentclientprotocol/claude-agent-acp is not installed' };
  }
  const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { bin?: Record<string, string> };
  const bin = pkg.bin?.['claude-agent-acp'];
  if (bin === undefined) return { missing: 'claude-agent-acp declares no bin entry' };
  const adapter = join(dirname(pkgPath), bin);
  const explicit = process.env.CLAUDE_CODE_EXECUTABLE;
  if (explicit !== undefined && explicit !== '') {
    return existsSync(explicit)
      ? { adapter, cli: explicit }
      : { missing: `CLAUDE_CODE_EXECUTABLE=${explicit} does not exist` };
  }
  // The CLI is a platform-specific optional dependency of the SDK; resolve it as the adapter does.
  const req = createRequire(pkgPath);
  const platform = `${process.platform}-${process.arch}`;
  const candidates = [`${platform}`, `${platform}-musl`].map(
    (p) =>
      `@anthropic-ai/claude-agent-sdk-${p}/claude${process.platform === 'win32' ? '.exe' : ''}`,
  );
  for (const candidate of candidates) {
    try {
      return { adapter, cli: req.resolve(candidate) };
    } catch {
      // try the next variant
    }
  }
  return {
    missing: `the Claude Code CLI binary is not installed (none of ${candidates.join(', ')}; npm install without --omit=optional brings it)`,
  };
};

/**
 * The agent's whole environment: nothing inherited but PATH, so no credential, proxy or
 * `IS_SANDBOX` of the machine running the tests reaches the CLI. (With `IS_SANDBOX` set, the
 * adapter starts the CLI with --dangerously-skip-permissions, which the CLI refuses as root, and
 * `session/new` fails.) HOME and the CLI's config and temp folders are private to the run; the
 * model is the local server; any API key does.
 */
export const offlineClaudeEnv = (home: string, modelUrl: string): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: home,
  CLAUDE_CONFIG_DIR: join(home, '.claude'),
  CLAUDE_CODE_TMPDIR: join(home, 'tmp'),
  ANTHROPIC_BASE_URL: modelUrl,
  ANTHROPIC_API_KEY: 'sk-ant-offline-test',
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_TELEMETRY: '1',
  DISABLE_AUTOUPDATER: '1',
});
