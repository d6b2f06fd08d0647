import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadScripts, resolveIncludes } from './scripts';

describe('scripts', () => {
  const files = readdirSync(join(__dirname, 'lua')).filter((f) => f.endsWith('.lua'));

  it('loads every script of lua/, each declared with the key count its file name gives', () => {
    const scripts = loadScripts();
    expect(Object.keys(scripts).sort()).toEqual(
      files.map((f) => f.replace(/-\d+\.lua$/, '')).sort(),
    );
  });

  it.each(files)('%s binds exactly the keys its name counts, and takes in its includes', (file) => {
    const own = readFileSync(join(__dirname, 'lua', file), 'utf8');
    const used = new Set([...own.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1])));
    const count = Number(/-(\d+)\.lua$/.exec(file)![1]);
    expect([...used].sort()).toEqual(Array.from({ length: count }, (_, i) => i + 1));
    const lua =
      loadScripts()[file.replace(/-\d+\.lua$/, '') as keyof ReturnType<typeof loadScripts>];
    expect(lua.keys).toBe(count);
    expect(lua.lua).not.toMatch(/^--- @include/m);
  });
});

describe('resolveIncludes', () => {
  const files: Record<string, string> = {
    'main-1':
      'local a = 1\n--- @include "includes/trim"\n--- @include "includes/fence"\nreturn a\n',
    'includes/fence': '--- @include "includes/ids"\nlocal function fence() end\n',
    'includes/trim': '--- @include "includes/fence"\nlocal function trim() end\n',
    'includes/ids': 'local function ids() end\n',
    'loop-1': '--- @include "includes/a"\n',
    'includes/a': '--- @include "includes/b"\n',
    'includes/b': '--- @include "includes/a"\n',
    'missing-1': '--- @include "includes/trim"\n--- @include "includes/nope"\n',
  };
  const read = (path: string): string | undefined => files[path];

  it('takes in nested includes, each file once, before the first line that needs it', () => {
    const lines = resolveIncludes('main-1', read).split('\n');
    expect(lines.filter((line) => line !== '')).toEqual([
      'local a = 1',
      'local function ids() end',
      'local function fence() end',
      'local function trim() end',
      'return a',
    ]);
  });

  it('refuses an include cycle, naming it', () => {
    expect(() => resolveIncludes('loop-1', read)).toThrow(
      'lua includes form a cycle: loop-1 -> includes/a -> includes/b -> includes/a',
    );
  });

  it('refuses a missing include, naming the file that wants it', () => {
    expect(() => resolveIncludes('missing-1', read)).toThrow(
      'lua/missing-1.lua includes lua/includes/nope.lua: there is no such file',
    );
  });
});
