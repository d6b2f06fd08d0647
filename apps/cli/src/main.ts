/**
 * The Baton CLI: `npm run baton -- <command>` (or the `baton` bin).
 * Client commands (exec included) go through the gateway with a token, as any client would;
 * operator commands (rebuild, shards) read Redis directly and say on stderr which Redis and
 * prefix they act on; token mints a token. Every error is one line and exit code 1 (2 for a
 * usage error).
 */
import { BatonClient, BatonError } from '@baton/client';
import { CLI, COMMON, ConfigError, GATEWAY, RUN, loadConfig, optional } from '@baton/config';
import {
  TaskHistory,
  TaskView,
  TenantId,
  taskKey,
  type CommandResult,
  type TranscriptEntry,
  type TranscriptGap,
} from '@baton/protocol';
import { EventStore, redact, redisTargetFromUrl } from '@baton/store';
import { embeddedRedisUrl } from '@baton/redis-server';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { SCOPES, localSecret, mintToken, type Scope } from '@baton/auth';
import { formatHistory, parseWhen } from './history-format';
import { ANSI, Follower, PLAIN, formatTranscript, type Style } from './transcript-format';
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
  permissions <task> <session>                  list the permission requests waiting for a person
  permissions <task> <session> answer <requestId> <optionId>
                                                answer one with an option the agent offered (a
                                                request already answered is refused, unchanged)
  session <task> <session> reset                clear the session's activity, stop its execution
                                                (the queue stays)
  session <task> <session> delete               delete the session: its queue is discarded (each
                                                prompt told why), its execution stopped (delete scope)
  session <task> <session> force-release [--reason R]
                                                end the running turn now and stop the execution
                                                (admin scope)
  task <task> archive|unarchive                 archive the task (no prompts, no executions, queues
                                                discarded) or take it back
  task <task> delete                            delete the task for good: a tombstone, its id stays
                                                taken (delete scope)
  history <task> [session] [--since T] [--until T] [--json]
                                                what happened, when: activity, turns, background
                                                work, prompts (queue waits), executions; T is 30m,
                                                2h, 1d (ago), ms since the epoch or ISO 8601
                                                (default: the last day)
  transcript <task> [session] [--after CURSOR] [--json]
                                                the conversation: prompts, the agent's text and
                                                thoughts, tool calls (command, path, diff, output),
                                                permissions and how they were settled, usage (every
                                                session without one; --json: the events)
  follow <task> [session] [--after CURSOR] [--json]
                                                the same, live, as it happens (like tail -f)
  exec <task> <session> --profile NAME [--recording R] [--speed F] [--workspace DIR]
                                                start an execution of an agent profile the operator
                                                configured (execute scope; --recording alone: replay);
                                                says "waiting for a worker (position N)" when every
                                                worker slot is taken

operator commands (straight to Redis; REDIS_URL, BATON_PREFIX, BATON_SHARDS):
  rebuild <task> [--tenant T] [--state]         fold the task's stream from its start (from its snapshot
                                                only when the stream was trimmed behind it); print its view
                                                (task ids are the tenant's own; --tenant default local)
  shards                                        show who owns each shard
  token [--tenant T] [--scopes read,prompt,execute,delete,admin] [--expires 30d]
                                                mint a client token (BATON_JWT_SECRET or the local one)`;

export class UsageError extends Error {}

type Out = (line: string) => void;

function env() {
  return loadConfig({
    ...COMMON,
    ...GATEWAY,
    // Unset: the one-process run's local secret (mint).
    BATON_JWT_SECRET: optional(GATEWAY.BATON_JWT_SECRET),
    ...RUN,
    ...CLI,
  });
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

/** `<task> [session] [--after <id>] [--json]`: what `transcript` and `follow` take. */
function transcriptArgs(argv: string[], command: string) {
  const { positionals: p, values } = parse(argv, {
    after: { type: 'string' },
    json: { type: 'boolean' },
  });
  const [taskId, sessionId] = positionals(p, ['task'], command);
  return {
    taskId: taskId!,
    sessionId,
    after: typeof values.after === 'string' ? values.after : undefined,
    json: values.json === true,
  };
}

function clientToken(config: ReturnType<typeof env>): string {
  const tokenFile = resolve(config.BATON_DATA_DIR, 'token');
  const token =
    config.BATON_TOKEN ??
    (existsSync(tokenFile) ? readFileSync(tokenFile, 'utf8').trim() : undefined);
  if (!token) {
    throw new UsageError(
      `no token: set BATON_TOKEN (or run Baton once with npm start, which saves one in ${tokenFile})`,
    );
  }
  return token;
}

/**
 * A REST command (answered with a CommandResult: 200 done, 202 pending, 409 failed) through the
 * gateway with the caller's token; any other refusal is its `error.message`.
 */
async function restCommand(method: string, path: string, body?: unknown): Promise<CommandResult> {
  return (await restCall(method, path, body, [409])) as CommandResult;
}

/** A REST call to the gateway with the caller's token; a refusal is its `error.message`. */
async function restCall(
  method: string,
  path: string,
  body: unknown,
  answers: readonly number[] = [],
): Promise<unknown> {
  const config = env();
  const token = clientToken(config);
  let res: Response;
  try {
    res = await fetch(`${config.BATON_GATEWAY_URL.replace(/\/$/, '')}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err) {
    throw new Error(`cannot reach the gateway at ${config.BATON_GATEWAY_URL}: ${message(err)}`);
  }
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: reported as text
  }
  if (!res.ok && !answers.includes(res.status)) {
    const e = (parsed as { error?: { code?: string; message?: string } })?.error;
    throw new Error(`${res.status} ${e?.code ?? ''}: ${e?.message ?? text}`.replace(' :', ':'));
  }
  return parsed;
}

