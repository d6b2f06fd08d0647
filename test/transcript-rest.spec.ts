// The transcript over REST with every part real: redis-server, a projector, a gateway and a worker
// process replaying bundled recordings of real agents (Claude, Codex). Each is prompted; the
// transcript is paged with a small limit (the cursor carries the reader across pages) and one
// turn is fetched whole, and what it holds is what the reducer makes of the recording itself.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  foldTranscript,
  transcriptOf,
  type RecordedFrame,
  type TranscriptEvent,
  type TranscriptItem,
} from '@baton/transcript';
import { FIXTURES, startAgentStack, waitFor, type AgentStack } from '@baton/testing';

jest.setTimeout(180_000);

type Entry = { id: string; executionId: string; event: TranscriptEvent };
type Json = Record<string, unknown>;

let stack: AgentStack;

beforeAll(async () => {
  stack = await startAgentStack({
    profiles: {
      claude: { kind: 'replay', recording: 'claude-shell-background-plain', speed: 0 },
      codex: { kind: 'replay', recording: 'codex-real-exec', speed: 0 },
    },
  });
});
afterAll(() => stack?.stop());

/** Every event of the session, `limit` per page, following the cursor until a page is empty. */
async function pageAll(taskId: string, limit: number): Promise<{ events: Entry[]; pages: number }> {
  const events: Entry[] = [];
  let after = '';
  for (let pages = 1; ; pages++) {
    const r = await stack.rest(
      'GET',
      `/v1/tasks/${taskId}/sessions/s/transcript?limit=${limit}${after ? `&after=${after}` : ''}`,
    );
    expect(r.status).toBe(200);
    const page = r.body as { events: Entry[]; cursor: string };
    expect(page.events.length).toBeLessThanOrEqual(limit);
    if (page.events.length === 0) return { events, pages };
    events.push(...page.events);
    after = page.cursor;
  }
}

/**
 * The recording's own transcript: the reducer run over its frames, folded, its items scoped as
 * the worker scopes them (by the execution's generation, the session's first here).
 */
function recorded(name: string): TranscriptItem[] {
  const frames = readFileSync(join(FIXTURES, `${name}.jsonl`), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as RecordedFrame);
  return foldTranscript(transcriptOf(frames, undefined, 'g1.').events);
}

/**
 * What a replay cannot make the same as the recording: the turn is Baton's prompt id, not the
 * recording's, and a permission is settled by whoever answered it, when they did.
 */
function comparable(items: readonly TranscriptItem[]): unknown[] {
  return items
    .filter((i) => i.phase !== 'setup' && i.phase !== 'history')
    .map((i) => {
      const { turn: _turn, ...rest } = i as TranscriptItem & { settled?: Json };
      if (i.type === 'prompt') return { type: 'prompt' };
      if ('settled' in rest && rest.settled) {
        const { by: _by, at: _at, ...settled } = rest.settled;
        return { ...rest, settled };
      }
      return rest;
    });
}

/** Starts the profile's execution, prompts it and waits until its turn (and what follows) is in. */
async function promptedTurn(
  taskId: string,
  profile: string,
  text: string,
  answer?: string,
): Promise<string> {
  expect((await stack.execute(taskId, { profile })).status).toBe(202);
  await waitFor(
    async () => (await stack.session(taskId))?.activity.state === 'idle',
    'agent ready',
  );
  const p = await stack.rest('POST', `/v1/tasks/${taskId}/sessions/s/prompts`, {
    text,
    idempotencyKey: `${taskId}-1`,
  });
  expect(p.status).toBe(200);
  const promptId = p.body.promptId as string;
  if (answer !== undefined) {
    const request = await waitFor(
      async () => (await stack.session(taskId))?.permissions?.[0],
      'the agent asks permission',
    );
    const a = await stack.rest(
      'POST',
      `/v1/tasks/${taskId}/sessions/s/permissions/${request.requestId}`,
      { optionId: answer },
    );
    expect(a.body).toMatchObject({ status: 'done' });
  }
  return promptId;
}

