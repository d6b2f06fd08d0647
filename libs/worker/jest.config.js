module.exports = require('../../jest.project.js')(__dirname, 'worker', {
  specs: ['test/**/*.spec.ts'],
  esm: ['@agentclientprotocol'],
});
