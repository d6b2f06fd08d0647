import type { StreamEntry } from '@baton/protocol';
import { startRedis, type RedisServer } from '@baton/redis-server';
import { EventStore } from '@baton/store';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  readAll,
  startProjectorsAndGateway,
  token,
  waitFor,
  type Services,
  spawnWorker,
  writeBusyRecording,
  type WorkerProcess,
} from '@baton/testing';
import { composeEnv, composeRedisArgs, composeRedisUrl, type Role } from '../compose-file';
import { restPrompt } from './support';

/**
 * Redis killed with SIGKILL and restarted under the compose file's own arguments: its ACL users,
 * AOF with fsync always. Every role runs as its own process under its own Redis user, as compose
 * runs them. Redis replays its append-only file as the `default` user, and Redis 7.0 re-checks the
 * ACL at every replayed EXEC: with a `default` user that may do nothing, every script write and
 * transaction (appends, decisions, the job queue) would be dropped on load. What must survive:
 * every entry written before the kill, every prompt a client was told was accepted, and every
 * running agent (its turn ends normally, the queue behind it drains).
 */

jest.setTimeout(180_000);

const PREFIX = 'baton'; // the compose users' key patterns are written for it
const SHARDS = 4;
const TASKS = 4;
const PROMPTS_PER_TASK = 6;
const TENANT = 'acme';
/** Each turn: 80 chunks 100 ms apart, so the one running when Redis dies spans the restart. */
const CHUNKS = 80;
const GAP_MS = 100;
const tok = token({ tenant: TENANT, scope: 'read prompt execute' });

let redis: RedisServer;
let store: EventStore;
let services: Services;
let worker: WorkerProcess;
const recordings = mkdtempSync(join(tmpdir(), 'baton-acl-restart-'));

beforeAll(async () => {
  redis = await startRedis({ aof: true, args: composeRedisArgs() });
  writeBusyRecording(join(recordings, 'busy.jsonl'), CHUNKS, GAP_MS);
  const env = (role: Role) => composeEnv(role, redis.url, SHARDS);
  // The test reads streams as the projector does, under the projector's user.
  store = EventStore.connect(
    { url: composeRedisUrl('projector', redis.url) },
    { shards: SHARDS, prefix: PREFIX },
  );
  [services, worker] = await Promise.all([
    startProjectorsAndGateway({ projectors: [env('projector')], gateway: env('gateway') }),
    spawnWorker({
      ...env('worker'),
      WORKER_CONCURRENCY: String(TASKS),
      WORKER_RECORDINGS_DIR: recordings,
    }),
  ]);
});
afterAll(async () => {
  worker?.child.kill('SIGTERM');
  await Promise.all([services?.stop(), worker?.exited]);
  await store?.close();
  await redis?.stop();
  rmSync(recordings, { recursive: true, force: true });
});

const taskIds = Array.from({ length: TASKS }, (_, i) => `acl-${i}`);
const key = (taskId: string) => `${TENANT}/${taskId}`;
const entriesOf = (taskId: string) => readAll(store, key(taskId));
const ofType = (entries: StreamEntry[], type: StreamEntry['type']) =>
  entries.filter((e) => e.type === type);

it('a restart with the shipped ACL keeps every acknowledged write and every running agent', async () => {
  for (const taskId of taskIds) {
    const res = await fetch(`${services.gateway.url}/v1/tasks/${taskId}/sessions/s1/executions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
      body: JSON.stringify({ executionId: 'x1', profile: 'replay', recording: 'busy.jsonl' }),
    });
    expect(res.status).toBe(202);
  }
  // Prompts from every task's client at once: the first runs, the rest queue behind it.
  const acknowledged = new Map<string, string[]>(taskIds.map((t) => [t, []]));
  await Promise.all(
    taskIds.map(async (taskId) => {
      for (let p = 0; p < PROMPTS_PER_TASK; p++) {
        const k = `${taskId}-p${p}`;
        const r = await restPrompt(services.gateway.url, tok, taskId, k);
        expect([200, 202]).toContain(r.status);
        acknowledged.get(taskId)!.push(k);
      }
    }),
  );
  // Every agent mid-turn: its output is in the stream.
  await waitFor(
    async () =>
      (await Promise.all(taskIds.map(entriesOf))).every(
        (es) => ofType(es, 'foreground.output').length > 0,
      ),
    'every agent streaming',
    60_000,
  );

  const before = await Promise.all(taskIds.map(entriesOf));
  await redis.kill();
  await redis.restart();

  const after = await waitFor(
    async () => {
      try {
        return await Promise.all(taskIds.map(entriesOf));
      } catch {
        return undefined; // Redis still loading, or the store reconnecting
      }
    },
    'the streams readable again',
    30_000,
  );
  for (const [i, taskId] of taskIds.entries()) {
    // Nothing written before the kill is gone or changed: the stream then is a prefix of now.
    expect([taskId, after[i]!.slice(0, before[i]!.length)]).toEqual([taskId, before[i]]);
    const submitted = ofType(after[i]!, 'prompt.submit').map(
      (e) => (e.data as { idempotencyKey: string }).idempotencyKey,
    );
    expect([taskId, submitted]).toEqual([taskId, acknowledged.get(taskId)]);
  }

  // The agents outlived the restart: each first turn ends normally, and the queue behind it
  // drains (the second prompt is admitted), with no execution declared lost.
  const final = await waitFor(
    async () => {
      const all = await Promise.all(taskIds.map(entriesOf));
      return all.every(
        (es) => ofType(es, 'turn.ended').length > 0 && ofType(es, 'prompt.admitted').length >= 2,
      )
        ? all
        : undefined;
    },
    'every first turn ended and the next prompt admitted',
    90_000,
  );
  for (const [i, taskId] of taskIds.entries()) {
    expect([taskId, ofType(final[i]!, 'execution.lost')]).toEqual([taskId, []]);
    expect(ofType(final[i]!, 'turn.ended')[0]).toMatchObject({ data: { stopReason: 'end_turn' } });
  }
});
