// Child process of bench/e2e.bench.ts: the raw baselines of the end-to-end figures, built from
// nothing but the raw operations (XADD, blocked XREAD + JSON.parse, ws send), one process per hop
// like Baton's.
//
// argv[2] is JSON {mode, redisUrl, ...}:
// - fanout {keys: string[]}: one blocked XREAD over the task streams the raw load writes, each
//   entry one of Baton's updates; each is parsed and sent, framed as the gateway frames an update
//   (serialized once for all), to the WebSocket clients that named its task (?task=), each
//   client's frames of one XREAD batch in one corked write (as the gateway does). Prints {url}.
// - front {name}: a WebSocket server taking `prompt` messages: each is XADDed to a request stream;
//   a blocked XREAD of its reply stream answers the client by id. Prints {url}.
// - decide: a blocked XREAD of the request stream; each request is parsed and answered with an
//   XADD to its front's reply stream. Prints {ready}.
// - observe {keys}: a blocked XREAD over Baton's update streams, recording when each update
//   (task index, seq) shows up in Redis: splits append → receive into its two hops. stdin
//   {"dump": file} writes the records since the last dump as Float64 triples.
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { AddressInfo } from 'node:net';
import { connectRedis, type RedisClient } from '@baton/store';
import type WebSocket from 'ws';
import { WebSocketServer } from 'ws';

interface Config {
  mode: 'fanout' | 'front' | 'decide' | 'observe';
  redisUrl: string;
  keys?: string[];
  name?: string;
}

const cfg = JSON.parse(process.argv[2]!) as Config;
const REQUESTS = 'rawadm:req';
/** One XREAD's answer: per stream read, its entries (id, flat field list). */
type Batch = [string, [string, string[]][]][];

function say(msg: object) {
  process.stdout.write(`${JSON.stringify(msg)}\n`);
}

async function listen(): Promise<WebSocketServer> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await once(wss, 'listening');
  return wss;
}

/**
 * Reads `keys` for ever, each from `from` on, with blocked XREADs of up to 1,000 entries; each
 * batch is handled (and awaited) before the next XREAD, which goes on after its last entries.
 */
async function tail(
  reader: RedisClient,
  keys: string[],
  from: string,
  handle: (batch: Batch) => void | Promise<void>,
): Promise<never> {
  const ids = keys.map(() => from);
  for (;;) {
    const batch = (await reader.xread(
      'COUNT',
      1_000,
      'BLOCK',
      1_000,
      'STREAMS',
      ...keys,
      ...ids,
    )) as Batch | null;
    if (!batch) continue;
    await handle(batch);
    for (const [key, entries] of batch) ids[keys.indexOf(key)] = entries[entries.length - 1]![0];
  }
}

function cork(ws: WebSocket) {
  (ws as unknown as { _socket: { cork(): void } })._socket.cork();
}
function uncork(ws: WebSocket) {
  (ws as unknown as { _socket: { uncork(): void } })._socket.uncork();
}

