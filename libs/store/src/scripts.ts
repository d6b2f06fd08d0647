import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RedisClient } from './connection';

/**
 * Script name -> number of KEYS. The .lua files sit next to this module; fenced scripts get the
 * shared prelude (fence.lua) prepended, since Redis scripts cannot import one another.
 */
const SCRIPTS = {
  append: { keys: 3, prelude: false },
  append_fenced: { keys: 3, prelude: true },
  lease_acquire: { keys: 2, prelude: true },
  lease_renew: { keys: 1, prelude: true },
  lease_release: { keys: 1, prelude: false },
  snapshot_write: { keys: 3, prelude: true },
  trim: { keys: 4, prelude: true },
  publish_updates: { keys: 3, prelude: true },
  inbox_append: { keys: 2, prelude: true },
  append_bounded: { keys: 1, prelude: false },
  dead_letter: { keys: 2, prelude: false },
  execution_lease_renew: { keys: 2, prelude: false },
  execution_leases_expired: { keys: 2, prelude: false },
  view_write: { keys: 3, prelude: true },
  projectors_heartbeat: { keys: 1, prelude: false },
} as const;

export type ScriptName = keyof typeof SCRIPTS;
type Arg = string | number;
export type Scripts = Record<ScriptName, (...keysThenArgs: Arg[]) => Promise<unknown>>;

let sources: Record<ScriptName, string> | undefined;

export function scriptSource(name: ScriptName): string {
  if (!sources) {
    const read = (file: string) => readFileSync(join(__dirname, 'lua', `${file}.lua`), 'utf8');
    const prelude = read('fence');
    const loaded = {} as Record<ScriptName, string>;
    for (const [n, def] of Object.entries(SCRIPTS) as [
      ScriptName,
      (typeof SCRIPTS)[ScriptName],
    ][]) {
      loaded[n] = def.prelude ? `${prelude}\n${read(n)}` : read(n);
    }
    sources = loaded;
  }
  return sources[name];
}

const COMMAND_PREFIX = 'baton_';

/**
 * Defines every script as an ioredis command on `client`. ioredis sends EVALSHA and falls back to
 * EVAL on NOSCRIPT (and on the first use on each new socket), so the scripts keep working after a
 * Redis restart, a failover, or SCRIPT FLUSH without anything to reload by hand.
 */
export function defineScripts(client: RedisClient): Scripts {
  const host = client as unknown as Record<string, (...args: Arg[]) => Promise<unknown>>;
  const out = {} as Scripts;
  for (const [name, def] of Object.entries(SCRIPTS) as [
    ScriptName,
    (typeof SCRIPTS)[ScriptName],
  ][]) {
    const command = `${COMMAND_PREFIX}${name}`;
    if (typeof host[command] !== 'function') {
      client.defineCommand(command, { numberOfKeys: def.keys, lua: scriptSource(name) });
    }
    out[name] = (...args: Arg[]) => host[command]!.apply(client, args);
  }
  return out;
}

/**
 * Runs one script and then WAIT on the same connection (a pipeline: on a Cluster, the script's
 * node), so the reply says how many replicas have the write. Resolves with both replies.
 */
export async function withReplicas(
  client: RedisClient,
  name: ScriptName,
  args: Arg[],
  replicas: number,
  timeoutMs: number,
): Promise<{ reply: unknown; acknowledged: number }> {
  const pipeline = client.pipeline() as unknown as Record<string, (...a: Arg[]) => unknown> & {
    wait(replicas: number, timeoutMs: number): unknown;
    exec(): Promise<[Error | null, unknown][] | null>;
  };
  pipeline[`${COMMAND_PREFIX}${name}`]!(...args);
  pipeline.wait(replicas, timeoutMs);
  const results = await pipeline.exec();
  if (!results) throw new Error('Connection is closed.');
  const [[scriptErr, reply], [waitErr, acknowledged]] = results as [
    [Error | null, unknown],
    [Error | null, unknown],
  ];
  if (scriptErr) throw scriptErr;
  if (waitErr) throw waitErr;
  return { reply, acknowledged: Number(acknowledged) };
}
