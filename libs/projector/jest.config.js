const esmPackages = require('../../jest.esm.js');

module.exports = {
  ...require('../../jest.preset.js'),
  displayName: 'projector',
  rootDir: __dirname,
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts'],
  // The commands-per-fact test plays the bench's recordings, read through @baton/acp.
  ...esmPackages(['@agentclientprotocol']),
};
