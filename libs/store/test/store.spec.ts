import type { Cluster } from 'ioredis';
import {
  ConflictError,
  EventStore,
  FencedError,
  GapError,
  InvalidEntryError,
  StaleSnapshotError,
  StreamBehindError,
  isCluster,
  type Lease,
} from '../src';
import {
  decision,
  delivery,
  fact,
  freshPrefix,
  startBackend,
  update,
  type Backend,
} from './fixtures';

jest.setTimeout(60_000);

async function mustAcquire(store: EventStore, shard: number, owner: string, ttlMs = 30_000) {
  const r = await store.leases.acquire(shard, owner, ttlMs);
  if (!r.acquired) throw new Error(`${owner} could not acquire shard ${shard}`);
  return r.lease;
}

describe.each(['single', 'cluster'] as const)('event store on %s Redis', (kind) => {
  let backend: Backend;
  let store: EventStore;
  /** `n` facts of writer w1 appended to task `t`, seq `from` on; their entry ids. */
  const appendFacts = async (t: string, n: number, from = 1) =>
    (await store.append(
      t,
      Array.from({ length: n }, (_, i) => fact(t, 'w1', from + i)),
    )) as string[];

  beforeAll(async () => {
    backend = await startBackend(kind);
  });
  afterAll(async () => {
    await backend?.stop();
  });
  beforeEach(() => {
    store = new EventStore(backend.client(), {
      shards: 16,
      prefix: freshPrefix(),
      tailBlockMs: 200,
    });
  });
  afterEach(async () => {
    await store.close();
  });

  it('puts every key of a shard in one cluster slot', async () => {
    const k = store.keys;
    // A task key: tenant, `/`, a client id that may hold braces — the shard's tag comes first.
    const t = 'acme/task-{x}-slot';
    const s = k.shardOf(t);
    const keys = [
      k.taskStream(t),
      k.taskDedupe(t),
      k.snapshot(t),
      k.feed(s),
      k.lease(s),
      k.epoch(s),
      k.epochs(s),
      k.updates(s),
      k.updateSeqs(s),
      k.inbox(t, 'exec-1'),
      k.rawFrames(t, 'exec-1'),
      k.transcript(t),
      k.deadLetters(s),
      k.deadIndex(s),
      k.executionLeases(s),
      k.executionLeaseTtls(s),
      k.executionGenerations(t),
      k.views(s),
      k.shardTasks(s),
      k.shardLive(s),
      k.shardLiveStarted(s),
      k.shardTrims(s),
    ];
    const client = backend.client();
    const slots = await Promise.all(
      keys.map((key) => client.call('CLUSTER', 'KEYSLOT', key).catch(() => null)),
    );
    if (kind === 'cluster') {
      expect(new Set(slots).size).toBe(1);
      expect(slots[0]).not.toBeNull();
    }
    // The hash tag is the same for all of them whatever the server mode.
    const tags = keys.map((key) => /\{([^}]*)\}/.exec(key)?.[1]);
    expect(new Set(tags)).toEqual(new Set([`b:${s}`]));
  });

  it('runs a scheduled retention trim only when due by the server clock, and unschedules it with the trim', async () => {
    const t = 't-due';
    const lease = await mustAcquire(store, store.shardOf(t), 'owner-due');
    const ids = [];
    for (let i = 1; i <= 3; i++) ids.push((await store.append(t, [fact(t, 'w1', i)]))[0]!);
    await store.snapshots.write(lease, t, ids[2]!, { n: 3 });
    const trims = store.keys.shardTrims(lease.shard);
    await store.redis.zadd(trims, Date.now() + 60_000, t);
    expect(await store.shardTasks.trimDue(lease, t, 0)).toBeNull();
    expect(await store.redis.zscore(trims, t)).not.toBeNull();
    expect(await store.redis.xlen(store.keys.taskStream(t))).toBe(3);
    await store.redis.zadd(trims, Date.now() - 1_000, t);
    expect(await store.shardTasks.trimDue(lease, t, 0)).toBe(2);
    expect(await store.redis.zscore(trims, t)).toBeNull();
    expect(await store.shardTasks.trimDue(lease, t, 0)).toBeNull();
    // Fenced: a stale lease trims nothing.
    await store.redis.zadd(trims, 0, t);
    await expect(store.shardTasks.trimDue({ ...lease, epoch: 0 }, t, 0)).rejects.toThrow(/FENCED/);
    expect(await store.redis.zscore(trims, t)).not.toBeNull();
  });

  it('renews the dedupe hash expiry when a quarter of its TTL has passed, not on every append', async () => {
    const ttl = 60_000;
    const s = new EventStore(backend.client(), {
      shards: 16,
      prefix: freshPrefix(),
      dedupeTtlMs: ttl,
    });
    const key = s.keys.taskDedupe('t-ttl');
    const RENEWED = '\u0000renewed';
    await s.append('t-ttl', [fact('t-ttl', 'w1', 1)]);
    const first = Number(await s.redis.hget(key, RENEWED));
    expect(await s.redis.pttl(key)).toBeGreaterThan(ttl - 5_000);
    // Renewed less than a quarter of the TTL ago: the expiry is left as it is.
    await s.redis.pexpire(key, 10 * ttl);
    await s.append('t-ttl', [fact('t-ttl', 'w1', 2)]);
    expect(await s.redis.pttl(key)).toBeGreaterThan(ttl);
    expect(Number(await s.redis.hget(key, RENEWED))).toBe(first);
    // More than a quarter ago: renewed, with the time of the new entry.
    await s.redis.hset(key, RENEWED, first - ttl / 4 - 1);
    const [id] = await s.append('t-ttl', [fact('t-ttl', 'w1', 3)]);
    expect(await s.redis.pttl(key)).toBeLessThanOrEqual(ttl);
    expect(Number(await s.redis.hget(key, RENEWED))).toBe(Number(id!.split('-')[0]));
    // The writer's seq is kept beside it, and a retry is still a duplicate.
    expect(await s.redis.hget(key, 'w1')).toBe('3');
    expect(await s.append('t-ttl', [fact('t-ttl', 'w1', 3)])).toEqual([null]);
    await s.close();
  });

  it('appends a batch once even when the whole batch is retried', async () => {
    const batch = [fact('t1', 'w1', 1), fact('t1', 'w1', 2), fact('t1', 'w2', 1)];
    const first = await store.append('t1', batch);
    expect(first.every((id) => typeof id === 'string')).toBe(true);
    expect(await store.append('t1', batch)).toEqual([null, null, null]);
    // A retry that overlaps the acknowledged part and carries new seqs appends only the new ones.
    const overlap = await store.append('t1', [fact('t1', 'w1', 2), fact('t1', 'w1', 3)]);
    expect(overlap[0]).toBeNull();
    expect(overlap[1]).toEqual(expect.any(String));
    const page = await store.readTask('t1');
    expect(page.items.map((i) => [i.entry.writer.instance, i.entry.writer.seq])).toEqual([
      ['w1', 1],
      ['w1', 2],
      ['w2', 1],
      ['w1', 3],
    ]);
    expect(page.lastId).toBe(page.items[3]!.id);
  });

  it('rejects a batch with an invalid entry and appends nothing of it', async () => {
    const bad = { ...fact('t2', 'w1', 2), data: { channel: 'shout' } };
    await expect(
      store.append('t2', [fact('t2', 'w1', 1), bad as never, fact('t2', 'w1', 3)]),
    ).rejects.toThrow(InvalidEntryError);
    await expect(store.append('t2', [fact('t2', 'w1', 1), bad as never])).rejects.toThrow(
      /entry 1 of the batch is invalid.*data\.channel/,
    );
    await expect(store.append('t2', [fact('other', 'w1', 1)])).rejects.toThrow(InvalidEntryError);
    expect((await store.readTask('t2')).items).toEqual([]);
    // Nothing was recorded as seen either: the same seqs still go in.
    expect(await store.append('t2', [fact('t2', 'w1', 1)])).toEqual([expect.any(String)]);
  });

  it('reads a task stream in pages with an exclusive start', async () => {
    const entries = Array.from({ length: 25 }, (_, i) => fact('t3', 'w1', i + 1));
    await store.append('t3', entries);
    const seen: number[] = [];
    let after = '0-0';
    for (;;) {
      const page = await store.readTask('t3', after, 10);
      if (page.items.length === 0) break;
      seen.push(...page.items.map((i) => i.entry.writer.seq));
      after = page.lastId;
    }
    expect(seen).toEqual(entries.map((e) => e.writer.seq));
    expect(await store.lastId('t3')).toBe(after);
  });

  it('reads every page of a task stream ahead, up to a time, and stops where the caller stops', async () => {
    const entries = Array.from({ length: 25 }, (_, i) => fact('t3p', 'w1', i + 1));
    const ids = await store.append('t3p', entries);
    const seqs = async (after: string, opts: { count?: number; until?: number }) => {
      const pages: number[][] = [];
      for await (const page of store.readTaskPages('t3p', after, opts)) {
        pages.push(page.items.map((i) => i.entry.writer.seq));
      }
      return pages;
    };
    // Exclusive start; a full last page is followed by one empty read, which ends it.
    expect(await seqs(ids[4]!, { count: 10 })).toEqual([
      [6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
      [16, 17, 18, 19, 20, 21, 22, 23, 24, 25],
    ]);
    // `until` takes every entry of its millisecond and none after.
    const ms = (id: string) => Number(id.split('-')[0]);
    const until = ms(ids[12]!);
    const upTo = entries.filter((_, i) => ms(ids[i]!) <= until).map((e) => e.writer.seq);
    expect((await seqs('0-0', { count: 4, until })).flat()).toEqual(upTo);
    // A caller that stops early leaves the read ahead unanswered, and nothing fails.
    for await (const page of store.readTaskPages('t3p', '0-0', { count: 5 })) {
      expect(page.items).toHaveLength(5);
      break;
    }
    expect(await store.redis.ping()).toBe('PONG');
  });

  it('appends fenced only at the current epoch and the expected last id', async () => {
    const shard = store.shardOf('t4');
    const lease = await mustAcquire(store, shard, 'projector-a');
    const [id1] = await store.appendFenced(lease, 't4', '0-0', [decision('t4', 1)]);
    await expect(store.appendFenced(lease, 't4', '0-0', [decision('t4', 2)])).rejects.toEqual(
      new ConflictError(id1!),
    );
    const conflict = await store
      .appendFenced(lease, 't4', '0-0', [decision('t4', 2)])
      .catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(ConflictError);
    expect((conflict as ConflictError).actualLastId).toBe(id1);
    // A worker's fact moves the stream on: the owner must catch up before deciding again.
    const [factId] = await store.append('t4', [fact('t4', 'w1', 1)]);
    await expect(store.appendFenced(lease, 't4', id1!, [decision('t4', 2)])).rejects.toThrow(
      ConflictError,
    );
    const ids = await store.appendFenced(lease, 't4', factId!, [
      decision('t4', 2),
      decision('t4', 3),
    ]);
    expect(ids).toHaveLength(2);
    const stale: Lease = { ...lease, epoch: lease.epoch - 1 };
    await expect(store.appendFenced(stale, 't4', ids[1]!, [decision('t4', 4)])).rejects.toThrow(
      FencedError,
    );
    await expect(
      store.appendFenced(lease, 't4', ids[1]!, [{ ...decision('t4', 4), type: 'nope' } as never]),
    ).rejects.toThrow(InvalidEntryError);
    expect((await store.readTask('t4')).items.map((i) => i.entry.type)).toEqual([
      'prompt.queued',
      'foreground.output',
      'prompt.queued',
      'prompt.queued',
    ]);
  });

  it('rejects every write of an owner whose lease was taken over', async () => {
    const t = 't5';
    const shard = store.shardOf(t);
    const a = await mustAcquire(store, shard, 'projector-a');
    const [id] = await store.appendFenced(a, t, '0-0', [decision(t, 1)]);
    await store.snapshots.write(a, t, id!, { n: 1 });
    // A's lease lapses (as if A paused past its TTL) and B takes the shard.
    await backend.client().pexpire(store.keys.lease(shard), 1);
    await waitUntil(async () => (await backend.client().exists(store.keys.lease(shard))) === 0);
    const b = await mustAcquire(store, shard, 'projector-b');
    expect(b.epoch).toBeGreaterThan(a.epoch);

    await expect(store.appendFenced(a, t, id!, [decision(t, 2)])).rejects.toThrow(FencedError);
    await expect(store.snapshots.write(a, t, id!, { n: 2 })).rejects.toThrow(FencedError);
    await expect(store.snapshots.trim(a, t)).rejects.toThrow(FencedError);
    await expect(store.publishUpdates(a, t, [update(t, 1)])).rejects.toThrow(FencedError);
    await expect(store.inbox.append(a, t, 'exec-1', [delivery(t, 'exec-1', 3)])).rejects.toThrow(
      FencedError,
    );
    await expect(store.leases.renew(a, 30_000)).rejects.toThrow(FencedError);
    expect(await store.leases.release(a)).toBe(false);

    expect((await store.readTask(t)).items).toHaveLength(1);
    expect((await store.snapshots.read(t))?.state).toEqual({ n: 1 });
    expect(await store.lastUpdateSeq(t)).toBe(0);
    expect((await store.inbox.read(t, 'exec-1')).items).toEqual([]);

    // The new owner writes normally.
    await store.appendFenced(b, t, id!, [decision(t, 2)]);
    expect(await store.publishUpdates(b, t, [update(t, 1)])).toEqual({ published: 1, lastSeq: 1 });
  });

  it('fences a write once the lease TTL ran out, with nobody else holding the shard', async () => {
    const t = 'task-ttl';
    const shard = store.shardOf(t);
    const a = await mustAcquire(store, shard, 'projector-a', 50);
    await new Promise((r) => setTimeout(r, 120));
    await expect(
      store.commit(a, t, { expectedLastId: '0-0', entries: [decision(t, 1)], updates: [] }),
    ).rejects.toThrow(FencedError);
    await expect(store.commit(a, t, { updates: [update(t, 1)] })).rejects.toThrow(FencedError);
    await expect(store.leases.renew(a, 30_000)).rejects.toThrow(FencedError);
    expect((await store.readTask(t)).items).toHaveLength(0);
    expect(await store.lastUpdateSeq(t)).toBe(0);
  });

  it('leases: held, renewed, released, and the epoch only grows', async () => {
    const shard = 3;
    const a = await mustAcquire(store, shard, 'a');
    const busy = await store.leases.acquire(shard, 'b', 30_000);
    expect(busy).toEqual({ acquired: false, owner: 'a', expiresAt: a.expiresAt });
    const renewed = await store.leases.renew(a, 60_000);
    expect(renewed.epoch).toBe(a.epoch);
    expect(renewed.expiresAt).toBeGreaterThan(a.expiresAt);
    expect(await store.leases.release(renewed)).toBe(true);
    const b = await mustAcquire(store, shard, 'b');
    expect(b.epoch).toBe(a.epoch + 1);
    // Re-acquiring one's own lease still fences the previous epoch.
    const b2 = await mustAcquire(store, shard, 'b');
    expect(b2.epoch).toBe(b.epoch + 1);
    await expect(store.leases.renew(b, 30_000)).rejects.toThrow(FencedError);
    expect(await store.leases.epoch(shard)).toBe(b2.epoch);
  });

  it('snapshots never move back and trimming keeps the snapshot entry and what follows', async () => {
    const t = 't6';
    const lease = await mustAcquire(store, store.shardOf(t), 'projector-a');
    const ids = await appendFacts(t, 10);
    expect(await store.snapshots.trim(lease, t)).toBe(0);
    expect(await store.wasTrimmed(t)).toBe(false);
    expect(await store.wasTrimmed('never-written')).toBe(false);
    await store.snapshots.write(lease, t, ids[6]!, { folded: 7 });
    await expect(store.snapshots.write(lease, t, ids[5]!, { folded: 6 })).rejects.toEqual(
      new StaleSnapshotError(ids[6]!),
    );
    // Nor past the stream's last entry: an owner whose Redis lost writes has folded entries that
    // are gone, and a load must not start from them.
    const past = `${Number(ids[9]!.split('-')[0]) + 1}-0`;
    await expect(store.snapshots.write(lease, t, past, { folded: 11 })).rejects.toEqual(
      new StreamBehindError(ids[9]!),
    );
    expect(await store.snapshots.read(t)).toEqual({
      id: ids[6],
      state: { folded: 7 },
      epoch: lease.epoch,
    });
    expect(await store.snapshots.trim(lease, t)).toBe(6);
    expect(await store.wasTrimmed(t)).toBe(true);
    const rest = await store.readTask(t);
    expect(rest.items.map((i) => i.id)).toEqual(ids.slice(6));
    // The expected-version anchor survives the trim.
    await store.appendFenced(lease, t, ids[9]!, [decision(t, 1)]);
  });

  it('reads several task streams of a shard after what each folded in one command, each as if alone', async () => {
    const names = Array.from({ length: 400 }, (_, i) => `task-rd${i}`);
    const shard = store.shardOf(names[0]!);
    const [a, b, c, d] = names.filter((t) => store.shardOf(t) === shard) as [
      string,
      string,
      string,
      string,
    ];
    const ia = await appendFacts(a, 4);
    const ib = await appendFacts(b, 2);
    const ic = await appendFacts(c, 3);
    // The same millisecond and the millisecond's first entry alike: a read starts at the known
    // entry whatever its sequence part.
    const gone = `${Number(ic[2]!.split('-')[0]) + 1}-0`;
    const calls = async () =>
      Number(/cmdstat_xread:calls=(\d+)/.exec(await store.redis.info('commandstats'))?.[1] ?? 0);
    const before = kind === 'single' ? await calls() : 0;
    const r = await store.readTasksAfterFolded(
      [
        { taskId: a, foldedId: ia[1]! },
        { taskId: b, foldedId: ib[1]! },
        { taskId: c, foldedId: gone },
        { taskId: d, foldedId: '0-0' },
      ],
      1,
    );
    if (kind === 'single') expect(await calls()).toBe(before + 1);
    expect(r.map((p) => ('items' in p ? p.items.map((i) => i.id) : p))).toEqual([
      [ia[2]],
      [],
      new StreamBehindError(ic[2]!),
      [],
    ]);
    expect(r[0]).toMatchObject({ lastId: ia[2] });
    expect(r[1]).toMatchObject({ lastId: ib[1] });
    // As readTaskAfterFolded reads them, page for page.
    const [whole] = await store.readTasksAfterFolded([{ taskId: a, foldedId: '0-0' }]);
    expect(whole).toEqual(await store.readTaskAfterFolded(a, '0-0'));
    expect((await store.readTasksAfterFolded([{ taskId: a, foldedId: ia[3]! }]))[0]).toEqual(
      await store.readTaskAfterFolded(a, ia[3]!),
    );
    expect((await store.readTasksAfterFolded([{ taskId: b, foldedId: ib[0]! }]))[0]).toEqual(
      await store.readTaskAfterFolded(b, ib[0]!),
    );
    // Tasks of other shards join the read: one XREAD on a single Redis, one per shard on a
    // Cluster; each answer as if read alone.
    const other = names.find((t) => store.shardOf(t) !== shard)!;
    const io = await appendFacts(other, 2);
    const before2 = kind === 'single' ? await calls() : 0;
    const across = await store.readTasksAfterFolded([
      { taskId: a, foldedId: ia[2]! },
      { taskId: other, foldedId: io[0]! },
    ]);
    if (kind === 'single') expect(await calls()).toBe(before2 + 1);
    expect(across).toEqual([
      await store.readTaskAfterFolded(a, ia[2]!),
      await store.readTaskAfterFolded(other, io[0]!),
    ]);
    // Reads one Redis serves together share a read group: all on a single Redis, a shard's on
    // a Cluster.
    expect(store.readGroupOf(a)).toBe(store.readGroupOf(b));
    expect(store.readGroupOf(other) === store.readGroupOf(a)).toBe(kind === 'single');
    // A shard's read that fails (here: its stream is not a stream) fails on a Cluster only its
    // own shard's answers; on a single Redis the one XREAD fails as a whole.
    const broken = names.find((t) => store.shardOf(t) !== shard && t !== other)!;
    await store.redis.set(store.keys.taskStream(broken), 'not a stream');
    const mixed = store.readTasksAfterFolded([
      { taskId: a, foldedId: ia[2]! },
      { taskId: broken, foldedId: '0-0' },
    ]);
    if (kind === 'single') await expect(mixed).rejects.toThrow(/WRONGTYPE/);
    else {
      const [fine, failed] = await mixed;
      expect(fine).toEqual(await store.readTaskAfterFolded(a, ia[2]!));
      expect(failed).toBeInstanceOf(Error);
      expect(String(failed)).toMatch(/WRONGTYPE/);
    }
    await store.redis.del(store.keys.taskStream(broken));
  });

  it('after Redis lost writes: a reader whose last folded entry is gone is told, and a snapshot at an entry the stream does not hold is replaced, never cut at', async () => {
    const t = 't6lost';
    const lease = await mustAcquire(store, store.shardOf(t), 'projector-a');
    const ids = await appendFacts(t, 5);
    const after = await store.readTaskAfterFolded(t, ids[2]!);
    expect(after.items.map((i) => i.id)).toEqual(ids.slice(3));
    expect(after.lastId).toBe(ids[4]);
    expect((await store.readTaskAfterFolded(t, ids[4]!)).items).toEqual([]);
    expect((await store.readTaskAfterFolded(t, '0-0')).items).toHaveLength(5);
    const gone = `${Number(ids[4]!.split('-')[0]) + 1}-0`;
    await expect(store.readTaskAfterFolded(t, gone)).rejects.toEqual(
      new StreamBehindError(ids[4]!),
    );
    expect(await store.hasEntry(t, ids[1]!)).toBe(true);
    expect(await store.hasEntry(t, gone)).toBe(false);

    // A snapshot an earlier version wrote at the entry that is gone: no cut behind it (it would
    // take the whole stream), and the next snapshot replaces it though its id is older.
    await store.redis.hset(store.keys.snapshot(t), 'id', gone, 'state', '{}', 'epoch', '1');
    expect(await store.snapshots.trim(lease, t)).toBe(0);
    expect(await store.redis.xlen(store.keys.taskStream(t))).toBe(5);
    await store.snapshots.write(lease, t, ids[3]!, { folded: 4 });
    expect((await store.snapshots.read(t))?.id).toBe(ids[3]);
    expect(await store.snapshots.trim(lease, t)).toBe(3);
  });

  it('with a retention, keeps what is younger behind the snapshot, cut at a checkpoint', async () => {
    const t = 't6r';
    const lease = await mustAcquire(store, store.shardOf(t), 'projector-a');
    const first = await appendFacts(t, 5);
    // A checkpoint is kept at the first snapshot, none again until the interval has passed. The
    // stream still holds its start: the span from there ('0-0') can be built.
    expect(await store.snapshots.write(lease, t, first[4]!, { folded: 5 }, 60_000)).toEqual({
      previousCheckpoint: '0-0',
    });
    await store.snapshots.write(lease, t, first[4]!, { folded: 5 }, 60_000);
    expect(await store.snapshots.checkpoints(t)).toEqual([{ id: first[4], state: { folded: 5 } }]);
    // Nothing is older than a long retention: nothing goes.
    expect(await store.snapshots.trim(lease, t, 3_600_000)).toBe(0);
    // The retention below is long enough for the calls between the second checkpoint and the
    // trim to fit in it on a loaded machine, and the first checkpoint older than it.
    const retention = 1_000;
    await new Promise((r) => setTimeout(r, 2 * retention));
    const later = await appendFacts(t, 5, 6);
    // A second checkpoint names the one before it: the history span between them can be built.
    expect(await store.snapshots.write(lease, t, later[4]!, { folded: 10 }, 1)).toEqual({
      previousCheckpoint: first[4],
    });
    expect((await store.snapshots.checkpoints(t)).map((c) => c.id)).toEqual([first[4], later[4]]);
    const span = { v: 1 as const, from: first[4]!, to: later[4]!, t: [0, 1], o: [] };
    expect(await store.historySpans.write(t, span)).toBe(true);
    // A span must run between two kept checkpoints.
    expect(await store.historySpans.write(t, { ...span, to: later[3]! })).toBe(false);
    expect([...(await store.historySpans.read(t))]).toEqual([[first[4], span]]);
    // Kept compressed (zlib); a span an earlier version kept as plain JSON reads the same.
    const spansKey = store.keys.historySpans(t);
    expect((await store.redis.hgetBuffer(spansKey, first[4]!))![0]).toBe(0x78);
    await store.redis.hset(spansKey, first[4]!, JSON.stringify(span));
    expect([...(await store.historySpans.read(t))]).toEqual([[first[4], span]]);
    // The first checkpoint is older than the retention, the second not. The stream is cut at the
    // first (what follows it can still be folded), not at the snapshot.
    expect(await store.snapshots.trim(lease, t, retention)).toBe(4);
    expect((await store.readTask(t)).items.map((i) => i.id)).toEqual([first[4], ...later]);
    expect((await store.historySpans.read(t)).size).toBe(1);
    // No retention: up to the snapshot, as always.
    expect(await store.snapshots.trim(lease, t)).toBe(5);
    expect((await store.readTask(t)).items.map((i) => i.id)).toEqual([later[4]]);
    // A third checkpoint, then a trim that cuts at the second: the span that started at the
    // first goes with it, and cannot be written back.
    await new Promise((r) => setTimeout(r, 2 * retention));
    const last = (await store.append(t, [fact(t, 'w1', 11)])) as string[];
    await store.snapshots.write(lease, t, last[0]!, { folded: 11 }, 1);
    await store.snapshots.trim(lease, t, retention);
    expect((await store.snapshots.checkpoints(t)).map((c) => c.id)).toEqual([later[4], last[0]]);
    expect((await store.historySpans.read(t)).size).toBe(0);
    expect(await store.historySpans.write(t, span)).toBe(false);
  });

  it('with a hot window, cuts raw entries where the history spans answer for them, and keeps checkpoints and spans for the retention', async () => {
    const t = 't6h';
    const lease = await mustAcquire(store, store.shardOf(t), 'projector-a');
    const day = 86_400_000;
    const a = await appendFacts(t, 3);
    expect(await store.snapshots.write(lease, t, a[2]!, { folded: 3 }, 1)).toEqual({
      previousCheckpoint: '0-0',
    });
    await new Promise((r) => setTimeout(r, 60));
    // Older than the hot window, but no span answers for the entries before the checkpoint yet.
    expect(await store.snapshots.trim(lease, t, day, 30)).toBe(0);
    const fromStart = { v: 1 as const, from: '0-0', to: a[2]!, t: [0, 1], o: [] };
    expect(await store.historySpans.write(t, fromStart)).toBe(true);
    expect(await store.snapshots.trim(lease, t, day, 30)).toBe(2);
    expect((await store.readTask(t)).items.map((i) => i.id)).toEqual([a[2]]);
    // The span from the start is built only from a stream that still holds its start.
    expect(await store.historySpans.build(t, '0-0', a[2]!)).toBeNull();
    const b = await appendFacts(t, 3, 4);
    expect(await store.snapshots.write(lease, t, b[2]!, { folded: 6 }, 1)).toEqual({
      previousCheckpoint: a[2],
    });
    await new Promise((r) => setTimeout(r, 60));
    // The span from the first checkpoint to the second is missing: the cut stays at the first.
    expect(await store.snapshots.trim(lease, t, day, 30)).toBe(0);
    const between = { v: 1 as const, from: a[2]!, to: b[2]!, t: [0, 1], o: [] };
    expect(await store.historySpans.write(t, between)).toBe(true);
    // A hot window as long as the retention keeps raw entries for the retention.
    expect(await store.snapshots.trim(lease, t, day, day)).toBe(0);
    expect(await store.snapshots.trim(lease, t, day, 30)).toBe(3);
    expect((await store.readTask(t)).items.map((i) => i.id)).toEqual([b[2]]);
    // Checkpoints and spans stay for the retention.
    expect((await store.snapshots.checkpoints(t)).map((c) => c.id)).toEqual([a[2], b[2]]);
    expect([...(await store.historySpans.read(t)).keys()].sort()).toEqual(['0-0', a[2]].sort());
    // Past the retention, the checkpoints before its cut go, with their spans and the start's.
    expect(await store.snapshots.trim(lease, t, 30, 10)).toBe(0);
    expect((await store.snapshots.checkpoints(t)).map((c) => c.id)).toEqual([b[2]]);
    expect((await store.historySpans.read(t)).size).toBe(0);
  });

  it('publishes updates without gaps and skips what was already published', async () => {
    const t = 't7';
    const shard = store.shardOf(t);
    const lease = await mustAcquire(store, shard, 'projector-a');
    expect(await store.publishUpdates(lease, t, [update(t, 1), update(t, 2)])).toEqual({
      published: 2,
      lastSeq: 2,
    });
    // A new owner folding the same stream re-publishes 1..3: only 3 is new.
    expect(
      await store.publishUpdates(lease, t, [update(t, 1), update(t, 2), update(t, 3)]),
    ).toEqual({ published: 1, lastSeq: 3 });
    await expect(store.publishUpdates(lease, t, [update(t, 4), update(t, 6)])).rejects.toEqual(
      new GapError(4, 6),
    );
    await expect(store.publishUpdates(lease, t, [update(t, 5)])).rejects.toThrow(GapError);
    expect(await store.lastUpdateSeq(t)).toBe(3);
    const page = await store.readUpdates(shard);
    expect(page.items.map((i) => i.update.seq)).toEqual([1, 2, 3]);
    expect((await store.readUpdates(shard, page.items[0]!.id)).items).toHaveLength(2);
  });

  it('refuses an update that does not name its entry or mark the end of its group', async () => {
    const t = 't7-groups';
    const lease = await mustAcquire(store, store.shardOf(t), 'projector-a');
    const { entry: _entry, ...noEntry } = update(t, 1);
    const { last: _last, ...noLast } = update(t, 1);
    for (const u of [noEntry, noLast]) {
      await expect(store.publishUpdates(lease, t, [u])).rejects.toThrow(InvalidEntryError);
    }
    expect(await store.lastUpdateSeq(t)).toBe(0);
  });

  it('carries a rewritten-history notice to followers of the update stream, not to readers of updates', async () => {
    const t = 'rewritten-a';
    const shard = store.shardOf(t);
    const lease = await mustAcquire(store, shard, 'projector-rw');
    await store.publishUpdates(lease, t, [update(t, 1)]);
    await store.announceRewritten(t, 1);
    await store.publishUpdates(lease, t, [update(t, 2)]);
    const tail = store.tailUpdates([shard], { [shard]: '0-0' });
    const ofTask: unknown[] = [];
    while (ofTask.length < 3) {
      for (const i of await tail.next()) {
        if ('update' in i && i.update.taskId === t) ofTask.push(i.update.seq);
        else if ('rewritten' in i && i.rewritten.taskId === t) ofTask.push(i.rewritten);
      }
    }
    await tail.close();
    expect(ofTask).toEqual([1, { taskId: t, seq: 1 }, 2]);
    const page = await store.readUpdates(shard);
    expect(page.items.filter((i) => i.update.taskId === t).map((i) => i.update.seq)).toEqual([
      1, 2,
    ]);
  });

  it('tails shard feeds and update streams with blocking reads', async () => {
    const tasks = ['feed-a', 'feed-b', 'feed-c'];
    const shards = [...new Set(tasks.map((t) => store.shardOf(t)))];
    const from = Object.fromEntries(shards.map((s) => [s, '0-0']));
    const feeds = store.tailFeeds(shards, from);
    const seen: string[] = [];
    for (const t of tasks) await store.append(t, [fact(t, 'w1', 1)]);
    while (seen.length < tasks.length) seen.push(...(await feeds.next()).map((n) => n.taskId));
    expect(seen.sort()).toEqual([...tasks].sort());

    const shard = store.shardOf('feed-a');
    const updates = store.tailUpdates([shard]);
    // The tail starts at '$': give it a moment to block, then publish until it reports.
    const lease = await mustAcquire(store, shard, 'projector-a');
    let seq = 0;
    const got = updates.next();
    let done = false;
    void got.then(() => (done = true));
    while (!done) {
      seq += 1;
      await store.publishUpdates(lease, 'feed-a', [update('feed-a', seq)]);
      await new Promise((r) => setTimeout(r, 20));
    }
    const batch = await got;
    expect(batch[0]).toMatchObject({ update: { taskId: 'feed-a' } });
    await feeds.close();
    await updates.close();
  });

  it('moves a corrupt entry to the dead-letter stream and reads on', async () => {
    const t = 't8';
    const shard = store.shardOf(t);
    const key = store.keys.taskStream(t);
    await store.append(t, [fact(t, 'w1', 1)]);
    const client = backend.client();
    const notJson = await client.xadd(key, '*', 'e', '{"v":1,');
    const badShape = await client.xadd(key, '*', 'e', JSON.stringify({ v: 1, type: 'x' }));
    const noField = await client.xadd(key, '*', 'other', '1');
    const foreign = await client.xadd(key, '*', 'e', JSON.stringify(fact('elsewhere', 'w1', 9)));
    // Reading back trusts what append validated, but never an entry of another schema version.
    const newer = await client.xadd(key, '*', 'e', JSON.stringify({ ...fact(t, 'w1', 8), v: 2 }));
    await store.append(t, [fact(t, 'w1', 2)]);

    const page = await store.readTask(t);
    expect(page.items.map((i) => i.entry.writer.seq)).toEqual([1, 2]);
    // Readers of the same stream (replicas, a replay, pages read ahead) do not duplicate the
    // dead letters.
    await store.readTask(t);
    const paged = [];
    for await (const p of store.readTaskPages(t, '0-0', { count: 2 })) paged.push(...p.items);
    expect(paged).toEqual(page.items);
    const dead = await store.deadLetters.read(shard);
    expect(dead.items.map((d) => d.sourceId)).toEqual([notJson, badShape, noField, foreign, newer]);
    expect(dead.items.every((d) => d.source === key)).toBe(true);
    expect(dead.items[0]!.reason).toMatch(/not JSON/);
    expect(dead.items[1]!.reason).toMatch(/type/);
    expect(dead.items[3]!.reason).toMatch(/elsewhere/);
    expect(dead.items[4]!.reason).toMatch(/schema version 2/);
    expect(JSON.parse(dead.items[0]!.raw)).toEqual(['e', '{"v":1,']);

    // Updates go the same way.
    const badUpdate = await client.xadd(store.keys.updates(shard), '*', 'u', '{"seq":"x"}');
    expect((await store.readUpdates(shard)).items).toEqual([]);
    expect((await store.deadLetters.read(shard, dead.lastId)).items[0]!.sourceId).toBe(badUpdate);
  });

  it('hands messages to an execution inbox and logs raw frames, bounded', async () => {
    const t = 't9';
    const lease = await mustAcquire(store, store.shardOf(t), 'projector-a');
    const sent = [delivery(t, 'exec-1', 1), delivery(t, 'exec-1', 2)];
    const ids = await store.inbox.append(lease, t, 'exec-1', sent);
    const inbox = await store.inbox.read(t, 'exec-1');
    expect(inbox.items).toEqual(ids.map((id, i) => ({ id, message: sent[i] })));
    expect((await store.inbox.read(t, 'exec-1', ids[0]!)).items).toHaveLength(1);
    // A message for another execution, or one that is not a message, is refused whole.
    await expect(
      store.inbox.append(lease, t, 'exec-1', [delivery(t, 'exec-2', 3)]),
    ).rejects.toThrow(InvalidEntryError);
    await expect(store.inbox.append(lease, t, 'exec-1', [decision(t, 3) as never])).rejects.toThrow(
      InvalidEntryError,
    );
    // What a worker would tail from the start.
    const tail = store.inbox.tail(t, 'exec-1', '0-0');
    const seen: number[] = [];
    for await (const batch of tail) {
      for (const m of batch) {
        if (m.message.type === 'prompt.deliver') seen.push(m.message.data.admissionGeneration);
      }
      if (seen.length >= 2) break;
    }
    expect(seen).toEqual([1, 2]);
    await store.inbox.remove(t, 'exec-1');
    expect((await store.inbox.read(t, 'exec-1')).items).toEqual([]);

    const bounded = new EventStore(backend.client(), {
      prefix: freshPrefix(),
      rawFramesMaxLen: 10,
    });
    for (let i = 0; i < 150; i++) {
      await bounded.rawFrames.append(t, 'exec-1', [
        { direction: 'out', line: `{"jsonrpc":"2.0","id":${i}}` },
        { direction: 'in', line: `{"jsonrpc":"2.0","result":${i}}` },
      ]);
    }
    const frames = await bounded.rawFrames.read(t, 'exec-1');
    // MAXLEN ~ trims whole macro nodes (stream-node-max-entries, 100 by default): the log holds
    // at most the bound plus one node, in entries (a write each, here of two frames).
    expect(await store.redis.xlen(bounded.keys.rawFrames(t, 'exec-1'))).toBeLessThanOrEqual(
      10 + 100,
    );
    expect(frames.items.length).toBeLessThanOrEqual((10 + 100) * 2);
    expect(frames.items.at(-1)).toEqual({
      id: expect.any(String),
      direction: 'in',
      line: '{"jsonrpc":"2.0","result":149}',
    });
    // By age too: a log nobody writes to goes whole once its last frame is older than that.
    expect(await store.redis.pttl(bounded.keys.rawFrames(t, 'exec-1'))).toBeGreaterThan(0);
    await bounded.close();
    const aged = new EventStore(backend.client(), {
      prefix: freshPrefix(),
      rawFramesRetentionMs: 50,
    });
    await aged.rawFrames.append(t, 'exec-2', [{ direction: 'out', line: '{}' }]);
    expect((await aged.rawFrames.read(t, 'exec-2')).items).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 120));
    expect((await aged.rawFrames.read(t, 'exec-2')).items).toEqual([]);
    await aged.close();
  });

  it('keeps raw frames a write to a compressed entry, read back as written, plain entries too', async () => {
    const t = 'task-raw';
    const key = store.keys.rawFrames(t, 'exec-1');
    const frame = (i: number) => ({
      direction: i % 3 === 0 ? ('out' as const) : ('in' as const),
      line: JSON.stringify({
        jsonrpc: '2.0',
        method: 'session/update',
        params: {
          sessionId: 'sess-1',
          update: {
            sessionUpdate: 'agent_message_chunk',
            content: { type: 'text', text: `w${i}` },
          },
        },
      }),
    });
    // As earlier versions wrote them: an entry per frame, `d` and `f`.
    const plain = async (i: number) => {
      const f = frame(i);
      await store.redis.xadd(key, '*', 'd', f.direction, 'f', f.line);
    };
    let i = 0;
    await plain(i++);
    // A write of many frames, as a busy second of an agent is: what the compression is for. (With
    // 30, the log came to 0.49–0.51 of the plain one: a margin that MEMORY USAGE's listpack
    // layout, which moves with the ids' milliseconds, sometimes crossed.)
    for (const size of [1, 7, 120]) {
      const batch = Array.from({ length: size }, () => frame(i++));
      await store.rawFrames.append(t, 'exec-1', batch);
    }
    await plain(i++);
    await store.rawFrames.append(t, 'exec-1', [frame(i++), frame(i++)]);
    const expected = Array.from({ length: i }, (_, n) => frame(n));

    // A write is one entry; the log is less than half the same frames an entry each.
    expect(await store.redis.xlen(key)).toBe(2 + 4);
    const plainKey = store.keys.rawFrames(t, 'exec-plain');
    for (const f of expected) await store.redis.xadd(plainKey, '*', 'd', f.direction, 'f', f.line);
    const memory = async (k: string) =>
      Number(await store.redis.call('MEMORY', 'USAGE', k, 'SAMPLES', '0'));
    expect(await memory(key)).toBeLessThan((await memory(plainKey)) / 2);

    const all = await store.rawFrames.read(t, 'exec-1');
    expect(all.items.map(({ direction, line }) => ({ direction, line }))).toEqual(expected);
    expect(new Set(all.items.map((f) => f.id)).size).toBe(i);

    // In pages of entries, and after any frame's id: the frames after it, in order.
    const paged = [];
    let after = '0-0';
    for (;;) {
      const page = await store.rawFrames.read(t, 'exec-1', after, 2);
      if (page.items.length === 0) break;
      paged.push(...page.items);
      after = page.lastId;
    }
    expect(paged).toEqual(all.items);
    for (const [n, f] of all.items.entries()) {
      const rest = await store.rawFrames.read(t, 'exec-1', f.id);
      expect(rest.items).toEqual(all.items.slice(n + 1));
    }
  });

  it('keeps working after the scripts are flushed from Redis', async () => {
    const client = backend.client();
    if (isCluster(client)) {
      await Promise.all((client as Cluster).nodes('master').map((n) => n.script('FLUSH')));
    } else {
      await client.script('FLUSH');
    }
    expect(await store.append('t10', [fact('t10', 'w1', 1)])).toEqual([expect.any(String)]);
    const lease = await mustAcquire(store, store.shardOf('t10'), 'projector-a');
    expect(lease.epoch).toBe(1);
  });

  it('execution leases lapse by the server clock and generations only grow', async () => {
    const t = 'task-x';
    const shard = store.shardOf(t);
    const a = { taskId: t, sessionId: 's1', executionId: 'x-a' };
    const b = { taskId: t, sessionId: 's1', executionId: 'x-b' };
    expect(await store.executions.nextGeneration(t, 's1')).toBe(1);
    expect(await store.executions.nextGeneration(t, 's1')).toBe(2);
    expect(await store.executions.nextGeneration(t, 's2')).toBe(1);

    expect(await store.executions.renewLease(a, 30_000)).toBeGreaterThan(0);
    await store.executions.renewLease(b, 1);
    await waitUntil(async () => (await store.executions.expiredLeases(shard)).length === 1);
    // Listed with the period it was taken for (its owner's grace after an outage).
    expect(await store.executions.expiredLeases(shard)).toEqual([
      { ...b, expiresAt: expect.any(Number), ttlMs: 1 },
    ]);
    // Renewing moves it back into the future; dropping removes it.
    await store.executions.renewLease(b, 30_000);
    expect(await store.executions.expiredLeases(shard)).toEqual([]);
    expect((await store.executions.leases(shard)).map((l) => l.executionId).sort()).toEqual([
      'x-a',
      'x-b',
    ]);
    await store.executions.dropLease(a);
    await store.executions.dropLease(b);
    expect(await store.executions.leases(shard)).toEqual([]);
    expect(await backend.client().hlen(store.keys.executionLeaseTtls(shard))).toBe(0);
    // Extending never revives a dropped lease (an execution declared lost stays lost).
    expect(await store.executions.extendLease(a, 30_000)).toBeNull();
    expect(await store.executions.leases(shard)).toEqual([]);
    await store.executions.renewLease(a, 1);
    await waitUntil(async () => (await store.executions.expiredLeases(shard)).length === 1);
    expect(await store.executions.extendLease(a, 30_000)).toBeGreaterThan(0);
    expect(await store.executions.expiredLeases(shard)).toEqual([]);
    await store.executions.dropLease(a);
  });

  const view = (t: string, seq: number, subagents = seq) => ({
    taskId: t,
    status: 'active' as const,
    seq,
    activity: { foregroundActivity: null, activeSubagentCount: subagents },
    sessions: [],
  });

  it('stores task views fenced, only at the last published seq, keeping the first at a seq', async () => {
    const t = 'task-v';
    const shard = store.shardOf(t);
    const a = await mustAcquire(store, shard, 'projector-a');
    expect(await store.views.read(t)).toBeNull();
    // Nothing published yet: the view of seq 0 is the current one.
    expect(await store.views.write(a, view(t, 0))).toBe(true);
    await store.publishUpdates(a, t, [update(t, 1), update(t, 2)]);
    // A view behind or ahead of what is published is not the task's current view.
    expect(await store.views.write(a, view(t, 1))).toBe(false);
    expect(await store.views.write(a, view(t, 3))).toBe(false);
    expect(await store.views.write(a, view(t, 2))).toBe(true);
    // Readers cache a view by its seq: another view at the same seq does not replace it.
    expect(await store.views.write(a, view(t, 2, 9))).toBe(false);
    expect(await store.views.read(t)).toEqual(view(t, 2));
    expect(await store.leases.list()).toEqual([
      { shard, owner: 'projector-a', epoch: a.epoch, expiresAt: a.expiresAt },
    ]);

    expect(await store.leases.release(a)).toBe(true);
    const b = await mustAcquire(store, shard, 'projector-b');
    await store.publishUpdates(b, t, [update(t, 3)]);
    await expect(store.views.write(a, view(t, 3))).rejects.toThrow(FencedError);
    expect(await store.views.write(b, view(t, 3))).toBe(true);
    expect((await store.views.read(t))?.seq).toBe(3);
  });

  it('commits a step in one call: decisions, their updates with their ids, the view', async () => {
    const t = 'task-c';
    const shard = store.shardOf(t);
    const a = await mustAcquire(store, shard, 'projector-a');
    const [factId] = await store.append(t, [fact(t, 'w1', 1)]);
    const ofDecision = (seq: number) => {
      const { entry: _entry, ...u } = update(t, seq);
      return u;
    };
    const r = await store.commit(a, t, {
      expectedLastId: factId!,
      entries: [decision(t, 1), decision(t, 2)],
      updates: [
        update(t, 1),
        { of: 1, update: ofDecision(2) },
        { of: 2, update: { ...ofDecision(3), last: false } },
        { of: 2, update: ofDecision(4) },
      ],
      view: view(t, 4),
    });
    expect(r).toEqual({
      ids: [expect.any(String), expect.any(String)],
      published: 4,
      lastSeq: 4,
      viewStored: true,
    });
    expect((await store.readTask(t)).items.map((i) => i.id)).toEqual([factId, ...r.ids]);
    const published = (await store.readUpdates(shard)).items.map((i) => i.update);
    expect(published.map((u) => [u.seq, u.entry, u.last])).toEqual([
      [1, '1-0', true],
      [2, r.ids[0], true],
      [3, r.ids[1], false],
      [4, r.ids[1], true],
    ]);
    expect(published[3]).toEqual({ ...update(t, 4), entry: r.ids[1] });
    expect(await store.views.read(t)).toEqual(view(t, 4));
    expect(await store.lastUpdateSeq(t)).toBe(4);
  });

  it('refuses a whole step when fenced, behind the stream or leaving a gap', async () => {
    const t = 'task-r';
    const shard = store.shardOf(t);
    const a = await mustAcquire(store, shard, 'projector-a');
    const [id1] = await store.append(t, [fact(t, 'w1', 1)]);
    await store.commit(a, t, { updates: [update(t, 1)], view: view(t, 1) });
    const [id2] = await store.append(t, [fact(t, 'w1', 2)]);
    const nothingWritten = async () => {
      expect((await store.readTask(t)).items.map((i) => i.id)).toEqual([id1, id2]);
      expect(await store.lastUpdateSeq(t)).toBe(1);
      expect((await store.views.read(t))?.seq).toBe(1);
    };
    /** A's step: one decision, after `expectedLastId`, publishing update `seq` and its view. */
    const stepOfA = (expectedLastId: string, seq: number) =>
      store.commit(a, t, {
        expectedLastId,
        entries: [decision(t, 1)],
        updates: [update(t, seq)],
        view: view(t, seq),
      });
    // Behind the stream: someone appended after what the owner folded.
    await expect(stepOfA(id1!, 2)).rejects.toEqual(new ConflictError(id2!));
    await nothingWritten();
    // A gap: the decisions are not appended either.
    await expect(stepOfA(id2!, 3)).rejects.toEqual(new GapError(1, 3));
    await nothingWritten();
    // Fenced: a new owner took the shard.
    expect(await store.leases.release(a)).toBe(true);
    const b = await mustAcquire(store, shard, 'projector-b');
    await expect(stepOfA(id2!, 2)).rejects.toThrow(FencedError);
    await nothingWritten();
    // The new owner re-publishes from the start: seqs already published are skipped, and the
    // view it writes is the one at the last published seq.
    const r = await store.commit(b, t, {
      updates: [update(t, 1), update(t, 2)],
      view: view(t, 2),
    });
    expect(r).toEqual({ ids: [], published: 1, lastSeq: 2, viewStored: true });
    expect((await store.readUpdates(shard)).items.map((i) => i.update.seq)).toEqual([1, 2]);
    // Re-publishing everything again writes nothing, and keeps the view stored at that seq.
    expect(
      await store.commit(b, t, { updates: [update(t, 1), update(t, 2)], view: view(t, 2, 7) }),
    ).toEqual({ ids: [], published: 0, lastSeq: 2, viewStored: false });
    expect(await store.views.read(t)).toEqual(view(t, 2));
    // An owner behind what is published (its view older than the last seq) never stores it.
    expect(await store.commit(b, t, { updates: [update(t, 1)], view: view(t, 1) })).toEqual({
      ids: [],
      published: 0,
      lastSeq: 2,
      viewStored: false,
    });
    expect((await store.views.read(t))?.seq).toBe(2);
  });

  it('refuses an update of an entry the step does not append', async () => {
    const t = 'task-i';
    const lease = await mustAcquire(store, store.shardOf(t), 'projector-a');
    const { entry: _entry, ...u } = update(t, 1);
    await expect(store.commit(lease, t, { updates: [{ of: 1, update: u }] })).rejects.toThrow(
      InvalidEntryError,
    );
    await expect(store.commit(lease, t, { updates: [u] })).rejects.toThrow(InvalidEntryError);
  });

  it('publishes the steps of several tasks of a shard in one fenced call: a gap refuses its task alone, a stale lease the whole call', async () => {
    const ids = Array.from({ length: 400 }, (_, i) => `task-m${i}`);
    const shard = store.shardOf(ids[0]!);
    const [t1, t2, t3] = ids.filter((t) => store.shardOf(t) === shard) as [string, string, string];
    const a = await mustAcquire(store, shard, 'projector-a');
    await store.publishUpdates(a, t2, [update(t2, 1)]);
    const r = await store.publishMany(a, [
      { taskId: t1, updates: [update(t1, 1), update(t1, 2)], view: view(t1, 2) },
      // Seq 1 was published: skipped; seq 3 after it is a gap, so nothing of t2 is written.
      { taskId: t2, updates: [update(t2, 1), update(t2, 3)], view: view(t2, 3) },
      { taskId: t3, updates: [], view: view(t3, 0) },
    ]);
    expect(r).toEqual([
      { published: 2, lastSeq: 2, viewStored: true },
      new GapError(1, 3),
      { published: 0, lastSeq: 0, viewStored: true },
    ]);
    const seqs = async () =>
      (await store.readUpdates(shard)).items.map((i) => [i.update.taskId, i.update.seq]);
    expect(await seqs()).toEqual([
      [t2, 1],
      [t1, 1],
      [t1, 2],
    ]);
    expect(await Promise.all([t1, t2, t3].map((t) => store.lastUpdateSeq(t)))).toEqual([2, 1, 0]);
    expect(await store.views.read(t1)).toEqual(view(t1, 2));
    expect(await store.views.read(t2)).toBeNull();
    expect(await store.views.read(t3)).toEqual(view(t3, 0));
    // Again, as a new step would: what is published is skipped, a view at its seq is kept.
    expect(
      await store.publishMany(a, [
        { taskId: t1, updates: [update(t1, 2), update(t1, 3)], view: view(t1, 3) },
        { taskId: t2, updates: [update(t2, 2)], view: view(t2, 2) },
        { taskId: t3, updates: [], view: view(t3, 0, 5) },
      ]),
    ).toEqual([
      { published: 1, lastSeq: 3, viewStored: true },
      { published: 1, lastSeq: 2, viewStored: true },
      { published: 0, lastSeq: 0, viewStored: false },
    ]);
    expect(await store.views.read(t3)).toEqual(view(t3, 0));
    // A stale owner's call is refused whole: not even the task that would not gap is written.
    expect(await store.leases.release(a)).toBe(true);
    const b = await mustAcquire(store, shard, 'projector-b');
    const before = await seqs();
    await expect(
      store.publishMany(a, [
        { taskId: t1, updates: [update(t1, 4)], view: view(t1, 4) },
        { taskId: t3, updates: [update(t3, 1)], view: view(t3, 1) },
      ]),
    ).rejects.toThrow(FencedError);
    expect(await seqs()).toEqual(before);
    expect(await Promise.all([t1, t3].map((t) => store.lastUpdateSeq(t)))).toEqual([3, 0]);
    expect((await store.views.read(t1))?.seq).toBe(3);
    expect(await store.publishMany(b, [{ taskId: t3, updates: [update(t3, 1)] }])).toEqual([
      { published: 1, lastSeq: 1, viewStored: false },
    ]);
    // Every task of the call is checked: one of another shard, or twice, is refused up front.
    const other = ids.find((t) => store.shardOf(t) !== shard)!;
    await expect(store.publishMany(b, [{ taskId: other, updates: [] }])).rejects.toThrow(
      /is in shard/,
    );
    await expect(
      store.publishMany(b, [
        { taskId: t1, updates: [] },
        { taskId: t1, updates: [] },
      ]),
    ).rejects.toThrow(/twice/);
  });

  it("charges a tenant's stored bytes against its quota over the window, in one call", async () => {
    const day = 86_400_000;
    expect(await store.tenants.chargeStored('acme', 600, 1_000, day)).toEqual({
      charged: true,
      stored: 600,
    });
    // Refused: nothing charged; what fits still does. Another tenant has its own count.
    expect(await store.tenants.chargeStored('acme', 401, 1_000, day)).toEqual({
      charged: false,
      stored: 600,
    });
    expect(await store.tenants.chargeStored('acme', 400, 1_000, day)).toEqual({
      charged: true,
      stored: 1_000,
    });
    expect(await store.tenants.chargeStored('globex', 1_000, 1_000, day)).toMatchObject({
      charged: true,
    });
    // A bucket older than the window no longer counts, and goes.
    const key = store.keys.tenantStored('acme');
    const [sec] = await store.redis.time();
    const old = String(Number(sec) * 1000 - 2 * day);
    await store.redis.del(key);
    await store.redis.hset(key, old, 5_000);
    expect(await store.tenants.chargeStored('acme', 10, 1_000, day)).toEqual({
      charged: true,
      stored: 10,
    });
    expect(await store.redis.hexists(key, old)).toBe(0);
    expect(() => store.keys.tenantStored('a{b}')).toThrow(RangeError);
  });

  it('lists the task ids of each tenant; only add writes', async () => {
    expect(await store.tenants.has('acme', 't-1')).toBe(false);
    expect(await store.tenants.tasks('acme')).toEqual([]);
    await store.tenants.add('acme', 't-1');
    await store.tenants.add('acme', 't-1');
    await store.tenants.add('acme', 't-2');
    // The same id of another tenant is another task.
    await store.tenants.add('globex', 't-1');
    expect(await store.tenants.has('acme', 't-1')).toBe(true);
    expect(await store.tenants.has('globex', 't-2')).toBe(false);
    expect(await store.tenants.tasks('acme')).toEqual(['t-1', 't-2']);
    expect(await store.tenants.tasks('globex')).toEqual(['t-1']);
    expect(() => store.keys.tenantTasks('a{b}')).toThrow(RangeError);
  });

  it('projector heartbeats lapse by the server clock; shards list their tasks; feeds their end', async () => {
    expect(await store.projectors.heartbeat('p-b', 60_000)).toEqual(['p-b']);
    expect(await store.projectors.heartbeat('p-short', 150)).toEqual(['p-b', 'p-short']);
    expect(await store.projectors.heartbeat('p-a', 60_000)).toEqual(['p-a', 'p-b', 'p-short']);
    await waitUntil(
      async () => !(await store.projectors.heartbeat('p-a', 60_000)).includes('p-short'),
    );
    await store.projectors.leave('p-b');
    expect(await store.projectors.heartbeat('p-a', 60_000)).toEqual(['p-a']);

    const t = 'task-listed';
    const s = store.shardOf(t);
    expect(await store.shardTasks.listLive(s)).toEqual([]);
    expect(await store.feedLastId(s)).toBe('0-0');
    await store.shardTasks.add(s, [t, t]);
    expect(await store.shardTasks.listLive(s)).toEqual([t]);
    const inShard = Array.from({ length: 200 }, (_, i) => `task-${i}`).filter(
      (x) => store.shardOf(x) === s,
    );
    const other = Array.from({ length: 50 }, (_, i) => `task-${i}`).find(
      (x) => store.shardOf(x) !== s,
    )!;
    await expect(store.shardTasks.add(s, [other])).rejects.toThrow(/not in shard/);
    const [id] = await store.append(t, [fact(t, 'w', 1)]);
    const notes = (await store.redis.xrange(store.keys.feed(s), '-', '+')) as [string, string[]][];
    expect(notes).toHaveLength(1);
    expect(await store.feedLastId(s)).toBe(notes[0]![0]);
    expect(id).not.toBeNull();
    // An append puts its task in the live set, with its entries: a new owner finds it there.
    const appended = inShard[0]!;
    await store.append(appended, [fact(appended, 'w', 1)]);
    expect(await store.shardTasks.listLive(s)).toEqual([appended, t].sort());
    // Put away, a task leaves the live set; its next append puts it back, though the append only
    // adds it with its dedupe hash's renewal (which the put-away made due).
    const owned = await mustAcquire(store, s, 'owner-live', 60_000);
    const folded = await store.lastId(appended);
    await store.redis.hset(store.keys.snapshot(appended), 'id', folded);
    expect(await store.shardTasks.putAway(owned, { taskId: appended, foldedId: folded })).toBe(
      true,
    );
    expect(await store.shardTasks.listLive(s)).toEqual([t]);
    await store.append(appended, [fact(appended, 'w', 2)]);
    expect(await store.shardTasks.listLive(s)).toEqual([appended, t].sort());
    await store.leases.release(owned);
    // The live set starts, once, from the task set of earlier versions.
    const older = inShard.slice(1, 3);
    await store.redis.sadd(store.keys.shardTasks(s), ...older);
    expect(await store.shardTasks.startLive(s)).toBe(true);
    expect(await store.shardTasks.listLive(s)).toEqual([appended, t, ...older].sort());
    await store.redis.sadd(store.keys.shardTasks(s), inShard[3]!);
    expect(await store.shardTasks.startLive(s)).toBe(false);
    expect(await store.shardTasks.listLive(s)).not.toContain(inShard[3]);
  });
});

async function waitUntil(check: () => Promise<boolean>) {
  for (let i = 0; i < 500; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('condition never held');
}
