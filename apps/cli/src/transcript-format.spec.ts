import fc from 'fast-check';
import type { TranscriptEvent } from '@baton/transcript';
import { Follower, formatTranscript, sanitize } from './transcript-format';

// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

const base = { turn: 'p1', phase: 'turn' } as const;

describe('sanitize', () => {
  it('leaves nothing a terminal would act on, for any string', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.string(),
            fc.constantFrom('\u001b[', '\u001b]', '\u0007', '\u009b', '\r', '\u001b\\', '\u202e'),
          ),
        ),
        (parts) => {
          expect(sanitize(parts.join(''))).not.toMatch(UNSAFE);
        },
      ),
    );
  });

  it('removes colours, titles, clipboard writes and hyperlinks; keeps what was overwritten', () => {
    expect(sanitize('a\u001b[31mred\u001b[0m b')).toBe('ared b');
    expect(sanitize('x\u001b]0;title\u0007y')).toBe('xy');
    expect(sanitize('x\u001b]52;c;aGk=\u001b\\y')).toBe('xy');
    expect(sanitize('\u001b]8;;http://evil\u0007link\u001b]8;;\u0007')).toBe('link');
    expect(sanitize('rm -rf /\rls')).toBe('rm -rf /\nls');
    expect(sanitize('line\r\nnext\tcol')).toBe('line\nnext  col');
    expect(sanitize('a\u0008b\u0000c\u202ed')).toBe('abcd');
  });
});

describe('formatTranscript', () => {
  const events: TranscriptEvent[] = [
    {
      ...base,
      type: 'prompt',
      item: 'u1',
      promptId: 'p1',
      content: [{ type: 'text', text: { text: 'Fix it' } }],
    },
    { ...base, type: 'text', item: 'th', role: 'thought', delta: 'Thinking\u001b[2J hard' },
    { ...base, type: 'text', item: 'm1', role: 'agent', delta: 'On ' },
    { ...base, type: 'text', item: 'm1', role: 'agent', delta: 'it.' },
    {
      ...base,
      type: 'tool',
      item: 't1',
      toolCallId: 'c1',
      title: 'Edit a.ts',
      kind: 'edit',
      status: 'completed',
      input: { path: 'a.ts' },
      diff: { path: 'a.ts', oldText: { text: 'a\nb' }, newText: { text: 'a\nc\nd' } },
    },
    {
      ...base,
      type: 'tool',
      item: 't2',
      toolCallId: 'c2',
      kind: 'execute',
      status: 'completed',
      input: { command: { text: 'seq 20' } },
      output: { mode: 'append', text: Array.from({ length: 20 }, (_, i) => `${i + 1}`).join('\n') },
      exit: { code: 0 },
    },
    {
      ...base,
      type: 'permission',
      item: 'pm',
      title: 'rm -rf build',
      options: [
        { optionId: 'y', name: 'Allow', kind: 'allow_once' },
        { optionId: 'n', name: 'Reject', kind: 'reject_once' },
      ],
    },
    {
      ...base,
      type: 'settled',
      item: 'pm',
      outcome: 'selected',
      optionId: 'n',
      by: 'alice',
      at: '2026-01-01T00:00:00Z',
    },
    { ...base, type: 'usage', used: 10, size: 100 },
    { ...base, type: 'usage', used: 20, size: 100, cost: { amount: 0.1 + 0.2, currency: 'USD' } },
    { ...base, type: 'turn_end', stopReason: 'end_turn', tokens: { input: 5, output: 7 } },
  ];

  it('prints each part readably, thoughts set apart, output summarized', () => {
    expect(formatTranscript(events)).toEqual([
      'prompt p1:',
      '  Fix it',
      '(thought) Thinking hard',
      'agent:',
      '  On it.',
      'tool edit Edit a.ts [completed]',
      '  path a.ts',
      '  diff a.ts: -2 +3 lines',
      '    - a',
      '    - b',
      '    + a',
      '    + c',
      '    + d',
      'tool execute [completed]',
      '  $ seq 20',
      '  output:',
      '  │ … (8 more lines)',
      ...Array.from({ length: 12 }, (_, i) => `  │ ${i + 9}`),
      '  exit 0',
      'permission rm -rf build',
      '  options: Allow (allow_once), Reject (reject_once)',
      '  answered: Reject (reject_once) by alice',
      'usage: context 20/100, cost 0.3 USD',
      '— turn ended (end_turn), tokens 5 in, 7 out',
    ]);
  });

  it('follow prints each item once, when it is whole', () => {
    const lines: string[] = [];
    const f = new Follower((l) => lines.push(l));
    f.take(events.slice(0, 3));
    // The agent's message may go on: not printed yet.
    expect(lines).toEqual(['prompt p1:', '  Fix it', '(thought) Thinking hard']);
    f.take(events.slice(3, 7));
    expect(lines.slice(3)).toContain('  On it.');
    expect(lines[lines.length - 1]).toBe('  waiting for an answer');
    f.take(events.slice(7));
    expect(lines.filter((l) => l === '  On it.')).toHaveLength(1);
    expect(lines.slice(-3)).toEqual([
      '  answered: Reject (reject_once) by alice',
      'usage: context 20/100, cost 0.3 USD',
      '— turn ended (end_turn), tokens 5 in, 7 out',
    ]);
  });
});
