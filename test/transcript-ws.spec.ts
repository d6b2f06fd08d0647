// A session's transcript read over /ws and by the CLI, every part a real process: redis-server, a
// projector, a gateway, a worker replaying real Claude and Codex recordings. What a reader gets
// is what the reducer makes of the recording itself.
import { parseRecording } from '@baton/acp';
import { foldTranscript, type TranscriptEntry } from '@baton/client';
import { taskKey } from '@baton/protocol';
import {
  transcriptOf,
  type PermissionItem,
  type RecordedFrame,
  type ToolItem,
  type TranscriptItem,
} from '@baton/transcript';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import {
  Client,
  FIXTURES,
  ROOT,
  cli,
  startAgentStack,
  token,
  waitFor,
  type AgentStack,
} from '@baton/testing';

jest.setTimeout(180_000);

let stack: AgentStack;

beforeAll(async () => {
  stack = await startAgentStack({
    profiles: {
      // The real recordings set the session mode (a wait point of the replay).
      real: { kind: 'replay', speed: 0, mode: 'default', permissionPolicy: 'deny' },
      allow: { kind: 'replay', speed: 0, permissionPolicy: 'allow-once' },
    },
    recordings: [
      'claude-real-terminal-shell',
      'claude-shell-background-plain',
      'codex-real-terminal-exec',
      'claude-real-edit',
    ],
  });
});
afterAll(() => stack?.stop());

const framesOf = (name: string) =>
  parseRecording(readFileSync(join(FIXTURES, `${name}.jsonl`), 'utf8')) as RecordedFrame[];

/** The recording's one prompt: its Baton prompt id and text. */
function promptOf(frames: RecordedFrame[]): { promptId: string; text: string } {
  for (const f of frames) {
    const m = f.message as {
      method?: string;
      params?: { prompt?: { text?: string }[]; _meta?: { baton?: { promptId: string } } };
    };
    if (f.direction === 'client->agent' && m.method === 'session/prompt')
      return { promptId: m.params!._meta!.baton!.promptId, text: m.params!.prompt![0]!.text! };
  }
  throw new Error('no prompt');
}

/**
 * Items with the run's own values made comparable: the prompt id Baton gave the prompt stands
 * for the recorded one, and who settled a permission when is left out (checked apart).
 */
function comparable(items: TranscriptItem[], promptIds: Map<string, string>): unknown {
  return items.map((i) => {
    const turn = i.turn === null ? null : (promptIds.get(i.turn) ?? i.turn);
    let out: Record<string, unknown> = { ...i, turn };
    if (i.type === 'prompt' && i.promptId !== null)
      out = { ...out, promptId: promptIds.get(i.promptId) ?? i.promptId };
    if (i.type === 'permission' && i.settled)
      out = { ...out, settled: { ...i.settled, by: '', at: '' } };
    return out;
  });
}

interface Played {
  taskId: string;
  sessionId: string;
  entries: TranscriptEntry[];
  items: TranscriptItem[];
  expected: TranscriptItem[];
}

/**
 * Starts an execution replaying `recording`, prompts it as recorded, and reads its transcript
 * over /ws through @baton/client until it holds every item the recording makes.
 */
