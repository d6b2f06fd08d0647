import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { transcriptOf, type RecordedFrame, type TranscriptEvent } from '@baton/transcript';
import { chatReducer, type ChatState } from './reducer';
import { contentActions, TranscriptTurns, turnContent } from './turn-content';

/** A recording's transcript as the worker writes it: each prompt's events under its prompt id. */
function recorded(name: string): {
  frames: RecordedFrame[];
  events: TranscriptEvent[];
  turn: string;
} {
  const frames = readFileSync(join(__dirname, '../../acp/fixtures', name), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as RecordedFrame);
  const { events } = transcriptOf(frames);
  const prompt = events.find((e) => e.type === 'prompt');
  return { frames, events, turn: prompt?.turn ?? '' };
}

/** A client's chat with turn `id` running: it folds what the host sends, nothing else. */
const running = (id: string): ChatState =>
  chatReducer(
    { resource: 'c', title: 's', status: 1, modifiedAt: '2026-12-01T00:00:00.000Z', turns: [] },
    {
      type: 'chat/turnStarted',
      turnId: id,
      startedAt: '2026-12-01T00:00:00.000Z',
      message: { text: '', origin: { kind: 'user' } },
    },
  );

/** Folds the content actions for `events` into the client's chat. */
function follow(chat: ChatState, events: readonly TranscriptEvent[]): ChatState {
  const t = chat.activeTurn!;
  let c = chat;
  for (const a of contentActions(t.id, t.responseParts, t.usage, turnContent(events))) {
    c = chatReducer(c, a);
  }
  return c;
}

/** The agent's text inside the turn (before the prompt's result), read off the ACP wire. */
function wireText(frames: RecordedFrame[], kind: string): string {
  const msgs = frames.map((f) => f.message as Record<string, unknown>);
  const end = msgs.findIndex((m) => (m.result as { stopReason?: string } | undefined)?.stopReason);
  return msgs
    .slice(0, end)
    .map(
      (m) =>
        (m.params as { update?: { sessionUpdate?: string; content?: { text?: string } } })?.update,
    )
    .filter((u) => u?.sessionUpdate === kind)
    .map((u) => u!.content!.text ?? '')
    .join('');
}

type Part = { kind: string; id?: string; content?: string; toolCall?: Record<string, unknown> };
/** The answer's text: the turn's markdown parts, joined. */
const markdown = (parts: Part[]) =>
  parts
    .filter((p) => p.kind === 'markdown')
    .map((p) => p.content)
    .join('');

