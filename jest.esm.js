// Packages that ship as ESM only (the ACP SDK, jose) must be transpiled for jest's CommonJS
// runtime. `esmPackages(['jose'])` gives the transform settings a project config spreads in.
const preset = require('./jest.preset.js');

const [, swcOptions] = preset.transform['^.+\\.ts$'];

module.exports = function esmPackages(packages) {
  return {
    transform: {
      ...preset.transform,
      '^.+\\.js$': [
        '@swc/jest',
        { ...swcOptions, jsc: { ...swcOptions.jsc, parser: { syntax: 'ecmascript' } } },
      ],
    },
    transformIgnorePatterns: [`/node_modules/(?!(${packages.join('|')})/)`],
  };
};
