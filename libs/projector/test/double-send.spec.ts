// Double send: 50 prompts for one session submitted at once, through 50 gateway writers, against
// a real projector process. Handoff: exactly one takes the attested idle, the rest queue in
// submission (stream) order. Coarse: none while the turn runs; then one at a time as turns end.
import type { EntryOf } from '@baton/protocol';
import type { EventStore, StoredEntry, StoredInboxMessage } from '@baton/store';
import { waitFor } from '@baton/testing';
import {
  CLAUDE_CAPS,
  GENERIC_CAPS,
  Writer,
  foldAll,
  freshPrefix,
  humanPrompt,
  readStream,
  redisForFile,
  sameJson,
  type CommandType,
  type Data,
  type FactType,
} from './support';

jest.setTimeout(180_000);

const N = 50;
const SHARDS = 4;
const redis = redisForFile();
let store: EventStore;

beforeAll(async () => {
  const prefix = freshPrefix();
  store = redis.store(prefix, SHARDS);
  redis.spawn({ prefix, shards: SHARDS, id: 'ds-p' });
  await waitFor(
    async () => (await store.leases.list()).length === SHARDS,
    'the projector owns every shard',
  );
});

class Session {
  readonly worker: Writer;
  readonly gateway: Writer;
  readonly x: { taskId: string; sessionId: string; executionId: string; generation: number };
  private inboxAfter = '0-0';
  constructor(readonly taskId: string) {
    this.worker = new Writer('worker', `${taskId}-worker`);
    this.gateway = new Writer('gateway', `${taskId}-gateway`);
    this.x = { taskId, sessionId: 's1', executionId: `${taskId}-x1`, generation: 1 };
  }

  fact<T extends FactType>(type: T, data: Data<T>) {
    return store.append(this.taskId, [this.worker.fact(this.x, type, data)]);
  }
  command<T extends CommandType>(type: T, data: Data<T>) {
    return store.append(this.taskId, [this.gateway.command(this.taskId, 's1', type, data)]);
  }
  submitOne(key: string) {
    return this.command('prompt.submit', humanPrompt(key));
  }
  /** 50 submits at once, each from its own gateway instance (concurrent writers). */
  async submitConcurrently(): Promise<string[]> {
    const keys = Array.from({ length: N }, (_, i) => `${this.taskId}-burst-${i}`);
    await Promise.all(
      keys.map((key, i) =>
        store.append(this.taskId, [
          new Writer('gateway', `${this.taskId}-g${i}`).command(
            this.taskId,
            's1',
            'prompt.submit',
            {
              commandId: `c-${key}`,
              promptId: `p-${key}`,
              idempotencyKey: key,
              text: `prompt ${key}`,
              origin: 'human',
            },
          ),
        ]),
      ),
    );
    return keys.map((k) => `p-${k}`);
  }
  async start(caps = GENERIC_CAPS) {
    await store.executions.renewLease(this.x, 600_000);
    await store.append(this.taskId, [
      this.worker.fact(this.x, 'execution.started', { startedAt: '2026-11-30T00:00:00Z' }),
      this.worker.fact(this.x, 'capabilities.negotiated', caps),
    ]);
  }
  /** New inbox messages since the last call. */
  async inbox(): Promise<StoredInboxMessage[]> {
    const page = await store.inbox.read(this.taskId, this.x.executionId, this.inboxAfter);
    this.inboxAfter = page.lastId;
    return page.items;
  }
  async nextDelivery() {
    let got: StoredInboxMessage[] = [];
    await waitFor(
      async () => (got = await this.inbox()).length > 0,
      `a delivery on ${this.taskId}`,
      30_000,
    );
    expect(got).toHaveLength(1);
    const m = got[0]!.message;
    if (m.type !== 'prompt.deliver') throw new Error(`expected a prompt, got ${m.type}`);
    return m.data;
  }
  stream(): Promise<StoredEntry[]> {
    return readStream(store, this.taskId);
  }
}

/** The decision entries of the stream that answer `promptIds`, in stream order. */
function decisions(entries: StoredEntry[], promptIds: readonly string[]) {
  const wanted = new Set(promptIds);
  return entries
    .map((e) => e.entry)
    .filter(
      (e): e is EntryOf<'prompt.admitted' | 'prompt.queued' | 'prompt.rejected'> =>
        (e.type === 'prompt.admitted' ||
          e.type === 'prompt.queued' ||
          e.type === 'prompt.rejected') &&
        wanted.has(e.data.promptId),
    );
}

function submitOrder(entries: StoredEntry[], promptIds: readonly string[]): string[] {
  const wanted = new Set(promptIds);
  return entries.flatMap(({ entry: e }) =>
    e.type === 'prompt.submit' && wanted.has(e.data.promptId) ? [e.data.promptId] : [],
  );
}

/** N prompts submitted at once, once the owner answered each: their submission order, the answers. */
async function burstAnswered(s: Session) {
  const burst = await s.submitConcurrently();
  await waitFor(
    async () => decisions(await s.stream(), burst).length === N,
    'every prompt of the burst answered',
  );
  const entries = await s.stream();
  return { order: submitOrder(entries, burst), answers: decisions(entries, burst) };
}

