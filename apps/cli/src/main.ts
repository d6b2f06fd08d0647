/**
 * The Baton CLI: `npm run baton -- <command>` (or the `baton` bin).
 * Client commands go through the gateway with a token, as any client would; operator commands
 * (exec, rebuild, shards, token) talk to Redis directly. Every error is one line and exit code 1
 * (2 for a usage error).
 */
import { BatonClient, BatonError } from '@baton/client';
import { CLI, COMMON, ConfigError, GATEWAY, RUN, loadConfig } from '@baton/config';
import { enqueueExecution, executionQueue } from '@baton/jobs';
import { SCHEMA_VERSION, type AgentSpec, type CommandResult } from '@baton/protocol';
import { EventStore, connectRedis, redact, redisTargetFromUrl } from '@baton/store';
import { embeddedRedisUrl } from '../../baton/src/embedded-redis';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { localSecret, mintToken, type Scope } from '../../baton/src/token';
import { rebuildTask, shardOwnership, taskView } from './redis-commands';

export const USAGE = `usage: baton <command> [options]

client commands (through the gateway; BATON_GATEWAY_URL, BATON_TOKEN):
  tail <task> [--session S] [--from-seq N]      print a task's view, then every update (JSON lines)
  prompt <task> <session> <text> [--key K] [--origin human|agent|workflow|wakeup]
                                                submit a prompt; prints its decision
  queue <task> <session>                        list the session's prompt queue
  queue <task> <session> cancel <promptId>      remove a queued prompt
  queue <task> <session> send-now <promptId>    run a queued prompt next
  queue <task> <session> auto-run on|off        let the queue drain by itself, or not
  cancel <task> <session>                       cancel the running turn

operator commands (straight to Redis; REDIS_URL, BATON_PREFIX, BATON_SHARDS):
  exec <task> <session> --recording NAME [--speed F]    start a replay execution
  exec <task> <session> [--mode M] -- <command> [args…]  start an execution of an ACP agent
                                                (--tenant T: the task's tenant, default local)
  rebuild <task> [--state]                      fold the task's stream from its start (from its snapshot
                                                only when the stream was trimmed behind it); print its view
  shards                                        show who owns each shard
  token [--tenant T] [--scopes read,prompt,admin] [--expires 30d]
                                                mint a client token (BATON_JWT_SECRET or the local one)`;

export class UsageError extends Error {}

type Out = (line: string) => void;

function env() {
  return loadConfig({ ...COMMON, ...GATEWAY, ...RUN, ...CLI });
}

function positionals(args: string[], names: string[], command: string): string[] {
  if (args.length < names.length) {
    throw new UsageError(`${command} needs ${names.map((n) => `<${n}>`).join(' ')}`);
  }
  return args;
}

