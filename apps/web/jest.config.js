module.exports = require('../../jest.project.js')(__dirname, 'web', {
  specs: ['test/**/*.spec.ts'],
  esm: ['jose'],
});
