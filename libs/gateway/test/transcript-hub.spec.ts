import { startRedis, type RedisServer } from '@baton/redis-server';
import { EventStore } from '@baton/store';
import { waitFor } from '@baton/testing';
import pino from 'pino';
import { TranscriptHub, type TranscriptFrame } from '../src/transcripts/transcript-hub';

/**
 * The transcript hub reads every followed stream of a shard with one blocking XREAD and wakes it
 * (CLIENT UNBLOCK) when a task is followed. The shipped gateway user may not CLIENT UNBLOCK (it is
 * @dangerous): a newly followed task must still be read without waiting out the blocked read.
 */

jest.setTimeout(60_000);

/** Longer than the wait below: a follow that had to wait out the read would miss it. */
const BLOCK_MS = 60_000;

let server: RedisServer;
let store: EventStore;
let hub: TranscriptHub;

beforeAll(async () => {
  server = await startRedis();
  const admin = EventStore.connect({ url: server.url }, { shards: 1, prefix: 'th' });
  // As the compose file's gateway user: every command but the dangerous ones.
  await admin.redis.call('ACL', 'SETUSER', 'gw', 'on', '>pw', '~*', '+@all', '-@dangerous');
  await admin.close();
  const url = server.url.replace('redis://', 'redis://gw:pw@');
  store = EventStore.connect({ url }, { shards: 1, prefix: 'th' });
  hub = new TranscriptHub(store, pino({ level: 'silent' }), BLOCK_MS);
});
afterAll(async () => {
  await hub?.stop();
  await store?.close();
  await server?.stop();
});

const text = (delta: string) => ({
  sessionId: 's1',
  executionId: 'x1',
  event: { type: 'text', turn: 'p1', phase: 'turn', item: 'm1', role: 'agent', delta } as const,
});

it('a task followed while the shard’s read is blocked is read, without CLIENT UNBLOCK', async () => {
  await expect(store.redis.client('UNBLOCK', 1)).rejects.toThrow(/NOPERM/);
  const seen = new Map<string, TranscriptFrame[]>();
  const follower = (task: string) => ({
    offer: (frames: readonly TranscriptFrame[]) =>
      seen.set(task, [...(seen.get(task) ?? []), ...frames]),
  });
  await hub.follow('t/a', follower('t/a'));
  // The shard's read is now blocked on t/a alone.
  await store.transcripts.append('t/a', [text('a1')]);
  await waitFor(() => seen.get('t/a')?.length === 1, 't/a read');
  await hub.follow('t/b', follower('t/b'));
  await store.transcripts.append('t/b', [text('b1')]);
  await waitFor(
    () => seen.get('t/b')?.length === 1,
    't/b read while the first read blocks',
    10_000,
  );
  expect(seen.get('t/b')![0]!.stored?.event).toMatchObject({ delta: 'b1' });
});
