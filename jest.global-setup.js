// Every process a test starts (an app, the CLI, the replay agent) runs the build, as in
// production: build once before the run, so it is never stale. In-process code runs from sources
// under the same .swcrc (jest.preset.js).
const { execFileSync } = require('node:child_process');
const { join } = require('node:path');

module.exports = function build() {
  execFileSync(process.execPath, [join(__dirname, 'scripts', 'build.mjs')], { stdio: 'inherit' });
};