it('handoff: 50 concurrent prompts to a session idle in the foreground with attested background work — exactly one admitted, the rest queued in order', async () => {
  const s = new Session('ds-handoff');
  await s.command('session.configure', {
    commandId: 'cfg',
    admission: 'handoff',
    queueCapacity: 0,
  });
  await s.start(CLAUDE_CAPS);
  await s.submitOne('first');
  const first = await s.nextDelivery();
  expect(first).toMatchObject({ promptId: 'p-first', admissionGeneration: 1, mode: 'turn' });
  await s.fact('prompt.dispatched', { promptId: 'p-first', admissionGeneration: 1 });
  await s.fact('foreground.output', { channel: 'message' });
  await s.fact('background.started', {
    attested: true,
    work: {
      kind: 'subagent',
      id: 'subagent:a',
      label: 'agent a',
      chat: 'ahp-chat:/a',
      startedAt: '2026-11-30T00:00:01Z',
    },
  });
  await s.fact('foreground.idle', { origin: 'human', admissionGeneration: 1 });
  await waitFor(async () => {
    const v = await store.views.read(s.taskId);
    return v?.sessions[0]?.activity.foregroundActivity === 'background';
  }, 'the view shows the session in the background');

  const { order, answers } = await burstAnswered(s);
  const admitted = answers.filter((e) => e.type === 'prompt.admitted');
  expect(admitted).toHaveLength(1);
  expect(admitted[0]!.data).toMatchObject({
    promptId: order[0],
    mode: 'handoff',
    admissionGeneration: 2,
  });
  const queued = answers.filter((e) => e.type === 'prompt.queued');
  expect(queued.map((e) => e.data.promptId)).toEqual(order.slice(1));
  expect(queued.map((e) => (e.type === 'prompt.queued' ? e.data.position : 0))).toEqual(
    Array.from({ length: N - 1 }, (_, i) => i + 1),
  );
  // One handoff delivery reached the execution, nothing else.
  const handed = await s.nextDelivery();
  expect(handed).toMatchObject({ promptId: order[0], mode: 'handoff', admissionGeneration: 2 });
  await new Promise((r) => setTimeout(r, 300));
  expect(await s.inbox()).toEqual([]);
  await waitFor(async () => {
    const v = await store.views.read(s.taskId);
    return sameJson(v, foldAll(s.taskId, await s.stream()).view);
  }, 'the view shows the queue in submission order');
  const view = await store.views.read(s.taskId);
  expect(view!.sessions[0]!.queue.entries.map((q) => q.promptId)).toEqual(order.slice(1));
});

it('coarse: 50 concurrent prompts while a turn runs — none admitted, all queued, then drained one at a time in order as turns end', async () => {
  const s = new Session('ds-coarse');
  await s.command('session.configure', { commandId: 'cfg', queueCapacity: 0 });
  await s.start(GENERIC_CAPS);
  await s.submitOne('first');
  const first = await s.nextDelivery();
  await s.fact('prompt.dispatched', { promptId: first.promptId, admissionGeneration: 1 });
  await s.fact('foreground.output', { channel: 'message' });

  const { order, answers } = await burstAnswered(s);
  expect(answers.filter((e) => e.type !== 'prompt.queued')).toEqual([]);
  expect(answers.map((e) => e.data.promptId)).toEqual(order);
  expect(await s.inbox()).toEqual([]);

  // Play the worker: end the running turn; exactly the next prompt arrives; run it; repeat.
  let generation = 1;
  for (const promptId of order) {
    await s.fact('turn.ended', { admissionGeneration: generation, stopReason: 'end_turn' });
    const d = await s.nextDelivery();
    generation += 1;
    expect(d).toMatchObject({ promptId, admissionGeneration: generation, mode: 'turn' });
    await s.fact('prompt.dispatched', { promptId, admissionGeneration: generation });
    await s.fact('foreground.output', { channel: 'message' });
  }
  await s.fact('turn.ended', { admissionGeneration: generation, stopReason: 'end_turn' });
  const entries = await s.stream();
  // Never two turns at once: each admission follows the end of the previous turn in the stream.
  let running: number | null = 1;
  for (const { entry: e } of entries) {
    if (e.type === 'prompt.admitted' && order.includes(e.data.promptId)) {
      expect(running).toBeNull();
      running = e.data.admissionGeneration;
    } else if (e.type === 'turn.ended' && e.data.admissionGeneration === running) running = null;
  }
  await waitFor(
    async () =>
      sameJson(await store.views.read(s.taskId), foldAll(s.taskId, await s.stream()).view),
    'the final view equals the fold',
  );
  const view = await store.views.read(s.taskId);
  expect(view!.sessions[0]!.queue.entries).toEqual([]);
  expect(view!.sessions[0]!.activity.state).toBe('waiting_for_input');
});
