// A gateway reads the update streams of the shards its clients watch, and only those: a real
// gateway process and a real Redis, the test as the shards' owner publishing updates and views.
import { applyUpdate } from '@baton/client';
import { SCHEMA_VERSION, taskKey, type TaskView, type Update } from '@baton/protocol';
import type { Lease } from '@baton/store';
import { Redis } from 'ioredis';
import { Client, startStack, tokenFor, waitFor, type Stack } from '@baton/testing';

jest.setTimeout(120_000);

const TENANT = 'tails';
const SHARDS = 4;
const LINGER_MS = 150;
const tok = tokenFor(TENANT);
const K = (taskId: string) => taskKey(TENANT, taskId);

type Json = Record<string, unknown>;

let stack: Stack;
let url: string;
const leases: Lease[] = [];
/** What the owner published of each task key: its view at its last seq. */
const views = new Map<string, TaskView>();

beforeAll(async () => {
  stack = await startStack({
    gateways: 1,
    projectors: 0,
    shards: SHARDS,
    gatewayEnv: { GATEWAY_TAIL_LINGER_MS: String(LINGER_MS) },
  });
  url = stack.gateways[0]!.wsUrl;
  for (let s = 0; s < SHARDS; s++) {
    const r = await stack.store.leases.acquire(s, 'test-owner', 600_000);
    if (!r.acquired) throw new Error(`lease of shard ${s}`);
    leases.push(r.lease);
  }
});
afterAll(() => stack?.stop());

/** Task ids of the tenant, `perShard` on each shard, recorded as the tenant's. */
async function tasksOnShards(tag: string, perShard: number): Promise<string[][]> {
  const by: string[][] = Array.from({ length: SHARDS }, () => []);
  for (let i = 0; by.some((t) => t.length < perShard); i++) {
    const id = `${tag}-${i}`;
    const list = by[stack.store.shardOf(K(id))]!;
    if (list.length < perShard) list.push(id);
  }
  for (const id of by.flat()) await stack.store.tenants.add(TENANT, id);
  return by;
}

/** The owner's step: `n` updates of one entry (a group), and the view after them, in one call. */
async function publish(taskId: string, n: number): Promise<void> {
  const key = K(taskId);
  let view: TaskView = views.get(key) ?? {
    taskId: key,
    seq: 0,
    status: 'active',
    activity: { foregroundActivity: null, activeSubagentCount: 0 },
    sessions: [],
  };
  const updates: Update[] = [];
  for (let i = 0; i < n; i++) {
    const seq = view.seq + 1;
    const u: Update = {
      v: SCHEMA_VERSION,
      taskId: key,
      seq,
      entry: `${Date.now()}-${seq}`,
      last: i === n - 1,
      type: 'session.activity',
      data: {
        sessionId: `s${seq % 3}`,
        state: 'running',
        foregroundActivity: seq % 2 === 0 ? 'generating' : 'background',
        activeSubagentCount: seq % 4,
        supportsSteering: false,
        runningGeneration: seq,
        admission: 'coarse',
        attention: null,
      },
    };
    updates.push(u);
    view = applyUpdate(view, u);
  }
  // One entry: its updates share its id.
  for (const u of updates) u.entry = updates[0]!.entry;
  const lease = leases[stack.store.shardOf(key)]!;
  await stack.store.commit(lease, key, { updates, view });
  views.set(key, view);
}

/** Every XREAD a client of this Redis sends, by the streams it names; and the views it reads. */
async function watchReads(): Promise<{
  keys: Set<string>;
  viewReads: string[];
  stop: () => void;
}> {
  const keys = new Set<string>();
  const viewReads: string[] = [];
  // No ready check: its INFO reply would reach the monitor's command queue.
  const base = new Redis(stack.redis.url, { enableReadyCheck: false });
  const monitor = await base.monitor();
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (String(args[0]).toLowerCase() === 'hget' && String(args[1]).endsWith(':views')) {
      viewReads.push(String(args[2]));
    }
    if (String(args[0]).toLowerCase() !== 'xread') return;
    const at = args.findIndex((a) => String(a).toLowerCase() === 'streams');
    const named = args.slice(at + 1);
    for (const k of named.slice(0, named.length / 2)) keys.add(k);
  });
  return {
    keys,
    viewReads,
    stop: () => {
      monitor.disconnect();
      base.disconnect();
    },
  };
}

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${stack.gateways[0]!.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.split(' ')[1]);
}

