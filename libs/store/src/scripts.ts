import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RedisClient } from './connection';
import { mapScriptError } from './errors';

/**
 * The Lua scripts of the store, as BullMQ keeps its commands: each script is one file
 * `lua/<name>-<number of KEYS>.lua` whose header documents its KEYS and ARGV and binds them to
 * named locals. A line `--- @include "includes/<file>"` takes in shared functions (Redis scripts
 * cannot import one another; see resolveIncludes). The table of scripts is built from the file names, so the key count
 * ioredis is given is the one the file says.
 *
 * Each script is declared below with its types: KEYS as a tuple (its length is the key count,
 * checked against the file name when the scripts are loaded), ARGV and the reply.
 */

type Arg = string | number | Buffer;

/** A script's declaration: types only, and its key count so the loader can check the file. */
interface Declared<K extends readonly string[], A extends readonly Arg[], R> {
  readonly keys: number;
  /** Never set: carries the types. */
  readonly types?: { keys: K; args: A; reply: R };
}

function declare<K extends readonly string[], A extends readonly Arg[], R>(
  keys: K['length'],
): Declared<K, A, R> {
  return { keys };
}

type Ms = number;
type StreamId = string;
type Json = string;

const SCRIPTS = {
  append: declare<
    [stream: string, dedupe: string, feed: string, live: string],
    [
      taskId: string,
      feedMaxLen: number,
      dedupeTtl: Ms,
      count: number,
      ...writerInstanceSeqEntry: Arg[],
    ],
    (StreamId | 0)[]
  >(4),
  appendFenced: declare<
    [lease: string, stream: string, feed: string],
    [
      fence: string,
      expectedLastId: StreamId,
      taskId: string,
      feedMaxLen: number,
      ...entries: Json[],
    ],
    StreamId[]
  >(3),
  commit: declare<
    [lease: string, stream: string, feed: string, updates: string, seqs: string, views: string],
    [
      fence: string,
      taskId: string,
      expectedLastId: StreamId,
      feedMaxLen: number,
      updatesMaxLen: number,
      entryCount: number,
      viewSeq: number | '',
      view: Json | '',
      ...entriesThenSeqEntryUpdate: Arg[],
    ],
    [published: number, lastSeq: number, viewStored: 0 | 1, ...ids: StreamId[]]
  >(6),
  publishMany: declare<
    [lease: string, updates: string, seqs: string, views: string],
    [
      fence: string,
      updatesMaxLen: number,
      taskCount: number,
      ...stepsOfTaskViewSeqViewCountThenSeqUpdate: Arg[],
    ],
    (
      | [ok: 1, published: number, lastSeq: number, viewStored: 0 | 1]
      | [ok: 0, lastSeq: number, seq: number]
    )[]
  >(4),
  appendBounded: declare<
    [stream: string],
    [maxLen: number, retain: Ms, ...fieldValue: Arg[]],
    StreamId
  >(1),
  transcriptAppend: declare<
    [stream: string, compacted: string],
    [maxLen: number, retain: Ms, ...sessionExecutionEvent: string[]],
    StreamId | null
  >(2),
  transcriptCompact: declare<
    [stream: string, compacted: string],
    [first: StreamId, last: StreamId, retain: Ms, chunk: Buffer],
    0 | 1
  >(2),
  deadLetter: declare<
    [dead: string, index: string],
    [source: string, sourceId: string, reason: string, raw: Json, maxLen: number],
    StreamId | 0
  >(2),
  executionLeaseRenew: declare<
    [leases: string, ttls: string],
    [member: Json, ttl: Ms, ...extendOnly: [] | ['1']],
    Ms
  >(2),
  executionLeasesExpired: declare<[leases: string, ttls: string], [limit: number], string[]>(2),
  inboxAppend: declare<
    [lease: string, inbox: string],
    [fence: string, maxLen: number, ...messages: Json[]],
    StreamId[]
  >(2),
  leaseAcquire: declare<
    [lease: string, epoch: string, epochs: string],
    [owner: string, ttl: Ms],
    [acquired: 1, epoch: number, expiresAt: Ms] | [acquired: 0, owner: string, expiresAt: Ms]
  >(3),
  leaseRelease: declare<[lease: string], [owner: string, epoch: number], 0 | 1>(1),
  leaseRenew: declare<[lease: string], [owner: string, epoch: number, ttl: Ms], Ms>(1),
  projectorsHeartbeat: declare<[instances: string], [instance: string, ttl: Ms], string[]>(1),
  snapshotWrite: declare<
    [lease: string, snapshot: string, checkpoints: string, stream: string],
    [fence: string, id: StreamId, state: Json, checkpointEvery: Ms],
    StreamId | ''
  >(4),
  historySpanWrite: declare<
    [checkpoints: string, spans: string],
    [from: StreamId, to: StreamId, span: Buffer],
    0 | 1
  >(2),
  feedTrim: declare<[lease: string, feed: string], [fence: string, keepFrom: StreamId], number>(2),
  tenantStored: declare<
    [quota: string],
    [bytes: number, quota: number, window: Ms, bucket: Ms],
    [charged: 0 | 1, stored: number]
  >(1),
  liveInit: declare<[live: string, tasks: string, marker: string], [], 0 | 1>(3),
  tasksPutAway: declare<
    [lease: string, live: string, trims: string, stream: string, snapshot: string, dedupe: string],
    [fence: string, taskId: string, foldedId: StreamId, trimDue: Ms | ''],
    0 | 1
  >(6),
  trimDue: declare<
    [
      lease: string,
      trims: string,
      snapshot: string,
      stream: string,
      checkpoints: string,
      spans: string,
    ],
    [fence: string, taskId: string, retain: Ms],
    number
  >(6),
  trim: declare<
    [lease: string, snapshot: string, stream: string, checkpoints: string, spans: string],
    [fence: string, retain: Ms, hot: Ms],
    number
  >(5),
} as const;

