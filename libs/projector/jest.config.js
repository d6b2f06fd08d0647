module.exports = require('../../jest.project.js')(__dirname, 'projector', {
  // The commands-per-fact test plays the bench's recordings, read through @baton/acp.
  esm: ['@agentclientprotocol'],
});
