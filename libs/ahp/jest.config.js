module.exports = {
  ...require('../../jest.preset.js'),
  displayName: 'ahp',
  rootDir: __dirname,
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts'],
};
