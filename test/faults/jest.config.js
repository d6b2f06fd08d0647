// The fault suite: Redis killed, stalled and cut under real processes, each test printing what
// survived (attempts, acknowledged, lost, duplicated, time to recover) — BENCHMARKS.md, "faults".
const preset = require('../../jest.preset.js');
const esmPackages = require('../../jest.esm.js');

module.exports = {
  ...preset,
  displayName: 'faults',
  rootDir: __dirname,
  testMatch: ['<rootDir>/**/*.spec.ts'],
  ...esmPackages(['@agentclientprotocol', 'jose']),
};
