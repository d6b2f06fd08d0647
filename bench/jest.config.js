// The benchmarks' pure parts (the capacity model's arithmetic); the benchmarks themselves run
// with `npm run bench`, not here.
module.exports = require('../jest.project.js')(__dirname, 'bench', { specs: ['*.spec.ts'] });
