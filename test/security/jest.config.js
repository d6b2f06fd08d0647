// The security suite: every attack of docs/security.md tried against real processes, each
// expecting a clear refusal and nothing written that should not be.
const preset = require('../../jest.preset.js');
const esmPackages = require('../../jest.esm.js');

module.exports = {
  ...preset,
  displayName: 'security',
  rootDir: __dirname,
  testMatch: ['<rootDir>/**/*.spec.ts'],
  ...esmPackages(['@agentclientprotocol', 'jose']),
};
