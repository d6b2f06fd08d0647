module.exports = require('../../jest.project.js')(__dirname, 'cli', {
  specs: ['src/**/*.spec.ts'],
});
