/**
 * Records the real claude-agent-acp 0.101.0 speaking draft ACP v2 (protocolVersion 2) to a raw
 * NDJSON client, offline against the scripted model server: a background shell, then its end.
 * Baton refuses v2 (it speaks v1 only); the recording is kept for the v2 dialect to come.
 *
 *   node --import tsx libs/acp/test/support/record-v2.ts libs/acp/fixtures/claude-v2-shell.jsonl
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseLine, toRecordingLine, type Frame } from '../../src';
import { findClaudeInstall, offlineClaudeEnv } from './claude-cli';
import { startScriptedModelServer } from './scripted-model-server';
import { scrubRecording } from './scrub-recording';

const out = process.argv[2];
const install = findClaudeInstall();
if ('missing' in install) throw new Error(install.missing);

const main = async () => {
  const home = mkdtempSync(join(tmpdir(), 'baton-claude-'));
  const work = join(home, 'work');
  mkdirSync(work);
  const server = await startScriptedModelServer({
    script: [
      {
        name: 'launch shell',
        when: { last: 'RUN-SHELL' },
        reply: [
          { type: 'text', text: 'Starting it.' },
          {
            type: 'tool_use',
            id: 'toolu_shell',
            name: 'Bash',
            input: {
              command: 'until [ -f release-shell ]; do sleep 0.1; done; echo done',
              description: 'Wait for release',
              run_in_background: true,
            },
          },
        ],
      },
      {
        name: 'shell launched',
        when: { afterTool: 'Bash' },
        reply: [{ type: 'text', text: 'It runs in the background.' }],
      },
      {
        name: 'notification cycle',
        when: { reminder: '<task-notification>' },
        reply: [{ type: 'text', text: 'Noted.' }],
        repeat: true,
      },
    ],
  });
  const child = spawn(process.execPath, [install.adapter], {
    env: offlineClaudeEnv(home, server.url),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const frames: Frame[] = [];
  let buf = '';
  let sessionId = '';
  const waiters: { id: number; resolve: (m: Record<string, unknown>) => void }[] = [];
  const send = (message: Record<string, unknown>) => {
    const line = JSON.stringify(message);
    frames.push(parseLine('client->agent', line, new Date().toISOString()));
    child.stdin.write(line + '\n');
  };
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.trim() === '') continue;
      const frame = parseLine('agent->client', line, new Date().toISOString());
      frames.push(frame);
      const m = frame.message as Record<string, unknown>;
      if (typeof m.method === 'string' && m.id !== undefined) {
        // A permission request: allow once.
        const options = ((m.params as { options?: { optionId: string; kind: string }[] })
          ?.options ?? []) as { optionId: string; kind: string }[];
        const allow = options.find((o) => o.kind.startsWith('allow')) ?? options[0];
        send({
          jsonrpc: '2.0',
          id: m.id,
          result: allow
            ? { outcome: { outcome: 'selected', optionId: allow.optionId } }
            : { outcome: { outcome: 'cancelled' } },
        });
      }
      const w = waiters.findIndex((x) => x.id === m.id && m.method === undefined);
      if (w >= 0) waiters.splice(w, 1)[0]!.resolve(m);
    }
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr = (stderr + String(c)).slice(-4000)));
  let next = 0;
  const request = (method: string, params: unknown) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const id = next++;
      const t = setTimeout(() => reject(new Error(`${method} timed out\n${stderr}`)), 30_000);
      waiters.push({
        id,
        resolve: (m) => {
          clearTimeout(t);
          resolve(m);
        },
      });
      send({ jsonrpc: '2.0', id, method, params });
    });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  try {
    await request('initialize', {
      protocolVersion: 2,
      info: { name: 'baton', version: '0.1.0' },
      capabilities: {},
    });
    const s = await request('session/new', { cwd: work, mcpServers: [] });
    sessionId = String((s.result as { sessionId?: string } | undefined)?.sessionId ?? '');
    if (sessionId === '') throw new Error(`session/new failed: ${JSON.stringify(s)}`);
    const p = await request('session/prompt', {
      sessionId,
      prompt: [{ type: 'text', text: 'RUN-SHELL' }],
      _meta: { baton: { promptId: 'p1', admissionGeneration: 1 } },
    });
    console.log('prompt answered', JSON.stringify(p).slice(0, 200));
    for (let i = 0; i < 100 && !server.used.includes('shell launched'); i++) await sleep(100);
    await sleep(1_000);
    writeFileSync(join(work, 'release-shell'), '');
    for (let i = 0; i < 100 && !server.used.includes('notification cycle'); i++) await sleep(100);
    await sleep(1_500);
  } finally {
    child.kill('SIGTERM');
    await server.close();
    console.log(`model turns used: ${JSON.stringify(server.used)}`);
    if (out !== undefined && sessionId !== '') {
      const scrubbed = scrubRecording(frames, { home, sessionId });
      writeFileSync(out, scrubbed.map(toRecordingLine).join('\n') + '\n');
      console.log(`wrote ${scrubbed.length} frames to ${out}`);
    }
    rmSync(home, { recursive: true, force: true });
  }
};

void main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
