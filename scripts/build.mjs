#!/usr/bin/env node
// `npm run build`: compiles every app and lib into dist/ with SWC and the .swcrc the tests run
// under (the same decorator metadata, the same CommonJS), copies what the code reads at run time
// (Lua scripts, bundled recordings), and bundles the live page once (dist/page). Apps then run as
// `node dist/apps/<app>/src/main.js`; nothing of the toolchain is needed at run time.
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transformFile } from '@swc/core';
import { buildPage } from '../apps/web/scripts/build-page.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const started = performance.now();

/** The TypeScript of every app and lib and the benchmarks; tests and the page's browser code left out. */
function sources() {
  const out = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts') && !e.name.endsWith('.d.ts'))
        out.push(path);
    }
  };
  for (const group of ['apps', 'libs'])
    for (const project of readdirSync(join(root, group))) {
      const src = join(root, group, project, 'src');
      try {
        walk(src);
      } catch (err) {
        if (err.code !== 'ENOENT') throw err;
      }
    }
  // The benchmarks measure what runs in production: the same compiled code. (An image's build
  // has no bench/.)
  if (existsSync(join(root, 'bench'))) walk(join(root, 'bench'));
  // The page runs in the browser: it is bundled below, not compiled for node.
  return out.filter((f) => !relative(root, f).startsWith(join('apps', 'web')));
}

/** Files read from disk at run time, by path relative to the code that reads them. */
const ASSETS = [join('libs', 'store', 'src', 'lua'), join('libs', 'acp', 'fixtures')];

rmSync(dist, { recursive: true, force: true });
const files = sources();
await Promise.all(
  files.map(async (file) => {
    const rel = relative(root, file);
    const out = join(dist, rel.replace(/\.ts$/, '.js'));
    const { code, map } = await transformFile(file, {
      configFile: join(root, '.swcrc'),
      sourceMaps: true,
      outputPath: out,
    });
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${code}\n//# sourceMappingURL=${out.slice(dirname(out).length + 1)}.map\n`);
    if (map) writeFileSync(`${out}.map`, map);
  }),
);
for (const asset of ASSETS) cpSync(join(root, asset), join(dist, asset), { recursive: true });
const page = await buildPage(join(dist, 'page'));
console.log(
  `built ${files.length} files and the page (${page.bytes} B, ${page.gzipBytes} B gzipped) into dist/ in ${Math.round(performance.now() - started)} ms`,
);
