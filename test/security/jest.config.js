// The security suite: every attack of docs/security.md tried against real processes, each
// expecting a clear refusal and nothing written that should not be.
module.exports = require('../../jest.project.js')(__dirname, 'security', {
  specs: ['**/*.spec.ts'],
  esm: ['@agentclientprotocol', 'jose'],
});
