import { startScriptedChatServer } from './support/scripted-chat-server';
import type { ScriptedTurn } from './support/scripted-script';
import { serverPerTest } from './support/scripted-server';

/**
 * The scripted Chat Completions API on its own (no agent needed): what qwen-real.spec and
 * opencode-real.spec rely on — turns matched by the conversation (tagged user messages left out of
 * `first`, the system prompt for side calls), streamed as `chat.completion.chunk` events with
 * whole tool calls, answered whole when not streaming, anything else a logged 404.
 */

const SCRIPT: ScriptedTurn[] = [
  {
    name: 'title',
    when: { system: 'title generator' },
    reply: [{ type: 'message', text: 'T' }],
    repeat: true,
  },
  {
    name: 'run',
    when: { last: 'GO' },
    reply: [
      { type: 'message', text: 'Running.' },
      { type: 'function_call', name: 'bash', arguments: { command: 'echo hi' } },
    ],
  },
  {
    name: 'after bash',
    when: { afterTool: 'bash' },
    reply: (r) => [{ type: 'message', text: `got ${r.lastToolOutput}` }],
  },
];

const scripted = serverPerTest(startScriptedChatServer, { script: SCRIPT });
const { logged } = scripted;

const post = (messages: object[], stream = true, path = '/chat/completions') =>
  fetch(`${scripted.server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages, stream }),
  });

/** The `data:` payloads of an SSE body, `[DONE]` last. */
const chunks = async (res: Response) =>
  (await res.text())
    .split('\n\n')
    .filter((b) => b.trim() !== '')
    .map((b) => b.replace(/^data: /, ''))
    .map((d) => (d === '[DONE]' ? d : (JSON.parse(d) as Record<string, unknown>)));

const SYSTEM = { role: 'system', content: 'You are an agent.' };
const user = (content: unknown) => ({ role: 'user', content });

describe('scripted Chat Completions API', () => {
  it('streams text, then each tool call whole, the finish reason, usage and [DONE]', async () => {
    const res = await post([SYSTEM, user('<system-reminder>x</system-reminder>'), user('GO')]);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const c = await chunks(res);
    expect(c.at(-1)).toBe('[DONE]');
    const deltas = c
      .slice(0, -1)
      .map((x) => (x as { choices: { delta?: unknown; finish_reason?: unknown }[] }).choices[0]);
    expect(deltas[1]).toMatchObject({ delta: { content: 'Running.' } });
    expect(deltas[2]).toMatchObject({
      delta: {
        tool_calls: [
          {
            index: 0,
            id: expect.stringMatching(/^call_scripted\d+$/),
            type: 'function',
            function: { name: 'bash', arguments: '{"command":"echo hi"}' },
          },
        ],
      },
    });
    expect(deltas[3]).toMatchObject({ finish_reason: 'tool_calls' });
    expect(c.at(-2)).toMatchObject({ choices: [], usage: { total_tokens: 110 } });
    expect(scripted.server.requests[0]).toMatchObject({ firstUser: 'GO', answer: 'run' });
  });

  it('matches the tool whose output came back, and side calls by their system prompt', async () => {
    const call = {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'bash', arguments: '{}' } }],
    };
    const output = { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'hi' }] };
    const body = (await (await post([SYSTEM, user('GO'), call, output], false)).json()) as {
      choices: { message: unknown; finish_reason: string }[];
    };
    expect(body.choices[0]).toEqual({
      index: 0,
      message: { role: 'assistant', content: 'got hi' },
      finish_reason: 'stop',
    });
    const title = { role: 'system', content: 'You are a title generator.' };
    for (let i = 0; i < 2; i++) await (await post([title, user('GO')], false)).text();
    expect(scripted.server.used).toEqual(['after bash', 'title', 'title']);
  });

  it('an unmatched request is answered and reported; anything else is a logged 404', async () => {
    await (await post([SYSTEM, user('GO')])).text();
    await (await post([SYSTEM, user('GO')])).text();
    expect(scripted.server.unmatched()).toHaveLength(1);
    const res = await fetch(`${scripted.server.url}/models`);
    expect(res.status).toBe(404);
    expect(logged).toEqual([
      expect.stringMatching(/^unmatched:/),
      'GET /v1/models: answered 404 (not a Chat Completions request)',
    ]);
  });
});