async function fanout() {
  const keys = cfg.keys!;
  const redis = connectRedis({ url: cfg.redisUrl });
  const wss = await listen();
  const subscribers = new Map<string, Set<WebSocket>>();
  const taskOf = new Map<string, string>();
  for (const k of keys) taskOf.set(k, k.slice(k.lastIndexOf(':') + 1));
  wss.on('connection', (ws, req) => {
    const task = new URL(req.url ?? '/', 'http://x').searchParams.get('task') ?? '';
    const set = subscribers.get(task) ?? new Set<WebSocket>();
    set.add(ws);
    subscribers.set(task, set);
    ws.on('close', () => set.delete(ws));
  });
  say({ url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}` });
  // The streams are new: read from their start, so nothing written before the first XREAD is missed.
  await tail(redis, keys, '0-0', (batch) => {
    const corked = new Set<WebSocket>();
    for (const [key, entries] of batch) {
      const taskId = taskOf.get(key)!;
      const subs = subscribers.get(taskId);
      for (const [, fields] of entries) {
        const update = JSON.parse(fields[1]!) as unknown;
        if (!subs) continue;
        const frame = `{"v":1,"type":"update","update":${JSON.stringify(update)}}`;
        for (const ws of subs) {
          if (!corked.has(ws)) {
            cork(ws);
            corked.add(ws);
          }
          ws.send(frame);
        }
      }
    }
    for (const ws of corked) uncork(ws);
  });
}

async function front() {
  const name = cfg.name ?? 'front';
  const redis = connectRedis({ url: cfg.redisUrl });
  const reader = connectRedis({ url: cfg.redisUrl });
  const replies = `rawadm:res:${name}`;
  const wss = await listen();
  const waiting = new Map<string, WebSocket>();
  let n = 0;
  wss.on('connection', (ws) => {
    ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString()) as { id: string; op: string };
      const key = `${++n}`;
      waiting.set(key, ws);
      void redis.xadd(REQUESTS, '*', 'e', JSON.stringify({ ...m, key, front: name }));
    });
  });
  say({ url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}` });
  await tail(reader, [replies], '0-0', (batch) => {
    for (const [, entries] of batch) {
      for (const [, fields] of entries) {
        const r = JSON.parse(fields[1]!) as { key: string; id: string; outcome: string };
        const ws = waiting.get(r.key);
        waiting.delete(r.key);
        ws?.send(
          JSON.stringify({
            v: 1,
            type: 'reply',
            id: r.id,
            ok: true,
            result: { status: 'decided', decision: { outcome: r.outcome } },
          }),
        );
      }
    }
  });
}

async function decide() {
  const redis = connectRedis({ url: cfg.redisUrl });
  const reader = connectRedis({ url: cfg.redisUrl });
  say({ ready: true });
  await tail(reader, [REQUESTS], '0-0', async (batch) => {
    const p = redis.pipeline();
    for (const [, entries] of batch) {
      for (const [, fields] of entries) {
        const m = JSON.parse(fields[1]!) as { key: string; id: string; front: string };
        p.xadd(
          `rawadm:res:${m.front}`,
          '*',
          'e',
          JSON.stringify({ key: m.key, id: m.id, outcome: 'admitted' }),
        );
      }
    }
    await p.exec();
  });
}

async function observe() {
  const keys = cfg.keys!;
  const reader = connectRedis({ url: cfg.redisUrl });
  let buf = new Float64Array(3 * 65_536);
  let n = 0;
  createInterface({ input: process.stdin }).on('line', (line) => {
    const cmd = JSON.parse(line) as { dump?: string };
    if (!cmd.dump) return;
    writeFileSync(cmd.dump, Buffer.from(buf.buffer, 0, n * 3 * 8));
    say({ dumped: n });
    n = 0;
  });
  say({ ready: true });
  await tail(reader, keys, '$', (batch) => {
    const at = Number(process.hrtime.bigint()) / 1e6;
    for (const [, entries] of batch) {
      for (const [, fields] of entries) {
        let task = '';
        let seq = 0;
        for (let i = 0; i < fields.length; i += 2) {
          if (fields[i] === 't') task = fields[i + 1]!;
          else if (fields[i] === 's') seq = Number(fields[i + 1]);
        }
        if (3 * (n + 1) > buf.length) {
          const bigger = new Float64Array(buf.length * 2);
          bigger.set(buf);
          buf = bigger;
        }
        buf[3 * n] = Number(task.slice(task.lastIndexOf('-') + 1));
        buf[3 * n + 1] = seq;
        buf[3 * n + 2] = at;
        n += 1;
      }
    }
  });
}

const modes = { fanout, front, decide, observe };
if (cfg.mode !== 'observe') {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.resume();
}
void modes[cfg.mode]().catch((err: unknown) => {
  say({ error: String(err) });
  process.exit(1);
});
