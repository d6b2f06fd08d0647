module.exports = require('../../jest.project.js')(__dirname, 'baton', {
  specs: ['test/**/*.spec.ts'],
  esm: ['@agentclientprotocol'],
});
