/**
 * Bundles the live page (apps/web/src/browser) with esbuild into a folder the gateway serves:
 * `index.html`, which names its assets by content hash, and `assets/app-<hash>.{js,css}`. Run by
 * `npm run build` (scripts/build.mjs), so a running gateway needs neither esbuild nor sources.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const WEB = join(dirname(fileURLToPath(import.meta.url)), '..');
const ROOT = join(WEB, '..', '..');

/**
 * zod's `z` namespace re-exports every locale (~250 kB minified) and the bundler cannot drop
 * them; the page only ever uses the default English messages.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (a) =>
      /[\\/]node_modules[\\/]zod[\\/]/.test(a.importer)
        ? { path: join(a.resolveDir, '..', 'locales', 'index.js'), namespace: 'zod-locales' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (a) => ({
      contents: "export { default as en } from './en.js';",
      resolveDir: dirname(a.path),
      loader: 'js',
    }));
  },
};

/** Writes the page into `outDir`; returns the bytes of its assets, plain and gzipped. */
export async function buildPage(outDir) {
  const out = await build({
    entryPoints: { app: join(WEB, 'src', 'browser', 'main.ts') },
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: ['es2022', 'chrome110', 'firefox115', 'safari16'],
    minify: true,
    legalComments: 'none',
    write: false,
    outdir: join(outDir, 'assets'),
    entryNames: '[name]-[hash]',
    tsconfig: join(WEB, 'tsconfig.json'),
    absWorkingDir: ROOT,
    logLevel: 'silent',
    plugins: [zodEnglishOnly],
  });
  const names = {};
  let bytes = 0;
  let gzipBytes = 0;
  mkdirSync(join(outDir, 'assets'), { recursive: true });
  for (const f of out.outputFiles) {
    const name = basename(f.path);
    const ext = name.slice(name.lastIndexOf('.') + 1);
    if (ext !== 'js' && ext !== 'css') continue;
    names[ext] = name;
    writeFileSync(join(outDir, 'assets', name), f.contents);
    bytes += f.contents.byteLength;
    gzipBytes += gzipSync(f.contents, { level: 9 }).byteLength;
  }
  if (!names.js || !names.css)
    throw new Error('the page bundle lacks its script or its style sheet');
  const template = readFileSync(join(WEB, 'src', 'index.html'), 'utf8');
  writeFileSync(
    join(outDir, 'index.html'),
    template.replace('{{js}}', names.js).replace('{{css}}', names.css),
  );
  return { bytes, gzipBytes };
}