function parse(argv: string[], options: ParseArgsConfig['options'] = {}) {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

async function withClient<T>(fn: (c: BatonClient) => Promise<T>): Promise<T> {
  const config = env();
  const tokenFile = resolve(config.BATON_DATA_DIR, 'token');
  const token =
    config.BATON_TOKEN ??
    (existsSync(tokenFile) ? readFileSync(tokenFile, 'utf8').trim() : undefined);
  if (!token) {
    throw new UsageError(
      `no token: set BATON_TOKEN (or run Baton once with npm start, which saves one in ${tokenFile})`,
    );
  }
  const client = new BatonClient({ requestTimeoutMs: 10_000 });
  try {
    await client.connect(`${config.BATON_GATEWAY_URL.replace(/^http/, 'ws')}/ws`, token);
  } catch (err) {
    throw new Error(
      `cannot connect to the gateway at ${config.BATON_GATEWAY_URL}: ${message(err)}`,
    );
  }
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

/**
 * The Redis an operator command acts on: REDIS_URL when it is set, else the one-process run's own
 * server (its socket in BATON_DATA_DIR), else REDIS_URL's default.
 */
export function operatorRedisUrl(config: ReturnType<typeof env>): string {
  if (process.env.REDIS_URL) return config.REDIS_URL;
  return embeddedRedisUrl(resolve(config.BATON_DATA_DIR)) ?? config.REDIS_URL;
}

async function withStore<T>(fn: (store: EventStore) => Promise<T>): Promise<T> {
  const config = env();
  const redisUrl = operatorRedisUrl(config);
  const store = EventStore.connect(
    redisTargetFromUrl(redisUrl),
    { shards: config.BATON_SHARDS, prefix: config.BATON_PREFIX },
    { maxRetriesPerRequest: 1, maxReconnectDelayMs: 200 },
  );
  // Failures surface as the command's one-line error, not as ioredis's event log.
  let cause: Error | undefined;
  store.redis.on('error', (err: Error) => (cause = err));
  try {
    await store.redis.ping();
  } catch (err) {
    await store.close().catch(() => undefined);
    throw new Error(`cannot reach Redis at ${redact(redisUrl)}: ${cause?.message ?? message(err)}`);
  }
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

export async function run(argv: string[], out: Out, signal?: AbortSignal): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'tail': {
      const { positionals: p, values } = parse(rest, {
        session: { type: 'string' },
        'from-seq': { type: 'string' },
      });
      const [taskId] = positionals(p, ['task'], 'tail');
      const fromSeq = values['from-seq'] === undefined ? undefined : Number(values['from-seq']);
      if (fromSeq !== undefined && !(Number.isInteger(fromSeq) && fromSeq >= 0)) {
        throw new UsageError('--from-seq must be a whole number');
      }
      await withClient(async (client) => {
        const sub = client.subscribe(taskId!, {
          ...(typeof values.session === 'string' ? { sessionId: values.session } : {}),
          onView: (view, cause) => {
            if (cause !== 'update') out(JSON.stringify({ type: cause, view }));
          },
          onUpdate: (update) => out(JSON.stringify(update)),
        });
        await sub.ready;
        await new Promise<void>((done) => {
          if (signal?.aborted) return done();
          signal?.addEventListener('abort', () => done(), { once: true });
          process.once('SIGINT', () => done());
        });
      });
      return;
    }
    case 'prompt': {
      const { positionals: p, values } = parse(rest, {
        key: { type: 'string' },
        origin: { type: 'string' },
      });
      const [taskId, sessionId, ...words] = positionals(p, ['task', 'session', 'text'], 'prompt');
      const origin = (values.origin ?? 'human') as string;
      if (!['human', 'agent', 'workflow', 'wakeup'].includes(origin)) {
        throw new UsageError('--origin must be human, agent, workflow or wakeup');
      }
      const d = await withClient((c) =>
        c.prompt(
          {
            taskId: taskId!,
            sessionId: sessionId!,
            text: words.join(' '),
            idempotencyKey: typeof values.key === 'string' ? values.key : randomUUID(),
            origin: origin as 'human',
          },
          { onPending: () => out('pending: accepted, waiting for its decision') },
        ),
      );
      out(
        JSON.stringify({ promptId: d.promptId, idempotencyKey: d.idempotencyKey, ...d.decision }),
      );
      return;
    }
    case 'queue': {
      const { positionals: p } = parse(rest);
      const [taskId, sessionId, action, arg] = positionals(p, ['task', 'session'], 'queue');
      const ref = { taskId: taskId!, sessionId: sessionId! };
      await withClient(async (c) => {
        if (action === undefined) {
          out(JSON.stringify(await c.queue.list(ref)));
        } else if (action === 'cancel' && arg) {
          out(commandOutcome(await c.queue.cancel({ ...ref, promptId: arg })));
        } else if (action === 'send-now' && arg) {
          out(commandOutcome(await c.queue.sendNow({ ...ref, promptId: arg })));
        } else if (action === 'auto-run' && (arg === 'on' || arg === 'off')) {
          out(commandOutcome(await c.queue.setAutoRun({ ...ref, enabled: arg === 'on' })));
        } else {
          throw new UsageError(
            'queue actions: cancel <promptId>, send-now <promptId>, auto-run on|off',
          );
        }
      });
      return;
    }
    case 'cancel': {
      const [taskId, sessionId] = positionals(
        parse(rest).positionals,
        ['task', 'session'],
        'cancel',
      );
      out(
        commandOutcome(
          await withClient((c) => c.cancel({ taskId: taskId!, sessionId: sessionId! })),
        ),
      );
      return;
    }
    case 'exec': {
      const dash = rest.indexOf('--');
      const own = dash === -1 ? rest : rest.slice(0, dash);
      const agentArgv = dash === -1 ? [] : rest.slice(dash + 1);
      const { positionals: p, values } = parse(own, {
        recording: { type: 'string' },
        speed: { type: 'string' },
        mode: { type: 'string' },
        'execution-id': { type: 'string' },
        tenant: { type: 'string' },
      });
      const [taskId, sessionId] = positionals(p, ['task', 'session'], 'exec');
      let agent: AgentSpec;
      if (typeof values.recording === 'string') {
        const speed = values.speed === undefined ? 1 : Number(values.speed);
        if (!(speed >= 0)) throw new UsageError('--speed must be a number ≥ 0');
        agent = { kind: 'recording', recording: values.recording, speed };
      } else if (agentArgv.length > 0) {
        agent = { kind: 'command', command: agentArgv[0]!, args: agentArgv.slice(1), env: {} };
      } else {
        throw new UsageError('exec needs --recording NAME or -- <command> [args…]');
      }
      const executionId =
        typeof values['execution-id'] === 'string' ? values['execution-id'] : randomUUID();
      // The task is its tenant's: the clients of that tenant (and only they) see it.
      const tenant = typeof values.tenant === 'string' ? values.tenant : 'local';
      const owner = await withStore((store) => store.tenants.claim(taskId!, tenant));
      if (owner !== tenant) throw new Error(`task ${taskId} belongs to another tenant`);
      const config = env();
      const redis = connectRedis(redisTargetFromUrl(operatorRedisUrl(config)), {
        maxRetriesPerRequest: 1,
      });
      redis.on('error', () => undefined);
      const queue = executionQueue(redis, config.BATON_PREFIX);
      try {
        await enqueueExecution(queue, {
          v: SCHEMA_VERSION,
          taskId: taskId!,
          sessionId: sessionId!,
          executionId,
          agent,
          ...(typeof values.mode === 'string' ? { mode: values.mode } : {}),
        });
      } finally {
        await queue.close();
        redis.disconnect();
      }
      out(JSON.stringify({ executionId, taskId, sessionId, tenant }));
      return;
    }
    case 'rebuild': {
      const { positionals: p, values } = parse(rest, { state: { type: 'boolean' } });
      const [taskId] = positionals(p, ['task'], 'rebuild');
      const r = await withStore((store) => rebuildTask(store, taskId!));
      out(
        JSON.stringify(
          {
            entries: r.entries,
            fromSnapshot: r.fromSnapshot,
            undecided: r.undecided,
            view: taskView(r.state),
            ...(values.state ? { state: r.state } : {}),
          },
          null,
          2,
        ),
      );
      return;
    }
    case 'shards': {
      const rows = await withStore((store) => shardOwnership(store));
      const held = rows.filter((r) => r.owner !== null);
      const byOwner = new Map<string, number[]>();
      for (const r of held) byOwner.set(r.owner!, [...(byOwner.get(r.owner!) ?? []), r.shard]);
      out(`${held.length}/${rows.length} shards owned`);
      for (const [owner, shards] of byOwner) out(`${owner}\t${shards.length}\t${shards.join(',')}`);
      const free = rows.filter((r) => r.owner === null).map((r) => r.shard);
      if (free.length > 0) out(`(free)\t${free.length}\t${free.join(',')}`);
      return;
    }
    case 'token': {
      const { values } = parse(rest, {
        tenant: { type: 'string' },
        scopes: { type: 'string' },
        expires: { type: 'string' },
      });
      const scopes = String(values.scopes ?? 'read,prompt').split(',') as Scope[];
      const bad = scopes.find((s) => !['read', 'prompt', 'admin'].includes(s));
      if (bad !== undefined) throw new UsageError(`unknown scope ${bad}: read, prompt, admin`);
      const config = env();
      const secret = config.BATON_JWT_SECRET ?? localSecret(resolve(config.BATON_DATA_DIR));
      out(
        await mintToken(
          secret,
          {
            tenant: String(values.tenant ?? 'local'),
            scopes,
            ...(config.BATON_JWT_ISSUER ? { issuer: config.BATON_JWT_ISSUER } : {}),
          },
          String(values.expires ?? '30d'),
        ),
      );
      return;
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      out(USAGE);
      return;
    default:
      throw new UsageError(`unknown command ${command}; try baton help`);
  }
}

/** A command the owner refused is an error (exit 1); done or still pending is printed. */
function commandOutcome(r: CommandResult): string {
  if (r.status === 'failed') throw new Error(`${r.reason}: ${r.message}`);
  return JSON.stringify(r);
}

function message(err: unknown): string {
  if (err instanceof BatonError) return `${err.code}: ${err.message}`;
  if (err instanceof AggregateError) return err.errors.map(message).join('; ');
  return err instanceof Error ? err.message : String(err);
}

if (require.main === module) {
  run(process.argv.slice(2), (line) => process.stdout.write(`${line}\n`)).then(
    () => process.exit(0),
    (err: unknown) => {
      const text = err instanceof ConfigError ? err.problems.join('; ') : message(err);
      process.stderr.write(`baton: ${text.split('\n')[0]}\n`);
      process.exit(err instanceof UsageError || err instanceof ConfigError ? 2 : 1);
    },
  );
}
