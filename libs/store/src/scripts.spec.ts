import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadScripts } from './scripts';

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
