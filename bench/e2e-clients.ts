// Child process of bench/e2e.bench.ts: the WebSocket clients, each subscribed to one task, in a
// process of their own so that the servers are measured without them (one such process per lane,
// so that no lane's saturation is another lane's clients at their limit). Every update frame a
// client receives is recorded as (task index, seq, receive time on CLOCK_MONOTONIC in ms).
// stdin commands (one JSON per line), each answered with one JSON line:
// - {"connect": {group, kind: "baton"|"raw"|"peer", urls, token, tasks, perTask, route?}}: perTask
//   clients per task, client k of a task on urls[k % urls.length] (or, routed, every client of
//   task t on urls[route[t]]); baton clients subscribe with the /ws
//   protocol and wait for the reply, raw clients name their task in the URL (?task=), peer clients
//   are socket.io-client sockets (WebSocket transport) that name their task in the handshake
//   query and record each `update` event (socket.io parses the frame before the handler runs).
// - {"count": group}: updates received so far, and snapshots received after the subscription
//   (a resync: the server could not keep up with that client).
// - {"dump": {group, file}}: writes the receipts recorded since the last dump as Float64 triples.
// - {"clock": true}: this process's clock, to check that the clocks agree.
// - {"close": true}
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { io, type Socket } from 'socket.io-client';
import WebSocket from 'ws';
import { Stamps } from './stamps';

const UPDATE = '{"v":1,"type":"update"';
const SNAPSHOT = '{"v":1,"type":"snapshot"';

function say(msg: object) {
  process.stdout.write(`${JSON.stringify(msg)}\n`);
}

function now(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** What one group of clients received, and how often the gateway resynced them. */
class Receipts extends Stamps {
  /** Every update received, dumps or not (a dump empties the stamps). */
  total = 0;
  resyncs = 0;
  override add(task: number, seq: number, at: number) {
    super.add(task, seq, at);
    this.total += 1;
  }
}

const groups = new Map<string, Receipts>();
const sockets: WebSocket[] = [];
const peers: Socket[] = [];

interface Connect {
  group: string;
  kind: 'baton' | 'raw' | 'peer';
  urls: string[];
  token: string;
  tasks: string[];
  perTask: number;
  /**
   * Watchers routed: every client of tasks[t] on urls[route[t]] (a gateway per shard, say);
   * without it client k of a task is on urls[k % urls.length].
   */
  route?: number[];
}

function seqOf(text: string): number {
  const at = text.indexOf('"seq":', UPDATE.length);
  return at === -1 ? -1 : parseInt(text.slice(at + 6, at + 22), 10);
}

async function connect(c: Connect) {
  const rec = new Receipts();
  groups.set(c.group, rec);
  const opened: Promise<void>[] = [];
  let j = 0;
  for (const [t, taskId] of c.tasks.entries()) {
    const index = Number(taskId.slice(taskId.lastIndexOf('-') + 1));
    for (let k = 0; k < c.perTask; k++, j++) {
      const base = c.urls[c.route ? c.route[t]! : k % c.urls.length]!;
      if (c.kind === 'peer') {
        opened.push(peer(base, taskId, index, rec));
        if (j % 50 === 49) await Promise.all(opened.slice(-50));
        continue;
      }
      const url = c.kind === 'raw' ? `${base}/?task=${encodeURIComponent(taskId)}` : base;
      const ws = new WebSocket(url, { headers: { authorization: `Bearer ${c.token}` } });
      sockets.push(ws);
      opened.push(
        new Promise<void>((resolve, reject) => {
          let subscribed = c.kind === 'raw';
          ws.once('error', reject);
          ws.on('message', (data: Buffer, isBinary: boolean) => {
            if (isBinary) return;
            const text = data.toString();
            if (text.startsWith(UPDATE)) {
              rec.add(index, seqOf(text), now());
            } else if (!subscribed) {
              if (text.includes('"type":"reply"')) {
                if (!text.includes('"ok":true')) reject(new Error(`subscribe: ${text}`));
                subscribed = true;
                resolve();
              }
            } else if (text.startsWith(SNAPSHOT) && text.includes('"resync":true')) {
              rec.resyncs += 1;
            }
          });
          ws.once('open', () => {
            if (c.kind === 'raw') resolve();
            else ws.send(JSON.stringify({ v: 1, id: `s${t}`, op: 'subscribe', taskId }));
          });
        }),
      );
      // Not a thousand connections in one burst: the accept queue is finite.
      if (j % 50 === 49) await Promise.all(opened.slice(-50));
    }
  }
  await Promise.all(opened);
  say({ connected: j, group: c.group });
}

function peer(url: string, taskId: string, index: number, rec: Receipts): Promise<void> {
  const socket = io(url, {
    transports: ['websocket'],
    query: { task: taskId },
    forceNew: true,
    // A dropped connection would lose updates silently: the run fails on the gap instead.
    reconnection: false,
  });
  peers.push(socket);
  socket.on('update', (u: { seq: number }) => rec.add(index, u.seq, now()));
  return new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', reject);
  });
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const cmd = JSON.parse(line) as {
    connect?: Connect;
    count?: string;
    dump?: { group: string; file: string };
    clock?: boolean;
    close?: boolean;
  };
  if (cmd.connect) {
    void connect(cmd.connect).catch((err: unknown) => say({ error: String(err) }));
  } else if (cmd.count !== undefined) {
    const g = groups.get(cmd.count);
    say({ received: g?.total ?? 0, resyncs: g?.resyncs ?? 0 });
  } else if (cmd.dump) {
    const g = groups.get(cmd.dump.group)!;
    writeFileSync(cmd.dump.file, Buffer.from(g.buf.buffer, 0, g.n * 3 * 8));
    const n = g.n;
    g.n = 0;
    say({ dumped: n });
  } else if (cmd.clock) {
    say({ clock: now() });
  } else if (cmd.close) {
    for (const ws of sockets) ws.terminate();
    for (const s of peers) s.disconnect();
    process.exit(0);
  }
});
say({ ready: true });
