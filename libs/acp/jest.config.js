module.exports = require('../../jest.project.js')(__dirname, 'acp', {
  esm: ['@agentclientprotocol'],
});
