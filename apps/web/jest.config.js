const preset = require('../../jest.preset.js');

// jose ships as ESM only (the browser test mints no token itself, but @baton modules it loads may).
const [, swcOptions] = preset.transform['^.+\\.ts$'];

module.exports = {
  ...preset,
  displayName: 'web',
  rootDir: __dirname,
  testMatch: ['<rootDir>/test/**/*.spec.ts'],
  transform: {
    ...preset.transform,
    '^.+\\.js$': [
      '@swc/jest',
      { ...swcOptions, jsc: { ...swcOptions.jsc, parser: { syntax: 'ecmascript' } } },
    ],
  },
  transformIgnorePatterns: ['/node_modules/(?!jose/)'],
};