export type ScriptName = keyof typeof SCRIPTS;
type Types<N extends ScriptName> = NonNullable<(typeof SCRIPTS)[N]['types']>;
export type ScriptKeys<N extends ScriptName> = Types<N>['keys'];
export type ScriptArgs<N extends ScriptName> = Types<N>['args'];
export type ScriptReply<N extends ScriptName> = Types<N>['reply'];

/** Runs a script; its error replies come back as the typed errors of errors.ts. */
export type Scripts = {
  [N in ScriptName]: (keys: ScriptKeys<N>, args: ScriptArgs<N>) => Promise<ScriptReply<N>>;
};

const LUA = join(__dirname, 'lua');
const SCRIPT_FILE = /^(\w+)-(\d+)\.lua$/;
const INCLUDE = /^--- @include "([\w/]+)"$/gm;

/**
 * The text of the Lua file at `path` (relative to lua/, without `.lua`) with its includes in, as
 * BullMQ's script loader does it: each line `--- @include "<path>"` (relative to lua/ too) is
 * replaced by that file, its own includes in, so a shared function can build on another. A file
 * is taken in once, at its first include: a later include of it is already above, and Lua's
 * `local function`s are seen by all that follows. A missing file or a cycle is an error naming the
 * chain of includes that led to it. `read` gives a file's text, undefined when there is none.
 */
export function resolveIncludes(path: string, read: (path: string) => string | undefined): string {
  const taken = new Set<string>([path]);
  const expand = (chain: readonly string[]): string => {
    const at = chain[chain.length - 1]!;
    const text = read(at);
    if (text === undefined) {
      const files = chain.map((file) => `lua/${file}.lua`);
      throw new Error(`${files.join(' includes ')}: there is no such file`);
    }
    return text.replace(INCLUDE, (_, include: string) => {
      if (chain.includes(include)) {
        throw new Error(`lua includes form a cycle: ${[...chain, include].join(' -> ')}`);
      }
      if (taken.has(include)) return '';
      taken.add(include);
      return expand([...chain, include]);
    });
  };
  return expand([path]);
}

