// End to end: a real redis-server, a real projector process, a real gateway process, this client.
// The gateway is killed (-9) and started again on the same port while the task moves on; the
// client must resume and miss nothing, and a prompt whose reply died with the gateway must be
// made once.
import { randomBytes } from 'node:crypto';
import { taskKey, type TaskView, type Update } from '@baton/protocol';
import { freePort, startRedis, type RedisServer } from '@baton/redis-server';
import { EventStore } from '@baton/store';
import { BatonClient, type ViewCause } from '../src';
import {
  FakeWorker,
  readAll,
  shellStarted,
  spawnGateway,
  spawnProjector,
  token as signToken,
  waitFor,
  type GatewayProc,
  type ServiceProc,
} from '@baton/testing';

jest.setTimeout(120_000);

let redis: RedisServer;
let store: EventStore;
let env: Record<string, string>;
let port: number;
let gateway: GatewayProc;
let projector: ServiceProc;
let token: string;
const clients: BatonClient[] = [];

/** On the same port each time: the client comes back to the address it knew. */
const startGateway = () =>
  spawnGateway({
    ...env,
    GATEWAY_PORT: String(port),
    // Long enough that a prompt is still waiting for its decision when the gateway dies.
    GATEWAY_ADMISSION_WAIT_MS: '30000',
  });
const startProjector = () =>
  spawnProjector({ ...env, PROJECTOR_LEASE_TTL_MS: '1000', PROJECTOR_RENEW_MS: '200' });
const kill = (p: ServiceProc) => p.stop('SIGKILL');
const wsUrl = () => `ws://127.0.0.1:${port}/ws`;
const everyShardOwned = () =>
  waitFor(
    async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null))?.status === 200,
    'every shard owned',
    30_000,
  );

async function newClient(): Promise<BatonClient> {
  const c = new BatonClient({ backoff: { initialMs: 20, maxMs: 200 } });
  clients.push(c);
  await c.connect(wsUrl(), token);
  return c;
}

/** The task key below the gateway of the test tenant's (acme's) task id. */
const K = (taskId: string) => taskKey('acme', taskId);

/** Writes facts as the worker hosting one execution of a session does (the job names the key). */
const worker = (clientTaskId: string, sessionId: string) =>
  new FakeWorker(store, K(clientTaskId), sessionId);

const streamOf = (taskId: string) => readAll(store, K(taskId));

beforeAll(async () => {
  redis = await startRedis();
  const prefix = `c${randomBytes(3).toString('hex')}`;
  env = { REDIS_URL: redis.url, BATON_PREFIX: prefix, BATON_SHARDS: '4' };
  store = EventStore.connect({ url: redis.url }, { shards: 4, prefix });
  port = await freePort();
  token = signToken({ tenant: 'acme', scope: 'read prompt' });
  [gateway, projector] = await Promise.all([startGateway(), startProjector()]);
  await everyShardOwned();
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all([gateway, projector].filter(Boolean).map((p) => kill(p)));
  await store?.close();
  await redis?.stop();
});