async function play(recording: string, profile: string, taskId: string): Promise<Played> {
  const sessionId = 's';
  const frames = framesOf(recording);
  const recorded = promptOf(frames);
  const started = await stack.execute(taskId, { profile, recording }, sessionId);
  expect(started.status).toBe(202);
  const client = await stack.connect();
  const entries: TranscriptEntry[] = [];
  let items: TranscriptItem[] = [];
  try {
    const reader = client.transcript(taskId, sessionId, {
      onEvents: (es) => entries.push(...es),
      onItems: (xs) => (items = xs),
    });
    await reader.ready;
    const d = await client.prompt({ taskId, sessionId, text: recorded.text });
    const ids = new Map([[recorded.promptId, d.promptId]]);
    const expected = foldTranscript(transcriptOf(frames, undefined, 'g1.').events);
    // As JSON: what travelled has no undefined fields; key order does not matter.
    const json = (v: unknown): unknown => JSON.parse(JSON.stringify(v));
    const want = json(comparable(expected, new Map()));
    const back = new Map([...ids].map(([a, b]) => [b, a]));
    await waitFor(
      () => isDeepStrictEqual(json(comparable(items, back)), want),
      `the transcript of ${recording} over /ws`,
      60_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\ngot ${JSON.stringify(items)}\nwant ${JSON.stringify(want)}`);
    });
    expect(items).toEqual(foldTranscript(entries.map((e) => e.event)));
    return { taskId, sessionId, entries, items, expected };
  } finally {
    await client.close();
  }
}

const messages = (xs: TranscriptItem[]) =>
  xs.flatMap((i) => (i.type === 'message' && i.role === 'agent' ? [i.text] : []));
const toolOf = (xs: TranscriptItem[]) => xs.find((i): i is ToolItem => i.type === 'tool')!;

let claude: Played;
let codex: Played;

it('Claude: the answer, a tool call and its output, usage — as the recording holds them', async () => {
  claude = await play('claude-real-terminal-shell', 'real', 't-claude');
  expect(messages(claude.items)).toEqual(['Starting it.', 'It runs in the background.', 'Noted.']);
  expect(toolOf(claude.items)).toMatchObject({
    toolCallId: 'toolu_shell',
    status: 'completed',
    output: { text: expect.stringMatching(/^Command running in background with ID: bgyp2uzhc/) },
  });
  expect(claude.items.find((i) => i.type === 'turn_end')).toMatchObject({
    tokens: { input: 200, output: 20, total: 220 },
  });
});

it('Claude: a permission, its content and how the profile settled it', async () => {
  const p = await play('claude-shell-background-plain', 'allow', 't-perm');
  const perm = p.items.find((i): i is PermissionItem => i.type === 'permission')!;
  expect(perm).toMatchObject({
    toolCallId: 'toolu_B',
    title: 'sleep 100',
    options: [
      { optionId: 'allow', kind: 'allow_once' },
      { optionId: 'reject', kind: 'reject_once' },
    ],
    settled: { outcome: 'selected', optionId: 'allow', optionKind: 'allow_once', by: 'policy' },
  });
  expect(messages(p.items)).toContain('Started it in the background.');
  expect(p.items.find((i) => i.type === 'usage')).toMatchObject({
    used: 52632,
    size: 200000,
    cost: { amount: 3.17, currency: 'USD' },
  });
});

it('Claude: a file edit — the diff the person approves and the tool that made it', async () => {
  const p = await play('claude-real-edit', 'allow', 't-edit');
  const notes = '/tmp/baton-claude/work/notes.txt';
  const diff = { path: notes, oldText: { text: 'hello world' }, newText: { text: 'hello baton' } };
  const perms = p.items.filter((i): i is PermissionItem => i.type === 'permission');
  expect(perms.map((x) => x.toolCallId)).toEqual(['toolu_edit', 'toolu_write']);
  expect(perms[0]).toMatchObject({
    title: 'Edit notes.txt',
    diff,
    settled: { outcome: 'selected', optionId: 'allow-once', by: 'policy' },
  });
  expect(perms[1]).toMatchObject({
    title: 'Write fresh.txt',
    diff: { oldText: null, newText: { text: 'a new file\nwritten by the model\n' } },
  });
  const edit = p.items.find(
    (i): i is ToolItem => i.type === 'tool' && i.toolCallId === 'toolu_edit',
  );
  // The tool shows the edit in its file's context.
  expect(edit).toMatchObject({ title: 'Edit notes.txt', diff: { path: notes } });
  expect(edit!.diff!.newText.text).toContain('hello baton');
  expect(edit!.diff!.oldText?.text).toContain('hello world');
});

it('Codex: the answer, the command, its output and exit, usage', async () => {
  codex = await play('codex-real-terminal-exec', 'real', 't-codex');
  expect(messages(codex.items)).toEqual(['It printed hello.']);
  expect(toolOf(codex.items)).toMatchObject({
    input: { command: { text: 'until [ -f release-exec ]; do sleep 0.1; done; echo hello' } },
    output: { text: 'hello\n' },
    exit: { code: 0 },
  });
  expect(codex.items.find((i) => i.type === 'usage')).toMatchObject({ used: 110, size: 258_400 });
});

it('a reader that reconnects with its cursor misses nothing and gets nothing twice', async () => {
  const all = claude.entries.map((e) => e.id);
  expect(all.length).toBeGreaterThan(2);
  const first = await Client.connect(stack.gateways[0]!.wsUrl, stack.token);
  const r1 = await first.request({
    op: 'transcript.subscribe',
    taskId: 't-claude',
    sessionId: 's',
  });
  expect(r1).toMatchObject({ ok: true });
  const m1 = await first.next((m) => m.type === 'transcript', 'the first message');
  await first.close();
  // Resume mid-stream: one event in, as a reader cut off there would.
  const cut = (m1.events as TranscriptEntry[])[0]!.id;
  const second = await Client.connect(stack.gateways[0]!.wsUrl, stack.token);
  try {
    await second.request({
      op: 'transcript.subscribe',
      taskId: 't-claude',
      sessionId: 's',
      after: cut,
    });
    const rest = await waitFor(
      () => {
        const got = second.messages
          .filter((m) => m.type === 'transcript')
          .flatMap((m) => (m.events as TranscriptEntry[]).map((e) => e.id));
        return got.length >= all.length - 1 ? got : null;
      },
      'the rest',
      15_000,
    );
    await new Promise((r) => setTimeout(r, 200));
    expect([cut, ...rest]).toEqual(all);
  } finally {
    await second.close();
  }
});

it("another tenant's token reads an empty transcript and cannot page it", async () => {
  const other = token({ tenant: 'globex', scope: 'read' });
  const c = await Client.connect(stack.gateways[0]!.wsUrl, other);
  try {
    const r = await c.request({ op: 'transcript.subscribe', taskId: 't-claude', sessionId: 's' });
    expect(r).toMatchObject({ ok: true, result: { subscribed: true, cursor: '0-0' } });
    await new Promise((res) => setTimeout(res, 500));
    expect(c.messages.filter((m) => m.type === 'transcript')).toEqual([]);
  } finally {
    await c.close();
  }
  const page = await stack.rest(
    'GET',
    '/v1/tasks/t-claude/sessions/s/transcript',
    undefined,
    other,
  );
  expect(page.status).toBe(404);
});

it('REST pages the same events /ws delivered', async () => {
  const ids: string[] = [];
  let after: string | undefined;
  for (;;) {
    const q = after === undefined ? '?limit=2' : `?limit=2&after=${after}`;
    const r = await stack.rest('GET', `/v1/tasks/t-codex/sessions/s/transcript${q}`);
    expect(r.status).toBe(200);
    const page = r.body as { events: TranscriptEntry[]; cursor: string };
    ids.push(...page.events.map((e) => e.id));
    if (page.cursor === (after ?? '0-0')) break;
    after = page.cursor;
  }
  expect(ids).toEqual(codex.entries.map((e) => e.id));
  const bad = await stack.rest('GET', '/v1/tasks/t-codex/sessions/s/transcript?after=nope');
  expect(bad.status).toBe(400);
});

const cliEnv = () => ({ BATON_GATEWAY_URL: stack.gateways[0]!.url, BATON_TOKEN: stack.token });

it('baton transcript prints the conversation; --json the events', async () => {
  const r = await cli(['transcript', 't-codex', 's'], cliEnv());
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  expect(r.stdout).toContain('It printed hello.');
  expect(r.stdout).toContain('$ until [ -f release-exec ]; do sleep 0.1; done; echo hello');
  expect(r.stdout).toMatch(/│ hello/);
  expect(r.stdout).toMatch(/usage: context 110\/258400/);
  const perm = await cli(['transcript', 't-perm'], cliEnv());
  expect(perm.code).toBe(0);
  expect(perm.stdout).toContain('permission sleep 100');
  expect(perm.stdout).toContain('answered: Allow (allow_once) by policy');
  const json = await cli(['transcript', 't-codex', 's', '--json'], cliEnv());
  const lines = json.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as TranscriptEntry);
  expect(lines.map((e) => e.id)).toEqual(codex.entries.map((e) => e.id));
  expect(lines.map((e) => e.event)).toEqual(codex.entries.map((e) => e.event));
});

it('baton transcript never passes hostile agent output to the terminal', async () => {
  const key = taskKey(stack.tenant, 't-hostile');
  await stack.store.tenants.add(stack.tenant, 't-hostile');
  const hostile =
    'safe\u001b[2J\u001b[31mred\u001b[0m\u001b]0;pwned title\u0007\u001b]52;c;Y2xpcGJvYXJk\u0007' +
    'rm -rf /\rls -la\u0008\u0000\u009b31m\u202eevil';
  await stack.store.transcripts.append(key, [
    {
      sessionId: 's',
      executionId: 'x',
      event: { type: 'text', turn: null, phase: 'turn', item: 'm', role: 'agent', delta: hostile },
    },
    {
      sessionId: 's',
      executionId: 'x',
      event: {
        type: 'tool',
        turn: null,
        phase: 'turn',
        item: 't',
        toolCallId: 'c',
        title: 'x\u001b]8;;http://evil\u0007link\u001b]8;;\u0007',
        status: 'completed',
        output: { mode: 'append', text: 'ok\r\u001b[1Aoverwritten' },
      },
    },
  ]);
  const r = await cli(['transcript', 't-hostile', 's'], cliEnv());
  expect(r.code).toBe(0);
  // eslint-disable-next-line no-control-regex
  expect(r.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/);
  expect(r.stdout).toContain('saferedrm -rf /');
  expect(r.stdout).toContain('ls -la');
  expect(r.stdout).toContain('xlink');
  expect(r.stdout).toMatch(/│ ok\n.*│ overwritten/);
});

it('baton follow prints the transcript live', async () => {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, ['dist/apps/cli/src/main.js', 'follow', 't-follow', 's'], {
    cwd: ROOT,
    env: { ...process.env, ...cliEnv() },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  try {
    const key = taskKey(stack.tenant, 't-follow');
    await stack.store.tenants.add(stack.tenant, 't-follow');
    const say = (item: string, delta: string) =>
      stack.store.transcripts.append(key, [
        {
          sessionId: 's',
          executionId: 'x',
          event: { type: 'text', turn: 'p', phase: 'turn', item, role: 'agent', delta },
        },
      ]);
    // Before any session: follow names the session, so it waits rather than failing.
    await new Promise((r) => setTimeout(r, 500));
    await say('m1', 'first ');
    await say('m1', 'message');
    await say('m2', 'second');
    await waitFor(() => out.includes('first message'), 'the first message, whole', 15_000);
    await stack.store.transcripts.append(key, [
      {
        sessionId: 's',
        executionId: 'x',
        event: { type: 'turn_end', turn: 'p', phase: 'turn', stopReason: 'end_turn' },
      },
    ]);
    await waitFor(() => out.includes('turn ended (end_turn)'), 'the turn end', 15_000);
    expect(out).toContain('second');
    expect(out.match(/first message/g)).toHaveLength(1);
  } finally {
    child.kill('SIGINT');
  }
});
