const preset = require('../../jest.preset.js');
const esmPackages = require('../../jest.esm.js');

module.exports = {
  ...preset,
  displayName: 'worker',
  rootDir: __dirname,
  testMatch: ['<rootDir>/test/**/*.spec.ts'],
  ...esmPackages(['@agentclientprotocol']),
};
