// Baton's one-process run (`npm start`: gateway, projector and worker in one process) started as
// a user starts it, on a Redis of the test's, for the specs that drive it with the CLI and a page.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@baton/redis-server';
import { Proc } from './processes';

/** Leases short enough that a restarted run takes its shards and executions back within a test. */
export const SHORT_LEASES = {
  PROJECTOR_LEASE_TTL_MS: '1000',
  PROJECTOR_RENEW_MS: '200',
  WORKER_EXECUTION_LEASE_MS: '1000',
};

export class OneProcessRun {
  private readonly procs: Proc[] = [];

  private constructor(
    /** Its data folder (the token, the recordings' state). */
    readonly dataDir: string,
    /** Its gateway's base URL. */
    readonly url: string,
    /** Its Redis key prefix. */
    readonly prefix: string,
    /** The environment it runs with, and the CLI with it. */
    readonly env: Record<string, string>,
  ) {}

  /**
   * A run on `redisUrl` with a fresh data folder and gateway port, key prefix `<name><pid>`,
   * `shards` shards and `env` on top; nothing is started yet.
   */
  static async create(
    redisUrl: string,
    name: string,
    shards: number,
    env: Record<string, string> = {},
  ): Promise<OneProcessRun> {
    const dataDir = mkdtempSync(join(tmpdir(), `baton-${name}-`));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const prefix = `${name}${process.pid}`;
    return new OneProcessRun(dataDir, url, prefix, {
      REDIS_URL: redisUrl,
      BATON_DATA_DIR: dataDir,
      BATON_PREFIX: prefix,
      BATON_SHARDS: String(shards),
      GATEWAY_PORT: String(port),
      BATON_GATEWAY_URL: url,
      LOG_LEVEL: 'warn',
      ...env,
    });
  }

  /** The token the run wrote to its data folder, as the CLI and the page read it. */
  token(): string {
    return readFileSync(join(this.dataDir, 'token'), 'utf8').trim();
  }

  /** Starts the run; resolves once it says it is running (stop() kills it either way). */
  async start(): Promise<Proc> {
    const p = new Proc('baton', process.execPath, ['dist/apps/baton/src/main.js'], this.env);
    this.procs.push(p);
    await p.waitFor(/Baton is running/, 120_000);
    return p;
  }

  /** Kills every process start() started and removes the data folder. */
  async stop(): Promise<void> {
    for (const p of this.procs) await p.stop('SIGKILL');
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}
