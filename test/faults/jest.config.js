// The fault suite: Redis killed, stalled and cut under real processes, each test printing what
// survived (attempts, acknowledged, lost, duplicated, time to recover) — BENCHMARKS.md, "faults".
module.exports = require('../../jest.project.js')(__dirname, 'faults', {
  specs: ['**/*.spec.ts'],
  esm: ['@agentclientprotocol', 'jose'],
});
