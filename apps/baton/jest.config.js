const preset = require('../../jest.preset.js');
const [, swcOptions] = preset.transform['^.+\\.ts$'];

module.exports = {
  ...preset,
  displayName: 'baton',
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
