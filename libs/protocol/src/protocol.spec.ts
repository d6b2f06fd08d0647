import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import {
  BackgroundWork,
  ClientMessage,
  InboxMessage,
  StreamEntry,
  Update,
  endsGroup,
  groupOf,
  FACT_TYPES,
  COMMAND_TYPES,
  DECISION_TYPES,
} from './index';

const writer = { role: 'worker', instance: 'w1', seq: 1 } as const;

describe('protocol', () => {
  it.each([
    [
      'every field of background work of an unknown kind',
      {
        kind: 'futureKind',
        id: 'future-1',
        label: 'Start review',
        startedAt: '2026-09-25T00:01:00.000Z',
        target: 'reviewer',
        nested: { a: [1, 2] },
      },
    ],
    [
      'unmodelled fields of known kinds too',
      {
        kind: 'shell',
        id: 'shell-1',
        label: 'Run tests',
        command: 'npm test',
        startedAt: '2026-09-25T00:00:00.000Z',
        _meta: { 'vscode.copilot.shellAttachment': 'detached' },
        extra: true,
      },
    ],
  ])('keeps %s', (_what, work) => {
    expect(BackgroundWork.parse(work)).toEqual(work);
  });

  it('does not let a malformed known kind pass as an unknown one', () => {
    const r = BackgroundWork.safeParse({
      kind: 'shell',
      id: 's',
      label: 'x',
      startedAt: '2026-09-25T00:00:00.000Z',
    });
    expect(r.success).toBe(false);
  });

  it('validates a fact under the versioned envelope', () => {
    const entry = {
      v: 1,
      type: 'background.started',
      taskId: 't1',
      sessionId: 's1',
      executionId: 'e1',
      generation: 1,
      writer,
      data: {
        attested: true,
        toolCallId: 'toolu_1',
        work: {
          kind: 'subagent',
          id: 'subagent:a1',
          label: 'Review',
          chat: 'ahp-chat:/x',
          startedAt: '2026-09-25T00:00:00Z',
        },
      },
    };
    expect(StreamEntry.parse(entry)).toEqual(entry);
  });

  it('rejects a fact without its execution, an unknown type and a wrong version', () => {
    const base = { v: 1, taskId: 't', sessionId: 's', writer, data: { channel: 'message' } };
    expect(StreamEntry.safeParse({ ...base, type: 'foreground.output' }).success).toBe(false);
    expect(
      StreamEntry.safeParse({ ...base, type: 'foreground.output', executionId: 'e', generation: 1 })
        .success,
    ).toBe(true);
    expect(
      StreamEntry.safeParse({ ...base, type: 'nope', executionId: 'e', generation: 1 }).success,
    ).toBe(false);
    expect(
      StreamEntry.safeParse({
        ...base,
        v: 2,
        type: 'foreground.output',
        executionId: 'e',
        generation: 1,
      }).success,
    ).toBe(false);
  });

  it('refuses a writer instance with control characters', () => {
    const base = {
      v: 1,
      taskId: 't',
      sessionId: 's',
      type: 'foreground.output',
      executionId: 'e',
      generation: 1,
      data: { channel: 'message' },
    };
    expect(StreamEntry.safeParse({ ...base, writer }).success).toBe(true);
    const r = StreamEntry.safeParse({ ...base, writer: { ...writer, instance: '\u0000renewed' } });
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error?.issues)).toMatch(/no control characters/);
  });

  it('names the field and the rule of an invalid client message', () => {
    const r = ClientMessage.safeParse({
      v: 1,
      id: 'r1',
      op: 'prompt',
      taskId: 't',
      sessionId: 's',
      text: '',
    });
    expect(r.success).toBe(false);
    const paths = r.error!.issues.map((i) => i.path.join('.'));
    expect(paths).toEqual(expect.arrayContaining(['text', 'idempotencyKey']));
  });

  it('defaults a prompt origin to human', () => {
    const m = ClientMessage.parse({
      v: 1,
      id: 'r',
      op: 'prompt',
      taskId: 't',
      sessionId: 's',
      text: 'hi',
      idempotencyKey: 'k',
    });
    expect(m.op === 'prompt' && m.origin).toBe('human');
  });

  it('classifies every entry type exactly once', () => {
    const all = [...FACT_TYPES, ...COMMAND_TYPES, ...DECISION_TYPES];
    expect(new Set(all).size).toBe(all.length);
  });

  it('stamps the updates of one entry as its group, and reads updates published before groups', () => {
    const u = (seq: number) =>
      ({
        v: 1,
        taskId: 't',
        seq,
        type: 'session.deleted',
        data: { sessionId: 's' },
      }) as const;
    const group = groupOf('1733-0', [u(4), u(5), u(6)]);
    expect(group.map((g) => [g.seq, g.entry, g.last])).toEqual([
      [4, '1733-0', false],
      [5, '1733-0', false],
      [6, '1733-0', true],
    ]);
    for (const g of group) expect(Update.parse(g)).toEqual(g);
    expect(group.map(endsGroup)).toEqual([false, false, true]);
    // Published before groups existed: no entry, no marker, a group of its own.
    expect(Update.parse(u(1))).toEqual(u(1));
    expect(endsGroup(u(1))).toBe(true);
    expect(Update.safeParse({ ...u(1), entry: 'x', last: true }).success).toBe(false);
    expect(Update.safeParse({ ...u(1), entry: '1-0', last: 'yes' }).success).toBe(false);
  });

  it('validates AHP background work updates', () => {
    const u = {
      v: 1,
      taskId: 't',
      seq: 3,
      type: 'chat/backgroundWorkRemoved',
      data: { sessionId: 's', id: 'shell-1' },
    };
    expect(Update.parse(u)).toEqual(u);
  });

  it('validates an execution stop in the inbox, with a known reason only', () => {
    const stop = {
      v: 1,
      taskId: 't1',
      sessionId: 's1',
      executionId: 'e1',
      type: 'execution.stop',
      data: { reason: 'session_deleted' },
    };
    expect(InboxMessage.parse(stop)).toEqual(stop);
    expect(InboxMessage.safeParse({ ...stop, data: { reason: 'because' } }).success).toBe(false);
  });

  it('has committed JSON Schema that matches the zod schemas', () => {
    // Fails when a schema changed without `npm run schema`.
    expect(() =>
      execFileSync(
        process.execPath,
        [
          require.resolve('tsx/cli'),
          join(__dirname, '../scripts/export-json-schema.ts'),
          '--check',
        ],
        {
          stdio: 'pipe',
        },
      ),
    ).not.toThrow();
  });
});
