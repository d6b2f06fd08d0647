// What is still open after the last test. On a 2-core machine jest runs every suite in this one
// process, so a child, socket or timer a test leaves behind would hold `npm test` open until CI's
// deadline (it did once, with every test passed). Each one is named here, so the leak has a name
// in the output; a child process left running is killed, and jest does not wait on the rest
// (forceExit in jest.config.js).
module.exports = async function reportOpenHandles() {
  await new Promise((resolve) => setTimeout(resolve, 500)); // let closes under way finish
  const left = process
    ._getActiveHandles()
    .filter((h) => h !== process.stdin && h !== process.stdout && h !== process.stderr)
    .filter((h) => !(typeof h.fd === 'number' && h.fd >= 0 && h.fd <= 2));
  const described = left.map(describe);
  // Timers are not handles: count them by kind.
  const timers = process
    .getActiveResourcesInfo()
    .filter((r) => r === 'Timeout' || r === 'Immediate');
  if (timers.length > 0) described.push(`${timers.length} timer(s) still pending`);
  if (described.length === 0) return;
  process.stderr.write(
    `\nLEFT OPEN after the run (${described.length}): a test did not close it\n` +
      described.map((d) => `  - ${d}\n`).join(''),
  );
  for (const h of left) {
    if (h.constructor?.name === 'ChildProcess' && h.exitCode === null) h.kill('SIGKILL');
  }
};

function describe(handle) {
  const kind = handle?.constructor?.name ?? typeof handle;
  switch (kind) {
    case 'Socket':
    case 'TLSSocket':
      return `${kind} ${handle.localAddress ?? ''}:${handle.localPort ?? ''} -> ${handle.remoteAddress ?? '?'}:${handle.remotePort ?? '?'}`;
    case 'Server':
      return `Server listening on ${JSON.stringify(handle.address?.())}`;
    case 'ChildProcess':
      return `ChildProcess ${handle.pid}: ${(handle.spawnargs ?? []).join(' ').slice(0, 200)}`;
    case 'Timeout':
    case 'Immediate': {
      const fn = handle._onTimeout ?? handle._onImmediate;
      const every = handle._repeat
        ? `every ${handle._repeat} ms`
        : `once, ${handle._idleTimeout} ms`;
      return `${kind} (${every}): ${String(fn).replace(/\s+/g, ' ').slice(0, 240)}`;
    }
    default:
      return kind;
  }
}