const resultOf = (reply: Json) => {
  expect(reply).toMatchObject({ ok: true });
  return reply.result as Json;
};

describe('a gateway reads only the shards its clients watch', () => {
  it('with watchers on one shard it reads and decodes that shard’s stream alone; the tail moves with them', async () => {
    const by = await tasksOnShards('one', 1);
    const [a, b] = [by[0]![0]!, by[1]![0]!];
    const reads = await watchReads();
    const decodedBefore = await metric('baton_gateway_updates_decoded_total');
    const c = await Client.connect(url, tok);
    try {
      expect(resultOf(await c.request({ op: 'subscribe', taskId: a }))).toMatchObject({
        mode: 'snapshot',
      });
      // The other shard's updates go first: a tail that read it would decode them before a's.
      for (let i = 0; i < 5; i++) await publish(b, 2);
      for (let i = 0; i < 5; i++) await publish(a, 2);
      await waitFor(async () => c.updates(a).length === 10, "a's updates delivered");
      expect([...reads.keys]).toEqual([stack.store.keys.updates(0)]);
      expect((await metric('baton_gateway_updates_decoded_total')) - decodedBefore).toBe(10);
      expect(await metric('baton_gateway_update_shards_tailed')).toBe(1);

      // The last watcher gone, the shard is read no more; a watcher of b starts b's tail.
      await c.request({ op: 'unsubscribe', taskId: a });
      await waitFor(
        async () => (await metric('baton_gateway_update_shards_tailed')) === 0,
        'the tail dropped after the linger',
      );
      reads.keys.clear();
      const seen = c.messages.length;
      resultOf(await c.request({ op: 'subscribe', taskId: b, afterSeq: 10 }));
      await publish(a, 1);
      await publish(b, 1);
      await waitFor(async () => c.updates(b).length === 1, "b's update delivered");
      expect(c.messages.slice(seen).filter((m) => m.type === 'snapshot')).toEqual([]);
      expect(c.updates(b).map((u) => u.seq)).toEqual([11]);
      // b's update may have come by the subscription's own catch-up: the tail's first read is
      // then seen (MONITOR reports asynchronously) a little later.
      await waitFor(() => reads.keys.size > 0, "the tail of b's shard reading");
      expect([...reads.keys]).toEqual([stack.store.keys.updates(1)]);
      expect(await metric('baton_gateway_update_shards_tailed')).toBe(1);
    } finally {
      reads.stop();
      await c.close();
    }
  });

  it('a watched task’s view is read from Redis once, then advanced by the updates the tail decodes', async () => {
    const [t] = (await tasksOnShards('views', 1))[2]!;
    const taskId = t!;
    await publish(taskId, 2);
    const reads = await watchReads();
    const c = await Client.connect(url, tok);
    const http = stack.gateways[0]!.url;
    try {
      resultOf(await c.request({ op: 'subscribe', taskId }));
      for (let i = 0; i < 5; i++) {
        await publish(taskId, 1 + (i % 3));
        const seq = views.get(K(taskId))!.seq;
        await waitFor(async () => c.updates(taskId).at(-1)?.seq === seq, `update ${seq}`);
        const r = await fetch(`${http}/v1/tasks/${taskId}`, {
          headers: { authorization: `Bearer ${tok}` },
        });
        expect(await r.json()).toEqual({ ...views.get(K(taskId))!, taskId });
      }
      expect(reads.viewReads.filter((k) => k === K(taskId))).toHaveLength(1);
    } finally {
      reads.stop();
      await c.close();
    }
  });

  it('subscribing, leaving and coming back while updates are published: nothing missed, nothing doubled', async () => {
    const seed = Number(process.env.SEED ?? Date.now() % 1_000_000);
    let state = seed;
    // A small seeded generator (mulberry32): a failure names its seed, and SEED=… replays it.
    const random = () => {
      state = (state + 0x6d2b79f5) | 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const tasks = (await tasksOnShards('race', 2)).flat();
    for (const t of tasks) await publish(t, 1);

    let publishing = true;
    const publisher = (async () => {
      while (publishing) {
        await publish(pick(tasks), 1 + Math.floor(random() * 3));
        if (random() < 0.5) await sleep(Math.floor(random() * 4));
      }
    })();

    /** What each connection asked, by request id, to read its messages back in order. */
    interface Conn {
      c: Client;
      asked: Map<string, { op: 'subscribe' | 'unsubscribe'; taskId: string; afterSeq?: number }>;
      subscribed: Set<string>;
      lastSeq: Map<string, number>;
    }
    const conns: Conn[] = await Promise.all(
      Array.from({ length: 4 }, async () => ({
        c: await Client.connect(url, tok),
        asked: new Map(),
        subscribed: new Set<string>(),
        lastSeq: new Map<string, number>(),
      })),
    );
    let n = 0;
    const ask = async (k: Conn, op: 'subscribe' | 'unsubscribe', taskId: string) => {
      const id = `r${++n}`;
      const resume = op === 'subscribe' && k.lastSeq.has(taskId) && random() < 0.5;
      const afterSeq = resume ? k.lastSeq.get(taskId)! : undefined;
      k.asked.set(id, { op, taskId, ...(resume ? { afterSeq } : {}) });
      const reply = await k.c.request({ id, op, taskId, ...(resume ? { afterSeq } : {}) });
      expect(reply).toMatchObject({ ok: true });
      if (op === 'subscribe') k.subscribed.add(taskId);
      else {
        k.subscribed.delete(taskId);
        // What the client has of the task when it leaves: a resume continues from there.
        for (let i = k.c.messages.length - 1; i >= 0; i--) {
          const m = k.c.messages[i]!;
          const v = m.type === 'update' ? (m.update as Update) : (m.task as TaskView | undefined);
          if (v?.taskId !== taskId) continue;
          k.lastSeq.set(taskId, v.seq);
          break;
        }
      }
    };
    await Promise.all(
      conns.map(async (k) => {
        for (let i = 0; i < 40; i++) {
          const t = pick(tasks);
          await ask(k, k.subscribed.has(t) ? 'unsubscribe' : 'subscribe', t);
          // Now and then everyone may have left a shard long enough for its tail to go.
          await sleep(random() < 0.15 ? LINGER_MS + 100 : Math.floor(random() * 15));
        }
        for (const t of tasks) if (k.subscribed.has(t)) await ask(k, 'unsubscribe', t);
      }),
    );
    publishing = false;
    await publisher;
    // Every tail gone; then every connection subscribes to every task as each task gets its
    // last update: a tail placed late, or from the wrong place, loses one for good.
    await waitFor(
      async () => (await metric('baton_gateway_update_shards_tailed')) === 0,
      'every tail dropped',
    );
    await Promise.all([
      ...conns.map(async (k) => {
        for (const t of tasks) await ask(k, 'subscribe', t);
      }),
      ...tasks.map(async (t) => {
        await sleep(Math.floor(random() * 20));
        await publish(t, 1 + Math.floor(random() * 3));
      }),
    ]);

    for (const k of conns) {
      /**
       * The connection's messages read back in order: a snapshot sets a task's view, each update
       * must be the next seq (a double or a gap throws), and a subscription's reply names the seq
       * the client has then.
       */
      const replay = () => {
        const seq = new Map<string, number>();
        const view = new Map<string, TaskView>();
        for (const m of k.c.messages) {
          if (m.type === 'snapshot') {
            const v = m.task as TaskView;
            view.set(v.taskId, v);
            seq.set(v.taskId, v.seq);
          } else if (m.type === 'update') {
            const u = m.update as Update;
            const q = seq.get(u.taskId);
            if (q === undefined || u.seq !== q + 1) {
              throw new Error(`seed ${seed}: ${u.taskId} update ${u.seq} after ${q}`);
            }
            seq.set(u.taskId, u.seq);
            view.set(u.taskId, applyUpdate(view.get(u.taskId)!, u));
          } else if (m.type === 'reply') {
            const a = k.asked.get(m.id as string)!;
            if (a.op === 'subscribe') {
              expect([seed, a.taskId, (m.result as Json).seq]).toEqual([
                seed,
                a.taskId,
                seq.get(a.taskId),
              ]);
            }
          }
        }
        return { seq, view };
      };
      // Every update published reaches every connection (all of them watch every task now).
      await waitFor(
        async () => tasks.every((t) => replay().seq.get(t) === views.get(K(t))!.seq),
        `seed ${seed}: every connection up to date`,
      );
      const final = replay();
      for (const t of tasks) {
        expect([t, final.view.get(t)]).toEqual([t, { ...views.get(K(t))!, taskId: t }]);
      }
      await k.c.close();
    }
  });
});