it('Claude: pages the transcript and fetches the turn: text, shell, permission, usage', async () => {
  const promptId = await promptedTurn('t-claude', 'claude', 'Wait in the background', 'allow');
  const want = comparable(recorded('claude-shell-background-plain'));
  // The turn whole, once its background part (the shell finishing) is in too.
  const turn = await waitFor(async () => {
    const r = await stack.rest('GET', `/v1/tasks/t-claude/sessions/s/transcript/turns/${promptId}`);
    const items = (r.body.items ?? []) as TranscriptItem[];
    return comparable(items).length >= want.length ? r : null;
  }, 'the turn and its background part');
  expect(turn.status).toBe(200);
  const items = turn.body.items as TranscriptItem[];
  expect(comparable(items)).toEqual(want);
  expect(items.every((i) => i.turn === promptId)).toBe(true);

  // The same events, paged three at a time, each once and in order.
  const { events, pages } = await pageAll('t-claude', 3);
  expect(pages).toBeGreaterThan(2);
  expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
  const ofTurn = events.filter((e) => e.event.turn === promptId);
  expect(ofTurn).toEqual(turn.body.events);
  expect(foldTranscript(ofTurn.map((e) => e.event))).toEqual(items);

  // A few literal things a person reads.
  expect(items.find((i) => i.type === 'prompt')).toMatchObject({
    content: [{ type: 'text', text: { text: 'Wait in the background' } }],
  });
  const texts = items.flatMap((i) => (i.type === 'message' && i.role === 'agent' ? [i.text] : []));
  expect(texts).toEqual(['Started it in the background.', 'The background command finished.']);
  const tool = items.find((i) => i.type === 'tool');
  expect(tool).toMatchObject({ title: 'sleep 100', kind: 'execute', status: 'completed' });
  expect(tool).toMatchObject({
    input: { raw: { text: expect.stringContaining('"command":"sleep 100"') } },
    result: { text: expect.stringMatching(/^Command running in background with ID: bash_1\./) },
  });
  const permission = items.find((i) => i.type === 'permission');
  expect(permission).toMatchObject({
    title: 'sleep 100',
    options: [
      { optionId: 'allow', name: 'Allow', kind: 'allow_once' },
      { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
    ],
    settled: { outcome: 'selected', optionId: 'allow', optionKind: 'allow_once' },
  });
  const usage = items.filter((i) => i.type === 'usage');
  expect(usage[0]).toMatchObject({ used: 52_632, size: 200_000, cost: { amount: 3.17 } });
});

it('Codex: the same for a real Codex recording: its command, output and usage', async () => {
  const promptId = await promptedTurn('t-codex', 'codex', 'Run the command');
  const want = comparable(recorded('codex-real-exec'));
  const turn = await waitFor(async () => {
    const r = await stack.rest('GET', `/v1/tasks/t-codex/sessions/s/transcript/turns/${promptId}`);
    const items = (r.body.items ?? []) as TranscriptItem[];
    return items.some((i) => i.type === 'turn_end') ? r : null;
  }, 'the turn');
  const items = turn.body.items as TranscriptItem[];
  expect(comparable(items)).toEqual(want);
  const { events } = await pageAll('t-codex', 2);
  expect(events.filter((e) => e.event.turn === promptId)).toEqual(turn.body.events);
  const tool = items.find((i) => i.type === 'tool');
  expect(tool).toMatchObject({
    title: 'until [ -f release-exec ]; do sleep 0.1; done; echo hello',
    kind: 'execute',
  });
  expect(tool).toMatchObject({ status: 'completed', result: { text: 'hello\n' } });
  expect(items.find((i) => i.type === 'message')).toMatchObject({ text: 'It printed hello.' });
  expect(items.filter((i) => i.type === 'usage').at(-1)).toMatchObject({
    used: 110,
    size: 258_400,
  });
});
