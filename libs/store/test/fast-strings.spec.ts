// Every role's process loads ioredis (through this store and BullMQ), which leaves
// String.prototype in V8's slow dictionary mode (src/fast-strings.ts). Checked in a child process
// of the build, as each role runs: V8's own answer, through --allow-natives-syntax.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const root = join(__dirname, '..', '..', '..');

function stringPrototypeFast(requires: string[]): boolean {
  const script = [
    ...requires.map((r) => `require(${JSON.stringify(r)});`),
    'process.stdout.write(String(%HasFastProperties(String.prototype)));',
  ].join('\n');
  const out = execFileSync(process.execPath, ['--allow-natives-syntax', '-e', script], {
    cwd: root,
  });
  return String(out) === 'true';
}

const dist = (lib: string) => join(root, 'dist', 'libs', lib, 'src', 'index.js');

describe('String.prototype in the processes that load ioredis', () => {
  it('ioredis alone leaves it slow (what the store undoes)', () => {
    expect(stringPrototypeFast(['ioredis'])).toBe(false);
  });

  it.each([
    ['the store', [dist('store')]],
    ['a projector', [dist('projector')]],
    ['a worker (BullMQ too)', [dist('worker'), 'bullmq']],
    ['a gateway (NestJS too)', [dist('gateway')]],
  ])('is fast again in %s', (_role, requires) => {
    expect(stringPrototypeFast(requires)).toBe(true);
  });
});