describe('@baton/client end to end (redis, projector, gateway processes)', () => {
  it('subscribes, prompts (admitted, then queued) and resumes across a gateway crash missing nothing', async () => {
    const taskId = `task-${randomBytes(3).toString('hex')}`;
    const client = await newClient();
    const seen: Update[] = [];
    const causes: ViewCause[] = [];
    let resyncs = 0;
    const sub = client.subscribe(taskId, {
      onUpdate: (u) => seen.push(u),
      onView: (_v, c) => causes.push(c),
      onResync: () => resyncs++,
    });
    const first = await sub.ready;
    expect(first).toMatchObject({ taskId, seq: 0, sessions: [] });

    const w = worker(taskId, 's1');
    await w.start();
    const a = await client.prompt({ taskId, sessionId: 's1', text: 'first' });
    expect(a.decision).toMatchObject({ outcome: 'admitted', mode: 'turn' });
    const b = await client.prompt({ taskId, sessionId: 's1', text: 'second' });
    expect(b.decision).toEqual({ outcome: 'queued', position: 1, reason: 'busy' });
    await waitFor(() => sub.view!.sessions[0]?.queue.entries.length === 1, 'condition');

    // The gateway dies; the task moves on without it: the first turn runs and ends, the queued
    // prompt is admitted, and background work starts.
    const reconnected = client.next('open', (e) => e.reconnected);
    await kill(gateway);
    const before = sub.seq;
    if (a.decision.outcome !== 'admitted') throw new Error('unreachable');
    const g = a.decision.admissionGeneration;
    await w.fact('prompt.dispatched', { promptId: a.promptId, admissionGeneration: g });
    await w.fact('foreground.output', { channel: 'message' });
    await w.fact('background.started', shellStarted('shell:1', 'npm test'));
    await w.fact('turn.ended', { admissionGeneration: g, stopReason: 'end_turn' });
    await waitFor(
      async () => (await store.lastUpdateSeq(K(taskId))) > before + 3,
      'updates',
      15_000,
    );
    gateway = await startGateway();
    await reconnected;

    await waitFor(async () => sub.seq === (await store.lastUpdateSeq(K(taskId))), 'resume', 15_000);
    await waitFor(() => sub.state === 'live', 'condition');
    // Nothing missed: every seq after the snapshot, once, in order; no resync was needed.
    expect(seen.map((u) => u.seq)).toEqual(seen.map((_, i) => first.seq + i + 1));
    expect(resyncs).toBe(0);
    expect(causes.filter((c) => c !== 'update')).toEqual(['snapshot']);
    // The local view is the server's: the stored read model and a fresh subscriber's snapshot.
    const stored = await waitFor(
      async () => {
        const v = await store.views.read(K(taskId));
        return v && v.seq === sub.seq ? { ...v, taskId } : undefined;
      },
      'the stored view',
      15_000,
    );
    expect(sub.view).toEqual(stored);
    const fresh = await (await newClient()).subscribe(taskId).ready;
    expect(sub.view).toEqual(fresh as TaskView);
    const s1 = sub.view!.sessions[0]!;
    expect(s1.queue.entries).toEqual([]);
    expect(s1.backgroundWork.map((x) => x.id)).toEqual(['shell:1']);
    expect(s1.activity.state).toBe('running'); // the second prompt holds the foreground now
    const decided = seen.filter(
      (u) => u.type === 'prompt.decided' && u.data.promptId === b.promptId,
    );
    expect(decided.map((u) => u.type === 'prompt.decided' && u.data.decision.outcome)).toEqual([
      'queued',
      'admitted',
    ]);
  });

  it('a prompt whose reply died with the gateway is sent again under its key and made once', async () => {
    const taskId = `task-${randomBytes(3).toString('hex')}`;
    const client = await newClient();
    await worker(taskId, 's1').start();
    // No owner: the prompt lands in the stream and nobody decides it while the gateway waits.
    await kill(projector);
    const key = `key-${randomBytes(3).toString('hex')}`;
    const pending = client.prompt({ taskId, sessionId: 's1', text: 'once', idempotencyKey: key });
    const submits = async () =>
      (await streamOf(taskId)).filter(
        (e) => e.type === 'prompt.submit' && e.data.idempotencyKey === key,
      );
    await waitFor(async () => (await submits()).length === 1, 'the first submit', 15_000);
    await kill(gateway);
    [gateway, projector] = await Promise.all([startGateway(), startProjector()]);
    const d = await pending;

    const all = await submits();
    expect(all).toHaveLength(2); // the retry reached the stream under the same key…
    const first = all[0]!.type === 'prompt.submit' ? all[0]!.data.promptId : '';
    expect(d.promptId).toBe(first); // …and was answered with the first prompt's decision
    expect(d.decision.outcome).toBe('admitted');
    const decisions = (await streamOf(taskId)).filter(
      (e) => e.type === 'prompt.admitted' || e.type === 'prompt.queued',
    );
    expect(decisions.map((e) => 'promptId' in e.data && e.data.promptId)).toEqual([first]);
  });
});
