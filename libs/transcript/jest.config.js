module.exports = {
  ...require('../../jest.preset.js'),
  displayName: 'transcript',
  rootDir: __dirname,
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts'],
};
