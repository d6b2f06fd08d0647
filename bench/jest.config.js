// The benchmarks' pure parts (the capacity model's arithmetic); the benchmarks themselves run
// with `npm run bench`, not here.
module.exports = {
  ...require('../jest.preset.js'),
  displayName: 'bench',
  rootDir: __dirname,
  testMatch: ['<rootDir>/*.spec.ts'],
};
