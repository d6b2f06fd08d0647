// A client that stops reading falls behind; when it reads again it is told to resync and gets a
// snapshot — updates are never dropped silently. The task's owner is played by the test (it holds
// the shard lease and publishes big updates), so the volume is exactly what the test wants.
import { randomBytes } from 'node:crypto';
import { SCHEMA_VERSION, taskKey, type TaskView, type Update } from '@baton/protocol';
import type { Lease } from '@baton/store';
import { Client, loneGatewayForFile, tokenFor, waitFor } from '@baton/testing';

jest.setTimeout(120_000);

const TASK = 'firehose';
/** The task as its owner names it: the key of the clients' tenant's task. */
const KEY = taskKey('slow', TASK);
const N = 600;
const BLOB = 'b'.repeat(50_000);
const lone = loneGatewayForFile(`slow${randomBytes(2).toString('hex')}`, 1, {
  // 160 of the test's updates: far less than the 30 MB a paused client is sent, more than a
  // reading client usually lags on a loaded machine.
  GATEWAY_MAX_BUFFERED_BYTES: String(8 * 1024 * 1024),
  GATEWAY_MAX_MESSAGES_PER_SECOND: '100000',
});
let lease: Lease;

beforeAll(async () => {
  const r = await lone.store.leases.acquire(0, 'test-owner', 600_000);
  if (!r.acquired) throw new Error('lease');
  lease = r.lease;
});

const update = (seq: number): Update => ({
  v: SCHEMA_VERSION,
  taskId: KEY,
  seq,
  entry: `${seq}-0`,
  last: true,
  type: 'chat/backgroundWorkSet',
  data: {
    sessionId: 's1',
    work: {
      kind: 'shell',
      id: `w${seq}`,
      label: `work ${seq}`,
      command: 'make',
      startedAt: '2026-11-30T00:00:00Z',
      _meta: { blob: BLOB },
    },
  },
});

const view = (seq: number): TaskView => ({
  taskId: KEY,
  seq,
  status: 'active',
  activity: { foregroundActivity: null, activeSubagentCount: 0 },
  sessions: [],
});

type Json = Record<string, unknown>;

/** The last seq of the task a client has: by an update or by a snapshot. */
function lastSeq(c: Client): number {
  let last = 0;
  for (const m of c.messages) {
    if (m.type === 'update') last = Math.max(last, (m.update as Json).seq as number);
    if (m.type === 'snapshot') last = Math.max(last, (m.task as Json).seq as number);
  }
  return last;
}

it('a client that stops reading is told to resync with a snapshot, never left with a silent gap', async () => {
  const tok = tokenFor('slow');
  const [slow, watcher] = await Promise.all([
    Client.connect(lone.gw.wsUrl, tok),
    Client.connect(lone.gw.wsUrl, tok),
  ]);
  await slow.request({ op: 'subscribe', taskId: TASK });
  await watcher.request({ op: 'subscribe', taskId: TASK });
  slow.ws.pause();
  for (let seq = 1; seq <= N; seq += 20) {
    await lone.store.publishUpdates(
      lease,
      KEY,
      Array.from({ length: 20 }, (_, i) => update(seq + i)),
    );
  }
  await lone.store.views.write(lease, view(N));
  // The gateway has handed out everything once a client that reads has reached the last update
  // (by its updates; were it resynced too, by a snapshot, and the check below says so).
  await waitFor(() => lastSeq(watcher) === N, 'the watcher to reach the last update', 60_000);
  slow.ws.resume();
  const snap = await slow.next(
    (m) => m.type === 'snapshot' && m.resync === true,
    'a resync',
    0,
    60_000,
  );
  await waitFor(
    () => slow.messages.some((m) => m.type === 'snapshot' && (m.task as Json).seq === N),
    'caught up',
  );
  expect(slow.closed).toBeUndefined();
  // Before the resync: a gapless prefix. The snapshot covers the rest; nothing after it is missing.
  const at = slow.messages.indexOf(snap);
  const before = slow.messages.slice(0, at).filter((m) => m.type === 'update');
  const seqs = before.map((m) => (m.update as Json).seq);
  expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
  expect(seqs.length).toBeLessThan(N);
  expect((snap.task as Json).seq as number).toBeGreaterThanOrEqual(seqs.length);
  const after = slow.messages.slice(at + 1);
  let seq = (snap.task as Json).seq as number;
  for (const m of after) {
    if (m.type === 'snapshot') seq = (m.task as Json).seq as number;
    else if (m.type === 'update') expect((m.update as Json).seq).toBe(++seq);
  }
  expect(seq).toBe(N);
  // The watcher, which kept reading, got every update in order. On a loaded machine it may fall
  // behind too (the gateway cannot tell a slow reader from a busy one): then it is resynced the
  // same way, never left with a gap or a repeat outside a flagged snapshot.
  let watched = 0;
  for (const m of watcher.messages) {
    if (m.type === 'snapshot') {
      if (m.resync === true) watched = (m.task as Json).seq as number;
    } else if (m.type === 'update') expect((m.update as Json).seq).toBe(++watched);
  }
  expect(watched).toBe(N);
  expect(watcher.messages.filter((m) => m.type === 'snapshot' && m.resync !== true)).toHaveLength(
    1,
  );
  const metrics = await (await fetch(`${lone.gw.url}/metrics`)).text();
  expect(metrics).toMatch(/baton_gateway_resyncs_total\{reason="slow_consumer"\} [1-9]/);
  await Promise.all([slow.close(), watcher.close()]);
});
