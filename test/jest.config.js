const preset = require('../jest.preset.js');
const esmPackages = require('../jest.esm.js');

module.exports = {
  ...preset,
  displayName: 'e2e',
  rootDir: __dirname,
  testMatch: ['<rootDir>/**/*.spec.ts'],
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/security/', '<rootDir>/faults/'],
  ...esmPackages(['@agentclientprotocol', 'jose']),
};
