#!/usr/bin/env node
// The `baton` command, from any directory: runs the built CLI (dist/, `npm run build`; built here
// first when a checkout has not been built yet), keeping the caller's working directory.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = `${root}dist/apps/cli/src/main.js`;
if (!existsSync(cli)) {
  const built = spawnSync(process.execPath, [`${root}scripts/build.mjs`], { stdio: 'inherit' });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
const child = spawn(process.execPath, [cli, ...process.argv.slice(2)], {
  stdio: 'inherit',
  // The checkout's data folder (where `npm start` keeps the token), whatever the directory.
  env: { BATON_DATA_DIR: `${root}.baton`, ...process.env },
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
