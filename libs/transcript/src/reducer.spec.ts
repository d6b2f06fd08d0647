import fc from 'fast-check';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  coalesceEvents,
  DEFAULT_LIMITS,
  foldTranscript,
  initialTranscriptState,
  jsonBytes,
  reduceTranscript,
  transcriptOf,
  TranscriptEvent,
  type MessageItem,
  type PermissionItem,
  type RecordedFrame,
  type ToolItem,
  type TranscriptItem,
} from './index';

const FIXTURES = join(__dirname, '..', '..', 'acp', 'fixtures');
const load = (name: string): RecordedFrame[] =>
  readFileSync(join(FIXTURES, name), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as RecordedFrame);
const RECORDINGS = readdirSync(FIXTURES).filter((f) => f.endsWith('.jsonl'));
const frames = new Map(RECORDINGS.map((f) => [f, load(f)]));
const recording = fc.constantFrom(...RECORDINGS);

const items = (fs: readonly RecordedFrame[]) => foldTranscript(transcriptOf(fs).events);
const messages = (xs: TranscriptItem[], role = 'agent') =>
  xs.filter((i): i is MessageItem => i.type === 'message' && i.role === role);
const tool = (xs: TranscriptItem[], id: string) =>
  xs.find((i): i is ToolItem => i.type === 'tool' && i.toolCallId === id)!;
const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

type Update = { sessionUpdate?: string; content?: { type?: string; text?: string } };
const updateOf = (f: RecordedFrame): Update | undefined =>
  (f.message as { method?: string; params?: { update?: Update } }).method === 'session/update'
    ? (f.message as { params: { update: Update } }).params.update
    : undefined;

/** The frames with every text chunk split at `cuts` (fractions of its length) into more chunks. */
function splitChunks(fs: RecordedFrame[], cuts: number[][]): RecordedFrame[] {
  const out: RecordedFrame[] = [];
  let n = 0;
  for (const f of fs) {
    const u = updateOf(f);
    const text = u?.content?.type === 'text' ? u.content.text : undefined;
    if (u === undefined || text === undefined || !/_chunk$/.test(u.sessionUpdate ?? '')) {
      out.push(f);
      continue;
    }
    // Code points, not UTF-16 units: a split never lands inside a surrogate pair.
    const chars = [...text];
    const at = [
      ...new Set((cuts[n++ % cuts.length] ?? []).map((c) => Math.floor(c * chars.length))),
    ]
      .filter((i) => i > 0 && i < chars.length)
      .sort((a, b) => a - b);
    const bounds = [0, ...at, chars.length];
    for (let i = 0; i + 1 < bounds.length; i++) {
      const piece = chars.slice(bounds[i], bounds[i + 1]).join('');
      const m = structuredClone(f.message) as { params: { update: Update } };
      m.params.update.content = { ...m.params.update.content, text: piece };
      out.push({ ...f, message: m });
    }
  }
  return out;
}

