/**
 * Rewrites the EXPECTED entries of the named fixtures in libs/testing/src/expected-facts.ts from
 * what the dialects produce now (adding entries for new fixtures). Review the diff fact by fact:
 * this is a convenience for re-recordings, not a source of truth.
 *
 *   node --import tsx libs/acp/scripts/update-expected.ts claude-real-shell-plain …
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseRecording, reduceFrames } from '../src';

const root = join(__dirname, '..');
const file = join(root, '..', 'testing', 'src', 'expected-facts.ts');
let src = readFileSync(file, 'utf8');
for (const name of process.argv.slice(2)) {
  const frames = parseRecording(readFileSync(join(root, 'fixtures', `${name}.jsonl`), 'utf8'));
  const facts = reduceFrames(frames).facts.map((f) => `    ${JSON.stringify(f)},\n`);
  const body = `  '${name}': [\n${facts.join('')}  ],\n`;
  const start = src.indexOf(`  '${name}': [`);
  if (start === -1) {
    src = src.replace(/\n};\s*$/, `\n${body}};\n`);
    continue;
  }
  const end = src.indexOf('\n  ],\n', start);
  const endEmpty = src.indexOf('\n', start);
  const stop = src.slice(start, endEmpty).endsWith('[],') ? endEmpty + 1 : end + '\n  ],\n'.length;
  src = src.slice(0, start) + body + src.slice(stop);
}
writeFileSync(file, src);
