// A project's jest config: the shared preset, where its specs are and the ESM-only packages
// it loads (jest.esm.js), so that each jest.config.js says only what is its own.
const preset = require('./jest.preset.js');
const esmPackages = require('./jest.esm.js');

/**
 * @param {string} rootDir the project's folder (its config's __dirname)
 * @param {string} displayName
 * @param {{ specs?: string[], esm?: string[] } & Record<string, unknown>} [options] `specs`:
 *   globs under rootDir (default: src/ and test/); `esm`: packages to transpile; the rest is
 *   jest config of the project's own
 */
module.exports = function jestProject(
  rootDir,
  displayName,
  { specs = ['src/**/*.spec.ts', 'test/**/*.spec.ts'], esm = [], ...own } = {},
) {
  return {
    ...preset,
    displayName,
    rootDir,
    testMatch: specs.map((glob) => `<rootDir>/${glob}`),
    ...(esm.length > 0 ? esmPackages(esm) : {}),
    ...own,
  };
};
