// Child process of bench/gateway.bench.ts: the clients, so that the server side is measured
// without them sharing its event loop. stdin commands (one JSON per line):
// - {"connect": url, "n": 1000, "subscribe": taskId|null, "token": "...", "transcript"?: sessionId}:
//   N clients that count the update frames (or, following a transcript, the transcript events)
//   they receive; {"expect": count} answers "done" once each has that many.
// - {"admit": {url, token, connections, rate, sessions: [[taskId, sessionId]...], count}}: sends
//   `count` prompts at `rate` per second round-robin over the sessions and connections, and
//   answers with the round trip (send → reply with the decision) of each, in ms.
import { createInterface } from 'node:readline';
import WebSocket from 'ws';

const clients: WebSocket[] = [];
const counts: number[] = [];
let expected = Infinity;
let remaining = 0;
const UPDATE = '{"v":1,"type":"update"';
const TRANSCRIPT = '{"v":1,"type":"transcript"';

function say(msg: object) {
  process.stdout.write(`${JSON.stringify(msg)}\n`);
}

async function connect(
  url: string,
  n: number,
  subscribe: string | null,
  token: string,
  transcript: string | null,
) {
  const opened: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
    const k = clients.length;
    clients.push(ws);
    counts.push(0);
    opened.push(
      new Promise<void>((resolve, reject) => {
        ws.once('error', reject);
        ws.on('message', (data: Buffer, isBinary: boolean) => {
          if (isBinary) return;
          const text = data.toString();
          if (subscribe !== null && text.includes('"type":"reply"')) {
            resolve();
            return;
          }
          // A refused subscribe fails the run instead of leaving it waiting.
          if (text.includes('"type":"error"')) reject(new Error(`subscribe refused: ${text}`));
          // An update counts one; a transcript message, its events.
          let n = 0;
          if (text.startsWith(UPDATE)) n = 1;
          else if (text.startsWith(TRANSCRIPT))
            n = (JSON.parse(text) as { events?: unknown[] }).events?.length ?? 0;
          if (n === 0) return;
          const before = counts[k]!;
          counts[k] = before + n;
          if (before < expected && counts[k]! >= expected) {
            if (--remaining === 0) say({ done: true });
          }
        });
        ws.once('open', () => {
          if (subscribe === null) resolve();
          else if (transcript !== null)
            ws.send(
              JSON.stringify({
                v: 1,
                id: 's',
                op: 'transcript.subscribe',
                taskId: subscribe,
                sessionId: transcript,
              }),
            );
          else ws.send(JSON.stringify({ v: 1, id: 's', op: 'subscribe', taskId: subscribe }));
        });
      }),
    );
    // Do not open a thousand sockets in one burst: the accept queue is finite.
    if (i % 50 === 49) await Promise.all(opened.slice(-50));
  }
  await Promise.all(opened);
  say({ connected: clients.length });
}

interface Admit {
  url: string;
  token: string;
  connections: number;
  rate: number;
  sessions: [string, string][];
  count: number;
}

async function admit(a: Admit) {
  const conns = await Promise.all(
    Array.from({ length: a.connections }, async () => {
      const ws = new WebSocket(a.url, { headers: { authorization: `Bearer ${a.token}` } });
      await new Promise((r, j) => {
        ws.once('open', r);
        ws.once('error', j);
      });
      return ws;
    }),
  );
  const sentAt: bigint[] = [];
  const rtt: number[] = new Array<number>(a.count);
  const outcomes: Record<string, number> = {};
  let answered = 0;
  let finish!: () => void;
  const all = new Promise<void>((r) => (finish = r));
  for (const ws of conns) {
    ws.on('message', (data: Buffer) => {
      const at = process.hrtime.bigint();
      const m = JSON.parse(data.toString()) as {
        type: string;
        id?: string;
        ok?: boolean;
        result?: { status: string; decision?: { outcome: string; reason?: string } };
      };
      if (m.type !== 'reply' || !m.id) return;
      const i = Number(m.id);
      rtt[i] = Number(at - sentAt[i]!) / 1e6;
      const d = m.result?.decision;
      const o = !m.ok
        ? 'error'
        : d
          ? `${d.outcome}${d.reason ? `:${d.reason}` : ''}`
          : m.result!.status;
      outcomes[o] = (outcomes[o] ?? 0) + 1;
      if (++answered === a.count) finish();
    });
  }
  const start = Date.now();
  for (let i = 0; i < a.count; i++) {
    // Paced by absolute time: `rate` per second whatever each send costs.
    const wait = start + (i * 1000) / a.rate - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const [taskId, sessionId] = a.sessions[i % a.sessions.length]!;
    sentAt[i] = process.hrtime.bigint();
    conns[i % conns.length]!.send(
      JSON.stringify({
        v: 1,
        id: String(i),
        op: 'prompt',
        taskId,
        sessionId,
        text: `prompt ${i}`,
        idempotencyKey: `k${i}`,
      }),
    );
  }
  await all;
  for (const ws of conns) ws.terminate();
  say({ rtt, outcomes });
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const cmd = JSON.parse(line) as {
    connect?: string;
    n?: number;
    subscribe?: string | null;
    /** With `subscribe`: the session whose transcript to follow instead of the task's updates. */
    transcript?: string;
    token?: string;
    expect?: number;
    close?: boolean;
    admit?: Admit;
  };
  if (cmd.admit) {
    void admit(cmd.admit).catch((err: unknown) => say({ error: String(err) }));
  } else if (cmd.connect) {
    void connect(
      cmd.connect,
      cmd.n ?? 1,
      cmd.subscribe ?? null,
      cmd.token ?? '',
      cmd.transcript ?? null,
    ).catch((err: unknown) => say({ error: String(err) }));
  } else if (cmd.expect !== undefined) {
    expected = cmd.expect;
    counts.fill(0);
    remaining = clients.length;
    say({ armed: true });
  } else if (cmd.close) {
    for (const ws of clients) ws.terminate();
    process.exit(0);
  }
});
