module.exports = require('../../jest.project.js')(__dirname, 'jobs');
