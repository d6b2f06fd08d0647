module.exports = require('../jest.project.js')(__dirname, 'e2e', {
  specs: ['**/*.spec.ts'],
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/security/', '<rootDir>/faults/'],
  esm: ['@agentclientprotocol', 'jose'],
});
