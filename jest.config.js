// One jest run over every project (libs/*, apps/*, test/). `npm test` is the README's test command.
const { existsSync, readdirSync } = require('node:fs');
const { join } = require('node:path');

const projects = ['libs', 'apps']
  .flatMap((group) =>
    existsSync(join(__dirname, group))
      ? readdirSync(join(__dirname, group)).map((d) => `${group}/${d}`)
      : [],
  )
  .concat(['test', 'test/security', 'test/faults', 'bench'])
  .filter((dir) => existsSync(join(__dirname, dir, 'jest.config.js')))
  .map((dir) => `<rootDir>/${dir}/jest.config.js`);

module.exports = {
  projects,
  globalSetup: '<rootDir>/jest.global-setup.js',
  // Names what a test left open, and kills a child left running; jest then exits rather than
  // wait on what is left (a leaked handle once held a passed run open until CI's deadline).
  globalTeardown: '<rootDir>/jest.global-teardown.js',
  forceExit: true,
  coverageProvider: 'v8',
  collectCoverageFrom: ['libs/*/src/**/*.ts', '!**/*.spec.ts', '!**/index.ts'],
  coverageReporters: ['text-summary', 'text'],
  coverageThreshold: { './libs/activity/src/': { lines: 95 } },
};
