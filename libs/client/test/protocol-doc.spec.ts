import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ClientMessage,
  CommandResult,
  ExecutionStartResult,
  ExecutionStatusResult,
  TranscriptSubscribeResult,
  PongResult,
  PromptResult,
  QueueListResult,
  ServerMessage,
  SubscribeResult,
  UnsubscribeResult,
  Update,
} from '@baton/protocol';
import type { z } from 'zod';

const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'protocol.md'), 'utf8');

/** Every top-level JSON object of every ```json block of docs/protocol.md. */
function examples(): unknown[] {
  const out: unknown[] = [];
  for (const [, block] of doc.matchAll(/```json\n([\s\S]*?)```/g)) {
    let depth = 0;
    let start = -1;
    let inString = false;
    for (let i = 0; i < block!.length; i++) {
      const ch = block![i];
      if (inString) {
        if (ch === '\\') i++;
        else if (ch === '"') inString = false;
        continue;
      }
      if (ch === '"') inString = true;
      else if (ch === '{' && depth++ === 0) start = i;
      else if (ch === '}' && --depth === 0) out.push(JSON.parse(block!.slice(start, i + 1)));
    }
  }
  return out;
}

const RESULTS: z.ZodType[] = [
  SubscribeResult,
  UnsubscribeResult,
  PromptResult,
  CommandResult,
  QueueListResult,
  PongResult,
  ExecutionStartResult,
  ExecutionStatusResult,
  TranscriptSubscribeResult,
];

describe('docs/protocol.md stays true to libs/protocol', () => {
  const all = examples();

  it('has examples', () => expect(all.length).toBeGreaterThan(15));

  it.each(all.map((e, i) => [i, JSON.stringify(e).slice(0, 80), e] as const))(
    'example %i is valid: %s',
    (_i, _s, e) => {
      const m = e as Record<string, unknown>;
      if ('op' in m) return void ClientMessage.parse(m);
      if (
        'type' in m &&
        'v' in m &&
        ['reply', 'snapshot', 'update', 'error', 'transcript'].includes(m.type as string)
      )
        return void ServerMessage.parse(m);
      if ('seq' in m && 'type' in m) return void Update.parse(m);
      expect(RESULTS.some((s) => s.safeParse(m).success)).toBe(true);
    },
  );

  it('lists every error code and every update type', () => {
    const codes = (ServerMessage.options[3]!.shape.error.shape.code as z.ZodEnum).options;
    for (const c of codes) expect([c, doc.includes(`| \`${c}\``)]).toEqual([c, true]);
    for (const t of Update.options.map((o) => o.shape.type.value))
      expect([t, doc.includes(`| \`${t}\``)]).toEqual([t, true]);
  });
});
