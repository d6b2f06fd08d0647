// Shared jest settings: SWC transpiles with the build's own .swcrc (the same decorator metadata
// and module format as dist/; no type-check, `npm run typecheck` does that), and the tsconfig
// path aliases resolve to library sources.
const fs = require('node:fs');
const path = require('node:path');
const { compilerOptions } = require('./tsconfig.base.json');
const { $schema, sourceMaps, ...swcrc } = JSON.parse(
  fs.readFileSync(path.join(__dirname, '.swcrc'), 'utf8'),
);

const moduleNameMapper = {};
for (const [alias, [target]] of Object.entries(compilerOptions.paths)) {
  moduleNameMapper[`^${alias}$`] = path.join(__dirname, target);
}

module.exports = {
  testEnvironment: 'node',
  transform: {
    '^.+\\.ts$': ['@swc/jest', { ...swcrc, jsc: { ...swcrc.jsc, baseUrl: __dirname } }],
  },
  moduleFileExtensions: ['ts', 'js', 'json'],
  moduleNameMapper,
};