describe('a Baton turn as AHP turn content (from the transcript)', () => {
  it('a real Claude turn: the prompt, the answer as markdown, the shell call with its command, permission and output, the usage', () => {
    const { frames, events } = recorded('claude-shell-background-plain.jsonl');
    const turn = events.filter((e) => e.turn === 'p1');
    const content = turnContent(turn);
    expect(content.prompt).toBe('Wait in the background');
    const chat = follow(running('p1'), turn);
    const parts = chat.activeTurn!.responseParts as Part[];
    expect(markdown(parts)).toBe(wireText(frames, 'agent_message_chunk'));
    const tool = parts.find((p) => p.kind === 'toolCall')!.toolCall!;
    expect(tool).toMatchObject({
      toolCallId: 'toolu_B',
      toolName: 'execute',
      toolInput: 'sleep 100',
      status: 'completed',
      success: true,
    });
    expect(JSON.stringify(tool.content)).toContain('Command running in background with ID: bash_1');
    expect(chat.activeTurn!.usage).toMatchObject({
      _meta: { 'x-baton': { used: 52632, size: 200000, cost: { amount: 3.17, currency: 'USD' } } },
    });
  });

  it('a permission the agent asks for is the tool call awaiting confirmation, then confirmed as answered', () => {
    const { events } = recorded('claude-shell-background-plain.jsonl');
    const turn = events.filter((e) => e.turn === 'p1');
    const asked = turn.findIndex((e) => e.type === 'permission');
    const settled = turn.findIndex((e) => e.type === 'settled');
    expect(asked).toBeGreaterThan(-1);
    let chat = follow(running('p1'), turn.slice(0, asked + 1));
    let tool = (chat.activeTurn!.responseParts as Part[]).find(
      (p) => p.kind === 'toolCall',
    )!.toolCall!;
    expect(tool).toMatchObject({
      status: 'pending-confirmation',
      toolInput: 'sleep 100',
      confirmationTitle: 'sleep 100',
      options: [
        { id: 'allow', label: 'Allow', kind: 'approve', group: 0 },
        { id: 'reject', label: 'Reject', kind: 'deny', group: 1 },
      ],
    });
    expect(chat.status).toBe(24); // InputNeeded, as the spec derives it
    chat = follow(chat, turn.slice(0, settled + 1));
    tool = (chat.activeTurn!.responseParts as Part[]).find((p) => p.kind === 'toolCall')!.toolCall!;
    expect(tool).toMatchObject({ status: 'running', confirmed: 'user-action' });
  });

  it('a real Codex turn: its command and output', () => {
    const { frames, events, turn: id } = recorded('codex-real-exec.jsonl');
    const turn = events.filter((e) => e.turn === id);
    const chat = follow(running(id), turn);
    const parts = chat.activeTurn!.responseParts as Part[];
    expect(markdown(parts)).toBe(wireText(frames, 'agent_message_chunk'));
    const tools = parts.filter((p) => p.kind === 'toolCall').map((p) => p.toolCall!);
    expect(tools.length).toBeGreaterThan(0);
    expect(tools.every((t) => typeof t.toolInput === 'string' || t.toolInput === undefined)).toBe(
      true,
    );
  });

  it('streaming: following every prefix of the events gives the chat one look at all of them gives (every real recording, every turn)', () => {
    const names = readdirSync(join(__dirname, '../../acp/fixtures')).filter((n) =>
      /^(claude|codex)-.*\.jsonl$/.test(n),
    );
    expect(names.length).toBeGreaterThan(10);
    for (const name of names) {
      const r = recorded(name);
      const ids = [...new Set(r.events.flatMap((e) => (e.turn ? [e.turn] : [])))];
      for (const id of ids) {
        const turn = r.events.filter((e) => e.turn === id);
        let streamed = running(id);
        for (let i = 1; i <= turn.length; i++) streamed = follow(streamed, turn.slice(0, i));
        expect([name, id, streamed]).toEqual([name, id, follow(running(id), turn)]);
      }
    }
  });

  it('property: chunked and whole text give the same chat; the same events twice give the same chat', () => {
    const textEvent = fc.record({
      role: fc.constantFrom('agent' as const, 'thought' as const),
      item: fc.constantFrom('m1', 'm2', 'm3'),
      text: fc.string({ minLength: 1, maxLength: 12 }),
    });
    fc.assert(
      fc.property(
        fc.array(textEvent, { minLength: 1, maxLength: 12 }),
        fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 40 }),
        (texts, cuts) => {
          // An item keeps its role (the transcript writes one role per item).
          const role = new Map<string, 'agent' | 'thought'>();
          const whole: TranscriptEvent[] = texts.map((t) => {
            if (!role.has(t.item)) role.set(t.item, t.role);
            return {
              type: 'text',
              turn: 't',
              phase: 'turn',
              item: t.item,
              role: role.get(t.item)!,
              delta: t.text,
            };
          });
          // The same text cut into more deltas.
          const chunked: TranscriptEvent[] = [];
          let k = 0;
          for (const e of whole) {
            if (e.type !== 'text') continue;
            let rest = e.delta;
            while (rest.length > 0) {
              const n = cuts[k++ % cuts.length]!;
              chunked.push({ ...e, delta: rest.slice(0, n) });
              rest = rest.slice(n);
            }
          }
          const stream = (events: TranscriptEvent[], twice: boolean) => {
            const log = new TranscriptTurns();
            let chat = running('t');
            const stored = events.map((event, i) => ({ id: `1-${i + 1}`, event }));
            for (let i = 0; i < stored.length; i += 3) {
              const page = stored.slice(i, i + 3);
              log.add(page);
              if (twice) log.add(stored.slice(0, i + 3)); // a catch-up read overlapping the tail
              chat = follow(chat, log.events('t'));
            }
            return chat;
          };
          const once = stream(whole, false);
          expect(stream(chunked, false)).toEqual(once);
          expect(stream(whole, true)).toEqual(once);
          expect(stream(chunked, true)).toEqual(once);
        },
      ),
    );
  });
});
