// The apps load this lib first to start tracing, whose instrumentation patches ioredis and http as
// they are required: a module of this lib that loads ioredis (through the store, say) would leave
// every Redis call untraced. Checked on the build, in a process of its own, as an app loads it.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const root = join(__dirname, '..', '..', '..');

it('loading @baton/health loads no Redis client', () => {
  const script = `
    require(${JSON.stringify(join(root, 'dist', 'libs', 'health', 'src', 'index.js'))});
    const loaded = Object.keys(require.cache).filter((f) => /[\\\\/]node_modules[\\\\/](ioredis|bullmq)[\\\\/]/.test(f));
    process.stdout.write(JSON.stringify(loaded));
  `;
  const loaded = JSON.parse(String(execFileSync(process.execPath, ['-e', script], { cwd: root })));
  expect(loaded).toEqual([]);
});
