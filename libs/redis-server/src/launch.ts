import { spawn, type ChildProcess } from 'node:child_process';

/** How a redis-server process is started: the one way both kinds of server are launched. */
export interface LaunchOptions {
  binary: string;
  args: string[];
  /** Its name in errors, e.g. `redis-server on 6380`. */
  name: string;
  /** True once it answers PING with PONG (while loading its AOF it answers -LOADING). */
  answers: () => Promise<boolean>;
  /** How long it may take to answer (default 15 s); then it is killed. */
  timeoutMs?: number;
  /**
   * A process group of its own: a terminal's Ctrl-C (which signals the whole foreground group)
   * does not reach it, so it outlives the process still writing to it while that stops.
   */
  detached?: boolean;
  /** Killed (SIGKILL) when this process exits, as a crashed test run must leave no server behind. */
  killOnExit?: boolean;
}

export interface LaunchedRedis {
  readonly child: ChildProcess;
  /** Sends `signal` (default SIGKILL) unless it has exited already; resolves once it has. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** The server exited or did not answer in time; `stderr` holds what it wrote there. */
export class RedisLaunchError extends Error {
  override name = 'RedisLaunchError';
  constructor(
    message: string,
    readonly stderr: string,
  ) {
    super(message);
  }
}

const killedOnExit = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of killedOnExit) child.kill('SIGKILL');
});

/** Starts redis-server and resolves once it answers; throws {@link RedisLaunchError} otherwise. */
export async function launchRedis(o: LaunchOptions): Promise<LaunchedRedis> {
  const child = spawn(o.binary, o.args, {
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: o.detached ?? false,
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  let failed: Error | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', (err) => {
      failed = err;
      resolve();
    });
  });
  if (o.killOnExit) {
    killedOnExit.add(child);
    void exited.then(() => killedOnExit.delete(child));
  }
  const gone = () => failed !== undefined || child.exitCode !== null || child.signalCode !== null;
  const stop = async (signal: NodeJS.Signals = 'SIGKILL') => {
    if (gone()) return;
    child.kill(signal);
    await exited;
  };
  try {
    await waitFor(
      o.name,
      async () => {
        if (gone()) throw new Error(`${o.name} exited early${failed ? `: ${failed.message}` : ''}`);
        return o.answers();
      },
      o.timeoutMs,
    );
  } catch (err) {
    await stop('SIGKILL');
    throw new RedisLaunchError((err as Error).message, stderr);
  }
  return { child, stop };
}

/** Polls `check` every 25 ms until it is true; throws once `timeoutMs` (default 15 s) has passed. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
