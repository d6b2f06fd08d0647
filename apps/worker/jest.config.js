const preset = require('../../jest.preset.js');

// The worker runs the ACP SDK (ESM only) in-process in some tests: transpile it like libs/acp.
const [, swcOptions] = preset.transform['^.+\\.ts$'];

module.exports = {
  ...preset,
  displayName: 'worker',
  rootDir: __dirname,
  testMatch: ['<rootDir>/test/**/*.spec.ts'],
  transform: {
    ...preset.transform,
    '^.+\\.js$': [
      '@swc/jest',
      { ...swcOptions, jsc: { ...swcOptions.jsc, parser: { syntax: 'ecmascript' } } },
    ],
  },
  transformIgnorePatterns: ['/node_modules/(?!@agentclientprotocol/)'],
};
