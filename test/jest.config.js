const preset = require('../jest.preset.js');

// jose and the ACP SDK ship as ESM only; jest's CommonJS runtime needs them transpiled.
const [, swcOptions] = preset.transform['^.+\\.ts$'];

module.exports = {
  ...preset,
  displayName: 'e2e',
  rootDir: __dirname,
  testMatch: ['<rootDir>/**/*.spec.ts'],
  transform: {
    ...preset.transform,
    '^.+\\.js$': [
      '@swc/jest',
      { ...swcOptions, jsc: { ...swcOptions.jsc, parser: { syntax: 'ecmascript' } } },
    ],
  },
  transformIgnorePatterns: ['/node_modules/(?!(@agentclientprotocol|jose)/)'],
};