function readLua(path: string): string | undefined {
  try {
    return readFileSync(join(LUA, `${path}.lua`), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

let loaded: Record<ScriptName, { keys: number; lua: string }> | undefined;

/** Every script of lua/, by name, with its key count (from the file name) and its includes in. */
export function loadScripts(): Record<ScriptName, { keys: number; lua: string }> {
  if (loaded) return loaded;
  const out = {} as Record<ScriptName, { keys: number; lua: string }>;
  for (const file of readdirSync(LUA)) {
    const m = SCRIPT_FILE.exec(file);
    if (!m) continue;
    const [, name, keys] = m as unknown as [string, string, string];
    const declared = (SCRIPTS as Record<string, Declared<string[], Arg[], unknown>>)[name];
    if (!declared) throw new Error(`lua/${file} is not declared in scripts.ts`);
    if (declared.keys !== Number(keys)) {
      throw new Error(`lua/${file} takes ${keys} keys, scripts.ts declares ${declared.keys}`);
    }
    const lua = resolveIncludes(file.replace(/\.lua$/, ''), readLua);
    out[name as ScriptName] = { keys: declared.keys, lua };
  }
  for (const name of Object.keys(SCRIPTS)) {
    if (!(name in out)) throw new Error(`script ${name} has no file lua/${name}-<keys>.lua`);
  }
  return (loaded = out);
}

const COMMAND_PREFIX = 'baton_';

/**
 * Defines every script as an ioredis command on `client`. ioredis sends EVALSHA and falls back to
 * EVAL on NOSCRIPT (and on the first use on each new socket), so the scripts keep working after a
 * Redis restart, a failover, or SCRIPT FLUSH without anything to reload by hand.
 */
export function defineScripts(client: RedisClient): Scripts {
  const host = client as unknown as Record<string, (...args: Arg[]) => Promise<unknown>>;
  const out: Record<string, (keys: readonly string[], args: readonly Arg[]) => Promise<unknown>> =
    {};
  for (const [name, script] of Object.entries(loadScripts())) {
    const command = `${COMMAND_PREFIX}${name}`;
    if (typeof host[command] !== 'function') {
      client.defineCommand(command, { numberOfKeys: script.keys, lua: script.lua });
    }
    out[name] = async (keys, args) => {
      try {
        return await host[command]!.call(client, ...keys, ...args);
      } catch (err) {
        throw mapScriptError(err);
      }
    };
  }
  return out as unknown as Scripts;
}

/**
 * Runs one script and then WAIT on the same connection (a pipeline: on a Cluster, the script's
 * node), so the reply says how many replicas have the write. Resolves with both replies.
 */
export async function withReplicas<N extends ScriptName>(
  client: RedisClient,
  name: N,
  keys: ScriptKeys<N>,
  args: ScriptArgs<N>,
  replicas: number,
  timeoutMs: number,
): Promise<{ reply: ScriptReply<N>; acknowledged: number }> {
  const pipeline = client.pipeline() as unknown as Record<string, (...a: Arg[]) => unknown> & {
    wait(replicas: number, timeoutMs: number): unknown;
    exec(): Promise<[Error | null, unknown][] | null>;
  };
  pipeline[`${COMMAND_PREFIX}${name}`]!(...keys, ...args);
  pipeline.wait(replicas, timeoutMs);
  const results = await pipeline.exec();
  if (!results) throw new Error('Connection is closed.');
  const [[scriptErr, reply], [waitErr, acknowledged]] = results as [
    [Error | null, unknown],
    [Error | null, unknown],
  ];
  if (scriptErr) throw mapScriptError(scriptErr);
  if (waitErr) throw mapScriptError(waitErr);
  return { reply: reply as ScriptReply<N>, acknowledged: Number(acknowledged) };
}
