const preset = require('../../jest.preset.js');
const esmPackages = require('../../jest.esm.js');

module.exports = {
  ...preset,
  displayName: 'acp',
  rootDir: __dirname,
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts'],
  ...esmPackages(['@agentclientprotocol']),
};
