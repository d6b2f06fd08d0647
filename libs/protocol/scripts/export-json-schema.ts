// Writes libs/protocol/schema/*.json from the zod schemas. `--check` fails when they are stale.
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { toJsonSchemas } from '../src/json-schema';

const dir = join(__dirname, '..', 'schema');
const check = process.argv.includes('--check');
let stale = 0;
mkdirSync(dir, { recursive: true });
for (const [name, schema] of Object.entries(toJsonSchemas())) {
  const file = join(dir, `${name}.schema.json`);
  const text = JSON.stringify(schema, null, 2) + '\n';
  if (check) {
    if (!existsSync(file) || readFileSync(file, 'utf8') !== text) {
      console.error(`stale: ${file}`);
      stale++;
    }
  } else {
    writeFileSync(file, text);
  }
}
if (stale > 0) {
  console.error('run `npm run schema` and commit the result');
  process.exit(1);
}
