module.exports = {
  ...require('../../jest.preset.js'),
  displayName: 'backoff',
  rootDir: __dirname,
  testMatch: ['<rootDir>/src/**/*.spec.ts'],
};
