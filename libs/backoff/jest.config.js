module.exports = require('../../jest.project.js')(__dirname, 'backoff', {
  specs: ['src/**/*.spec.ts'],
});
