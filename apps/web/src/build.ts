/**
 * Bundles the live page in memory with esbuild (already here: tsx runs on it), so the gateway
 * serves it with no build step and no build output to keep in step with the sources.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build, type Plugin } from 'esbuild';

const SRC = __dirname;
const ROOT = join(SRC, '..', '..', '..');

export interface PageAsset {
  readonly body: Buffer;
  /** The same bytes gzipped, for clients that accept it. */
  readonly gzip: Buffer;
  readonly contentType: string;
}

export interface PageBundle {
  /** The page itself: it names its assets by content hash, so they can be cached for good. */
  readonly html: string;
  /** Assets by file name (`app-<hash>.js`, `app-<hash>.css`). */
  readonly assets: ReadonlyMap<string, PageAsset>;
  /** Bytes of every asset together (JavaScript and CSS), and gzipped. */
  readonly bytes: number;
  readonly gzipBytes: number;
}

/**
 * zod's `z` namespace re-exports every locale (~250 kB minified) and the bundler cannot drop
 * them; the page only ever uses the default English messages.
 */
const zodEnglishOnly: Plugin = {
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

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

export async function buildPage(options: { minify?: boolean } = {}): Promise<PageBundle> {
  const out = await build({
    entryPoints: { app: join(SRC, 'browser', 'main.ts') },
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: ['es2022', 'chrome110', 'firefox115', 'safari16'],
    minify: options.minify ?? true,
    legalComments: 'none',
    write: false,
    outdir: '/page',
    entryNames: '[name]-[hash]',
    tsconfig: join(SRC, '..', 'tsconfig.json'),
    absWorkingDir: ROOT,
    logLevel: 'silent',
    plugins: [zodEnglishOnly],
  });
  const assets = new Map<string, PageAsset>();
  let js = '';
  let css = '';
  let bytes = 0;
  let gzipBytes = 0;
  for (const f of out.outputFiles) {
    const name = basename(f.path);
    const ext = name.slice(name.lastIndexOf('.'));
    const type = TYPES[ext];
    if (!type) continue;
    if (ext === '.js') js = name;
    else css = name;
    const body = Buffer.from(f.contents);
    const gzip = gzipSync(body, { level: 9 });
    assets.set(name, { body, gzip, contentType: type });
    bytes += body.byteLength;
    gzipBytes += gzip.byteLength;
  }
  if (!js || !css) throw new Error('the page bundle lacks its script or its style sheet');
  const template = await readFile(join(SRC, 'index.html'), 'utf8');
  const html = template.replace('{{js}}', js).replace('{{css}}', css);
  return { html, assets, bytes, gzipBytes };
}

/** A strong validator of the page (its assets' names are in it, so it changes with them). */
export function etagOf(text: string): string {
  return `"${createHash('sha256').update(text).digest('base64url').slice(0, 22)}"`;
}
