#!/usr/bin/env node
// The `baton` command, from any directory: runs the CLI's TypeScript sources through tsx with
// this checkout's tsconfig (its path aliases), keeping the caller's working directory.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const child = spawn(
  process.execPath,
  ['--import', import.meta.resolve('tsx'), `${root}apps/cli/src/main.ts`, ...process.argv.slice(2)],
  {
    stdio: 'inherit',
    env: {
      // The checkout's data folder (where `npm start` keeps the token), whatever the directory.
      BATON_DATA_DIR: `${root}.baton`,
      ...process.env,
      TSX_TSCONFIG_PATH: `${root}tsconfig.json`,
    },
  },
);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
