module.exports = require('../../jest.project.js')(__dirname, 'config', {
  specs: ['src/**/*.spec.ts'],
});
