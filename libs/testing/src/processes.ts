import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { waitFor } from './wait';

export const ROOT = join(__dirname, '..', '..', '..');

/** A child process whose output is kept line by line, for waiting on and for failure reports. */
export class Proc {
  readonly lines: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;

  constructor(
    readonly name: string,
    command: string,
    args: string[],
    env: Record<string, string | undefined>,
    cwd = ROOT,
    /** In a process group of its own, as a terminal starts a command (see {@link ctrlC}). */
    private readonly ownGroup = false,
  ) {
    this.child = spawn(command, args, {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: ownGroup,
    });
    let partial = '';
    const take = (chunk: Buffer) => {
      partial += chunk.toString();
      const parts = partial.split('\n');
      partial = parts.pop() ?? '';
      this.lines.push(...parts);
    };
    this.child.stdout!.on('data', take);
    this.child.stderr!.on('data', take);
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => resolve({ code, signal })),
    );
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The first match of `re` in the output so far or to come. */
  async waitFor(re: RegExp, timeoutMs = 60_000): Promise<RegExpMatchArray> {
    return waitFor(
      () => {
        if (!this.running && !this.lines.some((l) => re.test(l))) {
          throw new Error(`${this.name} exited; output:\n${this.tail()}`);
        }
        for (const l of this.lines) {
          const m = l.match(re);
          if (m) return m;
        }
        return undefined;
      },
      `${this.name} to print ${re}\n${this.tail()}`,
      timeoutMs,
    );
  }

  tail(n = 40): string {
    return this.lines.slice(-n).join('\n');
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM') {
    if (this.running) this.child.kill(signal);
    if (this.ownGroup && signal === 'SIGKILL') {
      try {
        process.kill(-this.pid, 'SIGKILL'); // and whatever it started in its group
      } catch {
        // the group is gone already
      }
    }
    return this.exited;
  }

  /** Ctrl-C in a terminal: SIGINT to the whole foreground process group, not just the process. */
  async ctrlC() {
    if (!this.ownGroup) throw new Error(`${this.name} was not started in a group of its own`);
    process.kill(-this.pid, 'SIGINT');
    return this.exited;
  }
}

/** Runs a command to its end: exit code and output. */
export function runToEnd(
  command: string,
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The CLI, as a user runs it (`npm run baton -- …` runs exactly this). */
export function cli(args: string[], env: Record<string, string | undefined>) {
  return runToEnd(process.execPath, ['dist/apps/cli/src/main.js', ...args], env);
}

/** GET a gateway REST route with a token; the parsed JSON body. */
export async function getJson<T = unknown>(url: string, token: string): Promise<T> {
  const r = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  if (!r.ok) throw new Error(`GET ${url}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
}