async function withClient<T>(fn: (c: BatonClient) => Promise<T>): Promise<T> {
  const config = env();
  const token = clientToken(config);
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

async function withStore<T>(fn: (store: EventStore) => Promise<T>, note: Out): Promise<T> {
  const config = env();
  const redisUrl = operatorRedisUrl(config);
  // An operator command acts on whatever Redis that is: say which, before touching it.
  note(
    `baton: operator command on Redis ${redact(redisUrl)}, prefix ${config.BATON_PREFIX}, ${config.BATON_SHARDS} shards`,
  );
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

export async function run(
  argv: string[],
  out: Out,
  signal?: AbortSignal,
  note: Out = (line) => process.stderr.write(`${line}\n`),
): Promise<void> {
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
    case 'permissions': {
      const [taskId, sessionId, action, requestId, optionId] = positionals(
        parse(rest).positionals,
        ['task', 'session'],
        'permissions',
      );
      const ref = { taskId: taskId!, sessionId: sessionId! };
      if (action === undefined) {
        const view = (await restCall(
          'GET',
          `/v1/tasks/${encodeURIComponent(ref.taskId)}/sessions/${encodeURIComponent(ref.sessionId)}`,
          undefined,
        )) as { permissions?: unknown[] };
        for (const p of view.permissions ?? []) out(JSON.stringify(p));
        return;
      }
      if (action !== 'answer' || !requestId || !optionId)
        throw new UsageError('permissions actions: answer <requestId> <optionId>');
      out(
        commandOutcome(
          await withClient((c) => c.answerPermission({ ...ref, requestId, optionId })),
        ),
      );
      return;
    }
    case 'session': {
      const { positionals: p, values } = parse(rest, { reason: { type: 'string' } });
      const [taskId, sessionId, action] = positionals(p, ['task', 'session'], 'session');
      const path = `/v1/tasks/${encodeURIComponent(taskId!)}/sessions/${encodeURIComponent(sessionId!)}`;
      if (values.reason !== undefined && action !== 'force-release') {
        throw new UsageError('--reason goes with force-release');
      }
      if (action === 'reset') out(commandOutcome(await restCommand('POST', `${path}/reset`)));
      else if (action === 'delete') out(commandOutcome(await restCommand('DELETE', path)));
      else if (action === 'force-release') {
        const body = typeof values.reason === 'string' ? { reason: values.reason } : {};
        out(commandOutcome(await restCommand('POST', `${path}/force-release`, body)));
      } else throw new UsageError('session actions: reset, delete, force-release [--reason R]');
      return;
    }
    case 'task': {
      const [taskId, action] = positionals(parse(rest).positionals, ['task'], 'task');
      const path = `/v1/tasks/${encodeURIComponent(taskId!)}`;
      if (action === 'archive' || action === 'unarchive') {
        out(commandOutcome(await restCommand('POST', `${path}/${action}`)));
      } else if (action === 'delete') out(commandOutcome(await restCommand('DELETE', path)));
      else throw new UsageError('task actions: archive, unarchive, delete');
      return;
    }
    case 'history': {
      const { positionals: p, values } = parse(rest, {
        since: { type: 'string' },
        until: { type: 'string' },
        json: { type: 'boolean' },
      });
      const [taskId, sessionId] = positionals(p, ['task'], 'history');
      const q = new URLSearchParams();
      try {
        if (typeof values.since === 'string') q.set('since', String(parseWhen(values.since)));
        if (typeof values.until === 'string') q.set('until', String(parseWhen(values.until)));
      } catch (err) {
        throw new UsageError(message(err));
      }
      const path =
        `/v1/tasks/${encodeURIComponent(taskId!)}` +
        (sessionId ? `/sessions/${encodeURIComponent(sessionId)}` : '') +
        `/history${q.size > 0 ? `?${q}` : ''}`;
      const h = TaskHistory.parse(await restCall('GET', path, undefined));
      if (values.json) out(JSON.stringify(h));
      else for (const line of formatHistory(h)) out(line);
      return;
    }
    case 'transcript': {
      const { taskId, sessionId: only, after, json } = transcriptArgs(rest, 'transcript');
      const sessions = only !== undefined ? [only] : await sessionsOf(taskId);
      for (const sessionId of sessions) {
        if (sessions.length > 1 && !json) out(`── session ${sessionId} ──`);
        const entries = await transcriptOf(taskId, sessionId, after, (gap) =>
          note(gapNote(taskId, sessionId, gap)),
        );
        if (json) for (const e of entries) out(JSON.stringify({ sessionId, ...e }));
        else
          for (const l of formatTranscript(
            entries.map((e) => e.event),
            styleOf(),
          ))
            out(l);
      }
      return;
    }
    case 'follow': {
      const { taskId, sessionId: given, after, json } = transcriptArgs(rest, 'follow');
      let sessionId = given;
      if (sessionId === undefined) {
        const sessions = await sessionsOf(taskId);
        if (sessions.length !== 1) {
          throw new UsageError(
            sessions.length === 0
              ? `task ${taskId} has no session yet: name the one to follow`
              : `task ${taskId} has sessions ${sessions.join(', ')}: name the one to follow`,
          );
        }
        sessionId = sessions[0]!;
      }
      const follower = new Follower(out, styleOf());
      await withClient(async (client) => {
        let failed: Error | undefined;
        const done = new Promise<void>((resolve) => {
          if (signal?.aborted) return resolve();
          signal?.addEventListener('abort', () => resolve(), { once: true });
          process.once('SIGINT', () => resolve());
          const reader = client.transcript(taskId, sessionId, {
            ...(after !== undefined ? { after } : {}),
            onEvents: (entries) => {
              if (json) for (const e of entries) out(JSON.stringify(e));
              else follower.take(entries.map((e) => e.event));
            },
            onGap: (gap) => note(gapNote(taskId, sessionId, gap)),
            onError: (err) => {
              failed = err;
              resolve();
            },
          });
          reader.ready.catch(() => undefined);
        });
        await done;
        if (failed) throw failed;
      });
      return;
    }
    case 'exec': {
      if (rest.includes('--')) {
        throw new UsageError(
          'exec starts an agent profile the operator configured; a command cannot be given',
        );
      }
      const { positionals: p, values } = parse(rest, {
        profile: { type: 'string' },
        recording: { type: 'string' },
        speed: { type: 'string' },
        workspace: { type: 'string' },
        'execution-id': { type: 'string' },
      });
      const [taskId, sessionId] = positionals(p, ['task', 'session'], 'exec');
      const profile =
        typeof values.profile === 'string'
          ? values.profile
          : typeof values.recording === 'string'
            ? 'replay'
            : undefined;
      if (profile === undefined) throw new UsageError('exec needs --profile NAME');
      let speed: number | undefined;
      if (values.speed !== undefined) {
        speed = Number(values.speed);
        if (!(speed >= 0)) throw new UsageError('--speed must be a number ≥ 0');
      }
      const executionId =
        typeof values['execution-id'] === 'string' ? values['execution-id'] : randomUUID();
      const path = `/v1/tasks/${encodeURIComponent(taskId!)}/sessions/${encodeURIComponent(sessionId!)}/executions`;
      const started = await restCall('POST', path, {
        executionId,
        profile,
        ...(typeof values.recording === 'string' ? { recording: values.recording } : {}),
        ...(speed !== undefined ? { speed } : {}),
        ...(typeof values.workspace === 'string' ? { workspace: values.workspace } : {}),
      });
      // No free worker slot yet: say so, and where it stands (1: the next a slot takes).
      const { state, position } = started as { state?: unknown; position?: unknown };
      if (state === 'waiting') {
        out(
          typeof position === 'number'
            ? `waiting for a worker (position ${position})`
            : 'waiting for a worker',
        );
      }
      out(JSON.stringify({ ...(started as object), taskId, sessionId, profile }));
      return;
    }
    case 'rebuild': {
      const { positionals: p, values } = parse(rest, {
        state: { type: 'boolean' },
        tenant: { type: 'string' },
      });
      const [taskId] = positionals(p, ['task'], 'rebuild');
      const key = taskKey(tenantOf(values.tenant), taskId!);
      const r = await withStore((store) => rebuildTask(store, key), note);
      out(
        JSON.stringify(
          {
            entries: r.entries,
            fromSnapshot: r.fromSnapshot,
            undecided: r.undecided,
            // The view as the tenant's clients are served it: under their task id.
            view: { ...taskView(r.state), taskId },
            ...(values.state ? { state: r.state } : {}),
          },
          null,
          2,
        ),
      );
      return;
    }
    case 'shards': {
      const rows = await withStore((store) => shardOwnership(store), note);
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
      const bad = scopes.find((s) => !SCOPES.includes(s));
      if (bad !== undefined) throw new UsageError(`unknown scope ${bad}: ${SCOPES.join(', ')}`);
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

/** Colour only for a terminal that shows it (NO_COLOR: https://no-color.org). */
function styleOf(): Style {
  return process.stdout.isTTY && !process.env.NO_COLOR ? ANSI : PLAIN;
}

const sessionPath = (taskId: string, sessionId: string) =>
  `/v1/tasks/${encodeURIComponent(taskId)}/sessions/${encodeURIComponent(sessionId)}`;

/** The task's sessions, as its view has them. */
async function sessionsOf(taskId: string): Promise<string[]> {
  const view = TaskView.parse(
    await restCall('GET', `/v1/tasks/${encodeURIComponent(taskId)}`, undefined),
  );
  return view.sessions.map((s) => s.sessionId);
}

/** Every event of a session's transcript after `after`, page by page. */
/** What a reader is told when the transcript's retention removed events it had not read. */
function gapNote(taskId: string, sessionId: string, gap: TranscriptGap): string {
  return (
    `baton: transcript of ${taskId}/${sessionId}: events after ${gap.after} through ` +
    `${gap.through} were removed (retention) before they were read`
  );
}

async function transcriptOf(
  taskId: string,
  sessionId: string,
  after: string | undefined,
  onGap: (gap: TranscriptGap) => void,
): Promise<TranscriptEntry[]> {
  const all: TranscriptEntry[] = [];
  let cursor = after;
  for (;;) {
    const q = new URLSearchParams({ limit: '500' });
    if (cursor !== undefined) q.set('after', cursor);
    const page = (await restCall(
      'GET',
      `${sessionPath(taskId, sessionId)}/transcript?${q}`,
      undefined,
    )) as { events: TranscriptEntry[]; cursor: string; gap?: TranscriptGap };
    if (page.gap) onGap(page.gap);
    all.push(...page.events);
    // A page may be empty while the cursor moves past other sessions' events; the end is where
    // it no longer moves.
    if (
      page.cursor === cursor ||
      (cursor === undefined && page.events.length === 0 && page.cursor === '0-0')
    )
      return all;
    cursor = page.cursor;
  }
}

/** The tenant a task id belongs to (`--tenant`, default `local`), checked as tokens' claims are. */
function tenantOf(value: unknown): string {
  const tenant = typeof value === 'string' ? value : 'local';
  const r = TenantId.safeParse(tenant);
  if (!r.success) throw new UsageError(`--tenant ${r.error.issues[0]!.message}`);
  return tenant;
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
