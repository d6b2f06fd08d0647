import { createHash } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Controller, Get, Inject, Injectable, Module, Param, Req, Res } from '@nestjs/common';
import { buildOutputDir } from '@baton/config';
import { WireFailure } from '../errors';
import { LOGGER } from '../options';
import type { Logger } from '../logger';

export interface PageAsset {
  readonly body: Buffer;
  /** The same bytes gzipped, for clients that accept it. */
  readonly gzip: Buffer;
  readonly contentType: string;
}

export interface PageBundle {
  /** The page itself: it names its assets by content hash, so they can be cached for good. */
  readonly html: string;
  readonly etag: string;
  /** Assets by file name (`app-<hash>.js`, `app-<hash>.css`). */
  readonly assets: ReadonlyMap<string, PageAsset>;
}

const TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};

/** The page as `npm run build` wrote it (apps/web/scripts/build-page.mjs). */
export const PAGE_DIR = join(buildOutputDir(__dirname), 'page');

/** Reads the built page into memory, its assets gzipped once. */
export async function loadPage(dir: string): Promise<PageBundle> {
  let html: string;
  try {
    html = await readFile(join(dir, 'index.html'), 'utf8');
  } catch (err) {
    throw new Error(`the page is not built in ${dir} (run npm run build): ${String(err)}`);
  }
  const assets = new Map<string, PageAsset>();
  for (const name of await readdir(join(dir, 'assets'))) {
    const contentType = TYPES[name.slice(name.lastIndexOf('.') + 1)];
    if (!contentType) continue;
    const body = await readFile(join(dir, 'assets', name));
    assets.set(name, { body, gzip: gzipSync(body, { level: 9 }), contentType });
  }
  const etag = `"${createHash('sha256').update(html).digest('base64url').slice(0, 22)}"`;
  return { html, etag, assets };
}

/** One page per process, however many gateways it starts (tests start many). */
let shared: Promise<PageBundle> | null = null;

/** The live page (apps/web), read from the build by the first request for it and kept. */
@Injectable()
export class PageBundleCache {
  constructor(@Inject(LOGGER) private readonly log: Logger) {}

  get(): Promise<PageBundle> {
    if (!shared) {
      shared = loadPage(PAGE_DIR).then(
        (b) => {
          this.log.info({ dir: PAGE_DIR, assets: b.assets.size }, 'page loaded');
          return b;
        },
        (err: unknown) => {
          this.log.error({ err }, 'page load failed');
          shared = null; // the next request tries again
          throw err;
        },
      );
    }
    return shared;
  }
}

// Same-origin everything; the WebSocket is same-origin too (ws:/wss: for browsers whose 'self'
// does not cover it).
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self' ws: wss:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

interface PageRequest {
  headers: Record<string, string | string[] | undefined>;
}

/** The part of express's response used here (express ships no types in this repository). */
interface PageResponse {
  status(code: number): PageResponse;
  setHeader(name: string, value: string): void;
  type(t: string): PageResponse;
  send(body: string | Buffer): void;
  end(): void;
}

@Controller()
export class PageController {
  constructor(@Inject(PageBundleCache) private readonly cache: PageBundleCache) {}

  @Get()
  async index(@Req() req: PageRequest, @Res() res: PageResponse): Promise<void> {
    const page = await this.cache.get();
    const etag = page.etag;
    common(res);
    res.setHeader('Content-Security-Policy', CSP);
    // A `?token=` link must not leak through Referer; the page strips it from the address.
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('ETag', etag);
    if (req.headers['if-none-match'] === etag) {
      res.status(304).end();
      return;
    }
    res.type('text/html; charset=utf-8').send(page.html);
  }

  @Get('assets/:name')
  async asset(
    @Req() req: PageRequest,
    @Res() res: PageResponse,
    @Param('name') name: string,
  ): Promise<void> {
    const page = await this.cache.get();
    const asset = page.assets.get(name);
    if (!asset) throw new WireFailure('not_found', `no asset ${name}`);
    common(res);
    // The name carries the content hash: a new bundle is a new name.
    res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
    res.setHeader('Vary', 'Accept-Encoding');
    const accept = String(req.headers['accept-encoding'] ?? '');
    res.type(asset.contentType);
    if (/\bgzip\b/.test(accept)) {
      res.setHeader('Content-Encoding', 'gzip');
      res.send(asset.gzip);
    } else {
      res.send(asset.body);
    }
  }
}

function common(res: PageResponse): void {
  res.setHeader('X-Content-Type-Options', 'nosniff');
}

/** `/` and `/assets/*`: the live activity page. No authentication: the page signs in itself. */
@Module({ controllers: [PageController], providers: [PageBundleCache] })
export class PageModule {}
