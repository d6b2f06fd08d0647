module.exports = {
  ...require('../../jest.preset.js'),
  displayName: 'jobs',
  rootDir: __dirname,
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts'],
};
