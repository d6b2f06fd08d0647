/**
 * The life of a service process around its service: stopped cleanly on the first SIGTERM or
 * SIGINT (then its traces flushed, exit 0; a stop that fails exits 1), and a start that fails
 * reported with its stack (exit 1). A stop still unfinished after `timeoutMs` exits 1 as well: a
 * stop that waits on an unreachable Redis (a Cluster master down) must neither outlive the
 * orchestrator's grace period nor, where there is none, run forever. What it could not finish is
 * safe to drop: leases lapse and other instances take over.
 */
export function stopOnSignals(
  name: string,
  stop: () => Promise<void>,
  flushTraces: () => Promise<void>,
  timeoutMs: number,
): void {
  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`${name}: ${signal}, stopping\n`);
    setTimeout(() => {
      process.stderr.write(`${name}: stop after ${signal} unfinished after ${timeoutMs} ms\n`);
      process.exit(1);
    }, timeoutMs).unref();
    stop().then(
      () => flushTraces().finally(() => process.exit(0)),
      (err: unknown) => {
        process.stderr.write(`${name}: stop after ${signal} failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

/** Runs a process's `main`; if it fails, its stack goes to stderr and the process exits 1. */
export function runMain(name: string, main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    process.stderr.write(
      `${name}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  });
}
