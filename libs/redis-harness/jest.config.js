module.exports = {
  ...require('../../jest.preset.js'),
  displayName: 'redis-harness',
  rootDir: __dirname,
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts'],
};
