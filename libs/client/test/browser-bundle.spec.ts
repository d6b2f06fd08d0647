import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { TOKEN, WireServer } from './wire-server';

const root = join(__dirname, '..', '..', '..');

/**
 * The client must run in a browser: bundle it for the browser platform (a Node built-in anywhere
 * in its import graph fails the build), then run the bundle where the only WebSocket is a
 * browser-like global that takes no options object — so the token can only travel in the query.
 */
describe('the browser build of @baton/client', () => {
  let dir: string;
  let server: WireServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-client-'));
    server = await WireServer.start();
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await server.close();
  });

  it('bundles for the browser without Node built-ins or the ws implementation', async () => {
    const out = await build({
      entryPoints: [join(root, 'libs/client/src/index.ts')],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      metafile: true,
      tsconfig: join(root, 'tsconfig.base.json'),
      logLevel: 'silent',
    });
    const inputs = Object.keys(out.metafile.inputs);
    expect(inputs.some((f) => f.includes('node_modules/ws/lib/'))).toBe(false);
    expect(inputs.filter((f) => f.startsWith('libs/client/src/')).length).toBeGreaterThan(3);
    writeFileSync(join(dir, 'client.mjs'), out.outputFiles[0]!.text);
  });

  it('connects, subscribes and pings through a browser-like global WebSocket', async () => {
    const wsPath = require.resolve('ws');
    const script = `
      import { createRequire } from 'node:module';
      const require = createRequire(${JSON.stringify(wsPath)});
      const NodeWs = require(${JSON.stringify(wsPath)});
      // A browser's WebSocket: (url, protocols?) only; an options object is a SyntaxError there.
      globalThis.WebSocket = class extends NodeWs {
        constructor(url, protocols) {
          if (protocols !== undefined && typeof protocols !== 'string' && !Array.isArray(protocols))
            throw new SyntaxError('protocols must be a string or an array');
          super(url, protocols);
        }
      };
      const { BatonClient } = await import(${JSON.stringify(join(dir, 'client.mjs'))});
      const client = new BatonClient();
      await client.connect(${JSON.stringify(server.url)}, ${JSON.stringify(TOKEN)});
      const sub = client.subscribe('t1');
      const view = await sub.ready;
      await client.ping();
      console.log(JSON.stringify({ ok: true, taskId: view.taskId }));
      await client.close();
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(stdout.trim())).toEqual({ ok: true, taskId: 't1' });
    const subscribe = server.received.find((m) => m.op === 'subscribe');
    expect(subscribe).toMatchObject({ taskId: 't1' });
  });
});
