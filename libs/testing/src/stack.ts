// A whole Baton on this host for end-to-end tests: the gateway stack (redis-server, a projector,
// a gateway) and a real worker replaying recorded agents under the operator's profiles, with a
// tenant's token and the reads a test makes of the result.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatonClient, type Subscription } from '@baton/client';
import { taskKey, type SessionView, type StreamEntry, type TaskView } from '@baton/protocol';
import { readAll, startStack, token, type Stack } from './gateway';
import { ROOT } from './processes';
import { restClient } from './rest';
import { spawnWorker, stopWorker, type WorkerProcess } from './worker';

/** The bundled recordings of real agents (libs/acp/fixtures/<name>.jsonl). */
export const FIXTURES = join(ROOT, 'libs', 'acp', 'fixtures');

export interface AgentStackOptions {
  /** The operator's agent profiles (BATON_PROFILES' `profiles`), for the gateway and the worker. */
  profiles: Record<string, Record<string, unknown>>;
  /** Recordings of FIXTURES copied into a folder of the worker's own (WORKER_RECORDINGS_DIR). */
  recordings?: string[];
  projectorEnv?: Record<string, string>;
  workerEnv?: Record<string, string>;
  /** false: no worker yet; the test starts its own with `spawnWorker({ ...stack.workerEnv })`. */
  worker?: boolean;
  /** The token's claims beyond its tenant and its scope (`read prompt execute`). */
  claims?: Record<string, unknown>;
}

/** What a test watches of a task over /ws: the client, its subscription, every view it was sent. */
export interface Watched {
  client: BatonClient;
  sub: Subscription;
  views: TaskView[];
  /** The session as the client shows it now. */
  s(): SessionView | undefined;
}

export interface AgentStack extends Stack {
  readonly tenant: string;
  /** The tenant's token: read, prompt and execute. */
  readonly token: string;
  readonly worker: WorkerProcess | undefined;
  /** The env a worker of this stack runs with: the stack's, the profiles, the recordings. */
  readonly workerEnv: Record<string, string>;
  /** The first gateway's REST API, as the tenant (or as the token a call names). */
  rest: ReturnType<typeof restClient>;
  /** Starts an execution of a session (`s` unless named) over REST: the answer (202: started). */
  execute(
    taskId: string,
    job: { profile: string; [k: string]: unknown },
    sessionId?: string,
  ): ReturnType<AgentStack['rest']>;
  /** Every entry of the tenant's task `taskId`, in order. */
  stream(taskId: string): Promise<StreamEntry[]>;
  /** A session of the tenant's task as the projector's view holds it. */
  session(taskId: string, sessionId?: string): Promise<SessionView | undefined>;
  /** A @baton/client connected to the first gateway's /ws with the tenant's token. */
  connect(): Promise<BatonClient>;
  /** A client subscribed to the task's view, keeping every view it is sent. */
  watch(taskId: string, sessionId?: string): Promise<Watched>;
}

/**
 * Redis, a projector and a gateway (startStack) and a worker on them, every one a real process,
 * serving one tenant (`acme`) whose agents are the given profiles.
 */
export async function startAgentStack(o: AgentStackOptions): Promise<AgentStack> {
  const tenant = 'acme';
  const profiles = JSON.stringify({ profiles: o.profiles });
  const dir = o.recordings ? mkdtempSync(join(tmpdir(), 'baton-recordings-')) : undefined;
  for (const r of o.recordings ?? [])
    copyFileSync(join(FIXTURES, `${r}.jsonl`), join(dir!, `${r}.jsonl`));
  const stack = await startStack({
    gateways: 1,
    projectors: 1,
    gatewayEnv: { BATON_PROFILES: profiles },
    ...(o.projectorEnv ? { projectorEnv: o.projectorEnv } : {}),
  });
  const workerEnv = {
    ...stack.env,
    BATON_PROFILES: profiles,
    ...(dir ? { WORKER_RECORDINGS_DIR: dir } : {}),
    ...o.workerEnv,
  };
  const worker = o.worker === false ? undefined : await spawnWorker(workerEnv);
  const tok = token({ ...o.claims, tenant, scope: 'read prompt execute' });
  const gateway = stack.gateways[0]!;
  const connect = async () => {
    const client = new BatonClient();
    await client.connect(`${gateway.wsUrl}/ws`, tok);
    return client;
  };
  const rest = restClient(gateway.url, tok);
  return {
    ...stack,
    tenant,
    token: tok,
    worker,
    workerEnv,
    rest,
    execute: (taskId, job, sessionId = 's') =>
      rest('POST', `/v1/tasks/${taskId}/sessions/${sessionId}/executions`, job),
    stream: (taskId) => readAll(stack.store, taskKey(tenant, taskId)),
    session: async (taskId, sessionId = 's') =>
      (await stack.store.views.read(taskKey(tenant, taskId)))?.sessions.find(
        (s) => s.sessionId === sessionId,
      ),
    connect,
    watch: async (taskId, sessionId = 's') => {
      const client = await connect();
      const views: TaskView[] = [];
      const sub = client.subscribe(taskId, { onView: (v) => views.push(v) });
      await sub.ready;
      const s = () => sub.view?.sessions.find((x) => x.sessionId === sessionId);
      return { client, sub, views, s };
    },
    stop: async () => {
      await stopWorker(worker);
      await stack.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
