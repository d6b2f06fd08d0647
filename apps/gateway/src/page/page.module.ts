import { Controller, Get, Inject, Injectable, Module, Param, Req, Res } from '@nestjs/common';
import { buildPage, etagOf, type PageBundle } from '../../../web/src/build';
import { WireFailure } from '../errors';
import { LOGGER } from '../options';
import type { Logger } from '../logger';

/** One bundle per process, however many gateways it starts (tests start many). */
let shared: Promise<PageBundle> | null = null;

/**
 * The live page (apps/web), bundled in memory by the first request for it and kept for the life
 * of the process: no build step, and no cost for a gateway nobody opens the page on (the first
 * view waits once, a few hundred milliseconds at most).
 */
@Injectable()
export class PageBundleCache {
  constructor(@Inject(LOGGER) private readonly log: Logger) {}

  get(): Promise<PageBundle> {
    if (!shared) {
      const started = Date.now();
      shared = buildPage().then(
        (b) => {
          this.log.info(
            { ms: Date.now() - started, bytes: b.bytes, gzipBytes: b.gzipBytes },
            'page bundled',
          );
          return b;
        },
        (err: unknown) => {
          this.log.error({ err }, 'page bundle failed');
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
    const etag = etagOf(page.html);
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
