module.exports = {
  ...require('../../jest.preset.js'),
  displayName: 'redis-server',
  rootDir: __dirname,
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts'],
};