describe('transcript reducer over the real recordings (properties)', () => {
  it('every event it makes is valid against the schema', () => {
    for (const fs of frames.values())
      for (const e of transcriptOf(fs).events) expect(TranscriptEvent.parse(e)).toEqual(e);
  });

  it('replaying a recording twice gives the same transcript', () => {
    fc.assert(
      fc.property(recording, (name) => {
        const fs = frames.get(name)!;
        expect(transcriptOf(fs).events).toEqual(transcriptOf(fs).events);
      }),
    );
  });

  it('text split into arbitrary chunks folds to what the whole text folds to', () => {
    fc.assert(
      fc.property(
        recording,
        fc.array(fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 }), {
          minLength: 1,
          maxLength: 8,
        }),
        (name, cuts) => {
          const fs = frames.get(name)!;
          expect(items(splitChunks(fs, cuts))).toEqual(items(fs));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('coalescing any windows of events folds to the same items', () => {
    fc.assert(
      fc.property(recording, fc.array(fc.nat(12), { minLength: 1 }), (name, sizes) => {
        const { events } = transcriptOf(frames.get(name)!);
        const windows: TranscriptEvent[] = [];
        for (let i = 0, w = 0; i < events.length; w++) {
          const size = (sizes[w % sizes.length] ?? 0) + 1;
          windows.push(...coalesceEvents(events.slice(i, i + size)));
          i += size;
        }
        expect(windows.length).toBeLessThanOrEqual(events.length);
        expect(foldTranscript(windows)).toEqual(foldTranscript(events));
      }),
      { numRuns: 200 },
    );
  });

  it('coalescing windows of tools updated side by side folds to the same items', () => {
    // Events of a few tools interleaved with messages, markers and usage, in two turns: what an
    // agent running tools at once writes, in arbitrary order.
    const turn = fc.constantFrom('p1', 'p2');
    const toolEvent = fc.record(
      {
        turn,
        phase: fc.constant('turn' as const),
        type: fc.constant('tool' as const),
        item: fc.constantFrom('t1', 't2', 't3'),
        toolCallId: fc.constantFrom('c1', 'c2'),
        status: fc.constantFrom('pending', 'in_progress', 'completed'),
        title: fc.string({ maxLength: 3 }),
        output: fc.record(
          {
            mode: fc.constantFrom('append' as const, 'replace' as const),
            text: fc.string({ maxLength: 3 }),
            more: fc.nat(5),
          },
          { requiredKeys: ['mode', 'text'] },
        ),
      },
      { requiredKeys: ['turn', 'phase', 'type', 'item', 'toolCallId'] },
    );
    const other = fc.oneof(
      fc.record({
        turn,
        phase: fc.constant('turn' as const),
        type: fc.constant('text' as const),
        item: fc.constantFrom('m1', 'm2'),
        role: fc.constant('agent' as const),
        delta: fc.string({ maxLength: 3 }),
      }),
      fc.record({
        turn,
        phase: fc.constant('turn' as const),
        type: fc.constant('truncated' as const),
        item: fc.constantFrom('m1', 't1'),
        more: fc.nat(5),
      }),
      fc.record(
        {
          turn,
          phase: fc.constant('turn' as const),
          type: fc.constant('usage' as const),
          used: fc.nat(9),
          cost: fc.record({ amount: fc.nat(9), currency: fc.constant('USD') }),
        },
        { requiredKeys: ['turn', 'phase', 'type'] },
      ),
    );
    const event = fc.oneof({ arbitrary: toolEvent, weight: 3 }, { arbitrary: other, weight: 1 });
    fc.assert(
      fc.property(
        fc.array(event, { maxLength: 40 }),
        fc.array(fc.nat(15), { minLength: 1 }),
        (events: TranscriptEvent[], sizes) => {
          const windows: TranscriptEvent[] = [];
          for (let i = 0, w = 0; i < events.length; w++) {
            const size = (sizes[w % sizes.length] ?? 0) + 1;
            windows.push(...coalesceEvents(events.slice(i, i + size)));
            i += size;
          }
          expect(foldTranscript(windows)).toEqual(foldTranscript(events));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('stores one event a window for each tool updated side by side', () => {
    const at = { turn: 'p1', phase: 'turn' } as const;
    const patch = (item: string, status: string, text: string): TranscriptEvent => ({
      ...at,
      type: 'tool',
      item,
      toolCallId: item,
      status,
      output: { mode: 'append', text },
    });
    const events: TranscriptEvent[] = [
      patch('a', 'pending', 'a1'),
      patch('b', 'pending', 'b1'),
      patch('a', 'in_progress', 'a2'),
      { ...at, type: 'text', item: 'm', role: 'agent', delta: 'hi' },
      patch('b', 'completed', 'b2'),
      patch('a', 'completed', 'a3'),
    ];
    const out = coalesceEvents(events);
    expect(out.map((e) => e.type)).toEqual(['tool', 'tool', 'text']);
    expect(out[0]).toMatchObject({ item: 'a', status: 'completed', output: { text: 'a1a2a3' } });
    expect(out[1]).toMatchObject({ item: 'b', status: 'completed', output: { text: 'b1b2' } });
    expect(foldTranscript(out)).toEqual(foldTranscript(events));
  });

  it('caps never exceed their bound and always leave a visible marker', () => {
    fc.assert(
      fc.property(
        recording,
        fc.record({
          itemBytes: fc.integer({ min: 0, max: 300 }),
          textBytes: fc.integer({ min: 0, max: 40 }),
          sessionItems: fc.integer({ min: 1, max: 40 }),
          sessionBytes: fc.integer({ min: 0, max: 8_000 }),
        }),
        (name, limits) => {
          const fs = frames.get(name)!;
          const full = transcriptOf(fs).events;
          const { events, state } = transcriptOf(fs, limits);
          expect(events.length).toBeLessThanOrEqual(limits.sessionItems);
          const size = events.reduce((n, e) => n + bytes(JSON.stringify(e)), 0);
          expect(size).toBeLessThanOrEqual(limits.sessionBytes);
          expect(state.bytes).toBe(size);
          // Fewer events than uncapped: the last one says the session was capped (when it fit).
          if (events.length < full.length && events.length > 0)
            expect(events[events.length - 1]!.type).toBe('capped');
          if (state.capped)
            expect(events.filter((e) => e.type === 'capped').length).toBeLessThan(2);
          // A message cut at its cap says how much is missing, exactly.
          if (!state.capped) {
            const whole = messages(foldTranscript(full));
            const cut = messages(foldTranscript(events));
            expect(cut.length).toBe(whole.length);
            cut.forEach((m, i) => {
              const w = whole[i]!.text;
              expect(bytes(m.text)).toBeLessThanOrEqual(limits.textBytes);
              expect(w.startsWith(m.text)).toBe(true);
              expect(bytes(m.text) + (m.more ?? 0)).toBe(bytes(w));
            });
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('events are in order with turns that never go back', () => {
    fc.assert(
      fc.property(recording, (name) => {
        const { events } = transcriptOf(frames.get(name)!);
        const seen: (string | null)[] = [];
        for (const e of events) {
          if (seen[seen.length - 1] !== e.turn) {
            expect(seen).not.toContain(e.turn);
            seen.push(e.turn);
          }
        }
        // Item numbers grow in the order items appear.
        const nums = foldTranscript(events)
          .map((i) => ('item' in i ? /^[a-z](\d+)$/.exec(i.item)?.[1] : undefined))
          .filter((n): n is string => n !== undefined)
          .map(Number);
        expect(nums).toEqual([...nums].sort((a, b) => a - b));
      }),
    );
  });
});

describe('transcript of a real Claude recording', () => {
  const xs = items(frames.get('claude-real-terminal-shell.jsonl')!);

  it('holds the prompt, the answer text and the background run after the turn', () => {
    expect(xs.find((i) => i.type === 'prompt')).toMatchObject({
      promptId: 'p-RUN-SHELL',
      turn: 'p-RUN-SHELL',
      content: [{ type: 'text', text: { text: 'prompt RUN-SHELL' } }],
    });
    expect(messages(xs).map((m) => [m.phase, m.text])).toEqual([
      ['turn', 'Starting it.'],
      ['turn', 'It runs in the background.'],
      ['background', 'Noted.'],
    ]);
  });

  it('holds the tool call: its command, its status and its terminal output', () => {
    const t = tool(xs, 'toolu_shell');
    const command = 'until [ -f release-shell ]; do sleep 0.1; done; echo done';
    expect(t).toMatchObject({ title: command, kind: 'execute', status: 'completed' });
    expect(t.input?.command).toEqual({ text: command });
    expect(t.output?.text).toMatch(/^Command running in background with ID: bgyp2uzhc\./);
    expect(t.exit).toEqual({ code: null, signal: null });
  });

  it('holds the usage: context used/size, cost, origin, and the turn’s tokens', () => {
    const usage = xs.filter((i) => i.type === 'usage' && i.cost !== undefined);
    expect(usage).toMatchObject([
      { used: 110, size: 1_000_000, cost: { amount: 0.0018000000000000002 }, origin: 'human' },
      { used: 110, cost: { amount: 0.003 }, origin: 'task-notification', phase: 'background' },
    ]);
    expect(xs.find((i) => i.type === 'turn_end')).toMatchObject({
      stopReason: 'end_turn',
      tokens: { input: 200, output: 20, total: 220 },
    });
  });

  it('holds a permission request, its options and how it was settled', () => {
    const ys = items(frames.get('claude-shell-background-plain.jsonl')!);
    const p = ys.find((i): i is PermissionItem => i.type === 'permission')!;
    expect(p).toMatchObject({
      toolCallId: 'toolu_B',
      title: 'sleep 100',
      options: [
        { optionId: 'allow', kind: 'allow_once' },
        { optionId: 'reject', kind: 'reject_once' },
      ],
      settled: { outcome: 'selected', optionId: 'allow', optionKind: 'allow_once', by: 'client' },
    });
    expect(tool(ys, 'toolu_B').result?.text).toMatch(/^Command running in background with ID/);
  });

  it('keeps a subagent’s own session apart: its state, its tool, its result', () => {
    const ys = items(frames.get('claude-real-subagents-subagent.jsonl')!);
    expect(ys.find((i) => i.type === 'subagent')).toMatchObject({
      sessionId: 'a23dcad944960015f',
      title: 'Background check',
      state: 'idle',
      stopReason: 'end_turn',
    });
    expect(messages(ys).map((m) => [m.subagent, m.text])).toEqual([
      [undefined, 'Launched.'],
      ['a23dcad944960015f', 'Child work done.'],
      [undefined, 'Noted.'],
      [undefined, 'Second answer.'],
    ]);
    expect(tool(ys, 'toolu_child')).toMatchObject({
      subagent: 'a23dcad944960015f',
      parentToolCallId: 'toolu_agent',
      status: 'completed',
      result: { text: 'child' },
    });
  });

  it('keeps a session/load replay as history, not as a turn', () => {
    const ys = items(frames.get('claude-session-load-history.jsonl')!);
    expect(messages(ys, 'user')).toMatchObject([{ text: 'old prompt', phase: 'history' }]);
    expect(messages(ys).map((m) => [m.phase, m.turn, m.text])).toEqual([
      ['history', null, 'old answer'],
      ['turn', 'p1', 'Continuing.'],
    ]);
  });

  it('reads draft v2: the turn ends at idle, terminal output is a base64 snapshot', () => {
    const ys = items(frames.get('claude-v2-shell.jsonl')!);
    expect(ys.filter((i) => i.type === 'turn_end')).toHaveLength(1);
    expect(ys.filter((i) => i.type === 'prompt')).toHaveLength(1);
    expect(tool(ys, 'toolu_shell').output?.text).toBe('done\n\n[exited with code 0]\n');
  });
});

describe('transcript of a real Claude recording with file changes', () => {
  const xs = items(frames.get('claude-real-edit.jsonl')!);
  const notes = '/tmp/baton-claude/work/notes.txt';
  const fresh = '/tmp/baton-claude/work/fresh.txt';
  const options = [
    { optionId: 'allow-once', name: 'Yes', kind: 'allow_once' },
    {
      optionId: 'allow-with-updates',
      name: 'Yes, allow all edits during this session',
      kind: 'allow_always',
    },
    { optionId: 'reject', name: 'No', kind: 'reject_once' },
  ];

  it('holds the Edit’s permission: its diff, its options, allowed once by the client', () => {
    const ps = xs.filter((i): i is PermissionItem => i.type === 'permission');
    expect(ps.map((p) => p.toolCallId)).toEqual(['toolu_edit', 'toolu_write']);
    expect(ps[0]).toMatchObject({
      turn: 'p-RUN-EDIT',
      title: 'Edit notes.txt',
      kind: 'edit',
      locations: [{ path: notes }],
      input: { path: notes },
      diff: { path: notes, oldText: { text: 'hello world' }, newText: { text: 'hello baton' } },
      content: [
        {
          type: 'diff',
          diff: { path: notes, oldText: { text: 'hello world' }, newText: { text: 'hello baton' } },
        },
      ],
      options,
      settled: {
        outcome: 'selected',
        optionId: 'allow-once',
        optionKind: 'allow_once',
        by: 'client',
      },
    });
  });

  it('holds the Write’s permission: a diff from nothing to the new file', () => {
    const p = xs.find(
      (i): i is PermissionItem => i.type === 'permission' && i.toolCallId === 'toolu_write',
    );
    expect(p).toMatchObject({
      title: 'Write fresh.txt',
      diff: { path: fresh, oldText: null, newText: { text: 'a new file\nwritten by the model\n' } },
      options,
      settled: { outcome: 'selected', optionId: 'allow-once', by: 'client' },
    });
  });

  it('holds each tool’s diff: the Edit shown in its file’s context, the Write as the whole file', () => {
    expect(tool(xs, 'toolu_read')).toMatchObject({ kind: 'read', status: 'completed' });
    expect(tool(xs, 'toolu_edit')).toMatchObject({
      title: 'Edit notes.txt',
      kind: 'edit',
      status: 'completed',
      input: {
        path: notes,
        diff: { path: notes, oldText: { text: 'hello world' }, newText: { text: 'hello baton' } },
      },
      diff: {
        path: notes,
        oldText: { text: 'first line\nhello world\nlast line' },
        newText: { text: 'first line\nhello baton\nlast line' },
      },
    });
    expect(tool(xs, 'toolu_edit').result?.text).toMatch(/^The file .*notes\.txt has been updated/);
    expect(tool(xs, 'toolu_write')).toMatchObject({
      title: 'Write fresh.txt',
      status: 'completed',
      diff: { path: fresh, oldText: null, newText: { text: 'a new file\nwritten by the model\n' } },
    });
    expect(messages(xs).map((m) => m.text)).toEqual(['Reading it first.', 'Edited and written.']);
  });
});

describe('transcript of a real Codex recording', () => {
  const xs = items(frames.get('codex-real-terminal-exec.jsonl')!);

  it('holds the answer, the command, its output and the usage', () => {
    expect(messages(xs).map((m) => m.text)).toEqual(['It printed hello.']);
    const t = tool(xs, 'call_scripted1');
    expect(t.input?.command?.text).toBe(
      'until [ -f release-exec ]; do sleep 0.1; done; echo hello',
    );
    expect(t).toMatchObject({
      status: 'completed',
      output: { text: 'hello\n' },
      result: { text: 'hello\n' },
      exit: { code: 0, signal: null },
    });
    const usage = xs.filter((i) => i.type === 'usage');
    expect(usage.length).toBeGreaterThan(0);
    for (const u of usage) expect(u).toMatchObject({ used: 110, size: 258_400 });
    expect(xs.find((i) => i.type === 'turn_end')).toMatchObject({ stopReason: 'end_turn' });
  });
});

describe('jsonBytes', () => {
  it('counts the UTF-8 bytes of JSON.stringify exactly, escapes and surrogates included', () => {
    const anyText = fc.string({ unit: 'binary' });
    // Long strings take the regex scan, short ones the loop: both are counted.
    const longText = fc.string({ unit: 'binary', minLength: 60, maxLength: 300 });
    const value = fc.oneof(
      anyText,
      longText,
      fc.jsonValue(),
      fc.dictionary(anyText, fc.oneof(anyText, fc.double(), fc.constant(undefined))),
    );
    fc.assert(
      fc.property(value, (v) => {
        expect(jsonBytes(v)).toBe(bytes(JSON.stringify(v)));
      }),
      { numRuns: 1_000 },
    );
  });
});

describe('session byte count', () => {
  // Text and tool events are counted from the values they are built of: any field, any string.
  const text = fc.string({ unit: 'binary', maxLength: 40 });
  const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
  const capped = fc.oneof(text, fc.string({ unit: 'binary', minLength: 20, maxLength: 80 }));
  const rawInput = fc.oneof(
    fc.constant({}),
    fc.record({ file_path: text, old_string: capped, new_string: capped }),
    fc.record({ path: text, content: capped }),
    fc.record({ command: fc.oneof(capped, fc.array(text, { maxLength: 3 })) }),
    fc.jsonValue({ maxDepth: 2 }),
  );
  const content = fc.array(
    fc.oneof(
      fc.record({ type: fc.constant('diff'), path: text, oldText: opt(capped), newText: capped }),
      fc.record({ type: fc.constant('terminal'), terminalId: text }),
      fc.record({ type: fc.constant('content'), content: fc.record({ text: capped }) }),
      fc.record({ type: text }),
    ),
    { maxLength: 3 },
  );
  const tool = fc.record(
    {
      sessionUpdate: fc.constantFrom('tool_call', 'tool_call_update'),
      toolCallId: fc.constantFrom('a', 't\u00e9', '"q"'),
      title: text,
      kind: text,
      status: text,
      locations: fc.array(fc.record({ path: text, line: opt(fc.integer()) }), { maxLength: 2 }),
      rawInput,
      rawOutput: fc.oneof(capped, fc.record({ stdout: capped, stderr: text }), fc.jsonValue()),
      content,
      _meta: fc.record(
        {
          claudeCode: fc.record(
            { toolResponse: fc.oneof(capped, fc.jsonValue()), parentToolUseId: text },
            { requiredKeys: [] },
          ),
          terminal_output: fc.record({ data: capped }),
          terminal_exit: fc.record({ exit_code: opt(fc.integer()), signal: opt(text) }),
        },
        { requiredKeys: [] },
      ),
    },
    { requiredKeys: ['sessionUpdate', 'toolCallId'] },
  );
  const chunk = fc.record(
    {
      sessionUpdate: fc.constantFrom('agent_message_chunk', 'agent_thought_chunk'),
      messageId: fc.constantFrom('m1', 'm\n2'),
      content: fc.record({ type: fc.constant('text'), text: capped }),
    },
    { requiredKeys: ['sessionUpdate', 'content'] },
  );
  const frame = (sessionId: string, update: unknown): RecordedFrame => ({
    direction: 'agent->client',
    at: '2026-01-01T00:00:00Z',
    message: { jsonrpc: '2.0', method: 'session/update', params: { sessionId, update } },
  });

  it('is the UTF-8 bytes of every event as JSON.stringify writes it', () => {
    fc.assert(
      fc.property(
        opt(text),
        fc.array(fc.tuple(fc.boolean(), fc.oneof(tool, chunk)), { maxLength: 12 }),
        fc.integer({ min: 0, max: 60 }),
        (promptId, updates, cap) => {
          const prompt: RecordedFrame = {
            direction: 'client->agent',
            at: '2026-01-01T00:00:00Z',
            message: {
              jsonrpc: '2.0',
              id: 1,
              method: 'session/prompt',
              params: {
                sessionId: 's',
                prompt: [],
                ...(promptId !== undefined ? { _meta: { baton: { promptId } } } : {}),
              },
            },
          };
          // Some updates from a subagent's session; small item and text caps cut some values.
          const fs = [prompt, ...updates.map(([child, u]) => frame(child ? 'c\u00e9' : 's', u))];
          const limits = { ...DEFAULT_LIMITS, itemBytes: cap, textBytes: cap };
          const { events, state } = transcriptOf(fs, limits, 'g1.\u00e9');
          expect(events.length).toBeGreaterThan(0);
          expect(state.bytes).toBe(events.reduce((n, e) => n + bytes(JSON.stringify(e)), 0));
        },
      ),
      { numRuns: 1_000 },
    );
  });
});

describe('transcript details', () => {
  const run = (msgs: [RecordedFrame['direction'], unknown][], limits = DEFAULT_LIMITS) =>
    foldTranscript(
      transcriptOf(
        msgs.map(([direction, message]) => ({ direction, at: '2026-01-01T00:00:00Z', message })),
        limits,
      ).events,
    );
  const update = (update: unknown): [RecordedFrame['direction'], unknown] => [
    'agent->client',
    { jsonrpc: '2.0', method: 'session/update', params: { sessionId: 's', update } },
  ];
  const prompt = (prompt: unknown[]): [RecordedFrame['direction'], unknown] => [
    'client->agent',
    { jsonrpc: '2.0', id: 3, method: 'session/prompt', params: { sessionId: 's', prompt } },
  ];

  it('keeps the diff a person was shown when a denied Write ends with refusal text', () => {
    const xs = run([
      prompt([{ type: 'text', text: 'write it' }]),
      update({
        sessionUpdate: 'tool_call',
        toolCallId: 'w',
        title: 'Write a.txt',
        kind: 'edit',
        rawInput: { file_path: '/r/a.txt', content: 'new\n' },
        content: [{ type: 'diff', path: '/r/a.txt', oldText: 'old\n', newText: 'new\n' }],
        locations: [{ path: '/r/a.txt' }],
      }),
      update({
        sessionUpdate: 'tool_call_update',
        toolCallId: 'w',
        status: 'failed',
        content: [{ type: 'content', content: { type: 'text', text: 'The user refused.' } }],
      }),
    ]);
    const t = tool(xs, 'w');
    expect(t.diff).toEqual({
      path: '/r/a.txt',
      oldText: { text: 'old\n' },
      newText: { text: 'new\n' },
    });
    expect(t.content).toEqual([{ type: 'text', text: { text: 'The user refused.' } }]);
    expect(t.input).toMatchObject({ path: '/r/a.txt' });
    expect(t.locations).toEqual([{ path: '/r/a.txt' }]);
  });

  it('records an Edit’s input as a diff, and a permission’s diff and who settled it', () => {
    const s0 = initialTranscriptState('claude');
    const at = '2026-01-01T00:00:00Z';
    const steps = [
      { kind: 'prompt' as const, promptId: 'p9' },
      { kind: 'frame' as const, direction: 'client->agent' as const, at, message: prompt([])[1] },
      {
        kind: 'frame' as const,
        direction: 'agent->client' as const,
        at,
        message: {
          jsonrpc: '2.0',
          id: 7,
          method: 'session/request_permission',
          params: {
            sessionId: 's',
            toolCall: {
              toolCallId: 'e',
              title: 'Edit b.ts',
              kind: 'edit',
              rawInput: { file_path: '/r/b.ts', old_string: 'x', new_string: 'y' },
            },
            options: [{ optionId: 'no', name: 'Reject', kind: 'reject_once' }],
          },
        },
      },
      { kind: 'answer' as const, toolCallId: 'e', by: 'user:ann' },
      {
        kind: 'frame' as const,
        direction: 'client->agent' as const,
        at: '2026-01-01T00:00:09Z',
        message: {
          jsonrpc: '2.0',
          id: 7,
          result: { outcome: { outcome: 'selected', optionId: 'no' } },
        },
      },
    ];
    let state = s0;
    const events: TranscriptEvent[] = [];
    for (const i of steps) {
      const r = reduceTranscript(state, i);
      state = r.state;
      events.push(...r.out);
    }
    // Events are stored as their JSON: the fields in the order they are read, the diff after
    // the input it came from.
    expect(Object.keys(events.find((e) => e.type === 'permission')!)).toEqual([
      'turn',
      'phase',
      'type',
      'item',
      'toolCallId',
      'title',
      'kind',
      'input',
      'diff',
      'options',
    ]);
    const xs = foldTranscript(events);
    // The prompt id told before the frame names the turn when the frame carries none.
    expect(xs[0]).toMatchObject({ type: 'prompt', promptId: 'p9', turn: 'p9' });
    expect(xs.find((i) => i.type === 'permission')).toMatchObject({
      turn: 'p9',
      diff: { path: '/r/b.ts', oldText: { text: 'x' }, newText: { text: 'y' } },
      input: { path: '/r/b.ts' },
      settled: {
        outcome: 'selected',
        optionId: 'no',
        optionKind: 'reject_once',
        by: 'user:ann',
        at: '2026-01-01T00:00:09Z',
      },
    });
  });

  it('takes attachments by reference and caps a tool’s output with a count of what is left out', () => {
    const xs = run(
      [
        prompt([
          { type: 'text', text: 'look' },
          { type: 'resource_link', uri: 'file:///r/x.md', name: 'x.md' },
          { type: 'image', mimeType: 'image/png', data: 'AAAA' },
        ]),
        update({ sessionUpdate: 'tool_call', toolCallId: 't', title: 'sh', kind: 'execute' }),
        update({
          sessionUpdate: 'tool_call_update',
          toolCallId: 't',
          _meta: { terminal_output: { data: '0123456789' } },
        }),
        update({
          sessionUpdate: 'tool_call_update',
          toolCallId: 't',
          _meta: { terminal_output: { data: 'abcdef' } },
        }),
      ],
      { ...DEFAULT_LIMITS, itemBytes: 12 },
    );
    expect(xs[0]).toMatchObject({
      content: [
        { type: 'text', text: { text: 'look' } },
        { type: 'resource_link', uri: 'file:///r/x.md', name: 'x.md' },
        { type: 'attachment', kind: 'image', mimeType: 'image/png', bytes: 4 },
      ],
    });
    expect(JSON.stringify(xs)).not.toContain('AAAA');
    expect(tool(xs, 't').output).toEqual({ text: '0123456789ab', more: 4 });
  });

  it('records plans, thoughts and mode changes, and keeps a child session out of the text', () => {
    const xs = run([
      [
        'client->agent',
        { jsonrpc: '2.0', id: 1, method: 'session/new', params: { cwd: '/r', mcpServers: [] } },
      ],
      ['agent->client', { jsonrpc: '2.0', id: 1, result: { sessionId: 's' } }],
      prompt([{ type: 'text', text: 'plan it' }]),
      update({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'Hmm, ' } }),
      update({
        sessionUpdate: 'agent_thought_chunk',
        content: { type: 'text', text: 'two steps.' },
      }),
      update({
        sessionUpdate: 'plan',
        entries: [
          { content: 'read', priority: 'high', status: 'completed' },
          { content: 'write', priority: 'low', status: 'in_progress' },
        ],
      }),
      update({ sessionUpdate: 'current_mode_update', currentModeId: 'plan' }),
      [
        'agent->client',
        {
          jsonrpc: '2.0',
          method: 'session/update',
          params: {
            sessionId: 'child',
            update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'x' } },
          },
        },
      ],
      update({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Done.' } }),
    ]);
    expect(messages(xs, 'thought').map((m) => m.text)).toEqual(['Hmm, two steps.']);
    expect(messages(xs).map((m) => [m.subagent, m.text])).toEqual([
      ['child', 'x'],
      [undefined, 'Done.'],
    ]);
    expect(xs.find((i) => i.type === 'plan')).toMatchObject({
      entries: [
        { content: 'read', status: 'completed', priority: 'high' },
        { content: 'write', status: 'in_progress', priority: 'low' },
      ],
    });
    expect(xs.find((i) => i.type === 'mode')).toMatchObject({ modeId: 'plan', turn: null });
  });

  it('never records session/new or initialize params (env, settings)', () => {
    const xs = run([
      [
        'client->agent',
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'session/new',
          params: {
            cwd: '/r',
            mcpServers: [{ name: 'm', command: 'x', env: [{ name: 'K', value: 'SECRET-1' }] }],
          },
        },
      ],
      prompt([{ type: 'text', text: 'hi' }]),
    ]);
    expect(JSON.stringify(xs)).not.toContain('SECRET-1');
  });
});
