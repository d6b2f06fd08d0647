const preset = require('../../jest.preset.js');

// The ACP SDK ships as ESM only; jest's CommonJS runtime needs it transpiled like our sources.
const [, swcOptions] = preset.transform['^.+\\.ts$'];

module.exports = {
  ...preset,
  displayName: 'acp',
  rootDir: __dirname,
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts'],
  transform: {
    ...preset.transform,
    '^.+\\.js$': [
      '@swc/jest',
      { ...swcOptions, jsc: { ...swcOptions.jsc, parser: { syntax: 'ecmascript' } } },
    ],
  },
  transformIgnorePatterns: ['/node_modules/(?!@agentclientprotocol/)'],
};
