import {
  startScriptedResponsesServer,
  type ResponsesTurn,
} from './support/scripted-responses-server';
import { serverPerTest, sseEvents } from './support/scripted-server';

/**
 * The scripted Responses API on its own (no Codex needed): what codex-real.spec relies on — turns
 * matched by what the conversation holds (Codex's own tagged context left out of `first`), streamed
 * as the Responses SSE events Codex reads, namespaced function calls, unmatched and unknown
 * requests reported.
 */

const SCRIPT: ResponsesTurn[] = [
  { name: 'child', when: { first: 'CHILD' }, reply: [{ type: 'message', text: 'child reply' }] },
  {
    name: 'spawn',
    when: { last: 'GO' },
    reply: [
      { type: 'message', text: 'Spawning.' },
      {
        type: 'function_call',
        name: 'spawn_agent',
        namespace: 'multi_agent_v1',
        arguments: { message: 'CHILD: work' },
      },
    ],
  },
  {
    name: 'after spawn',
    when: { afterTool: 'spawn_agent' },
    reply: (r) => [{ type: 'message', text: `got ${r.lastToolOutput}` }],
  },
];

const scripted = serverPerTest(startScriptedResponsesServer, { script: SCRIPT });
const { logged } = scripted;

const user = (text: string) => ({
  type: 'message',
  role: 'user',
  content: [{ type: 'input_text', text }],
});
const CONTEXT = user('<environment_context>\n  <cwd>/w</cwd>\n</environment_context>');

const post = (input: object[], path = '/responses') =>
  fetch(`${scripted.server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-5.4', input, stream: true }),
  });

describe('scripted Responses API', () => {
  it('streams a turn as created, per item added/delta/done, completed with usage', async () => {
    const res = await post([CONTEXT, user('GO')]);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const ev = await sseEvents(res);
    expect(ev.map((e) => e.type)).toEqual([
      'response.created',
      'response.output_item.added',
      'response.output_text.delta',
      'response.output_item.done',
      'response.output_item.added',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(ev[3]).toMatchObject({
      item: {
        type: 'message',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Spawning.' }],
      },
    });
    const call = ev[5]!.item as Record<string, unknown>;
    expect(call).toMatchObject({
      type: 'function_call',
      name: 'spawn_agent',
      namespace: 'multi_agent_v1',
      call_id: expect.stringMatching(/^call_scripted\d+$/),
    });
    expect(JSON.parse(call.arguments as string)).toEqual({ message: 'CHILD: work' });
    expect(ev[6]).toMatchObject({
      response: { id: expect.any(String), usage: { total_tokens: expect.any(Number) } },
    });
    expect(scripted.server.used).toEqual(['spawn']);
  });

  it('matches the first own user message (tags left out), the last item and the last tool', async () => {
    await (await post([CONTEXT, user('CHILD: work')])).text();
    const call = { type: 'function_call', name: 'spawn_agent', call_id: 'c1', arguments: '{}' };
    const output = { type: 'function_call_output', call_id: 'c1', output: '{"agent_id":"a1"}' };
    // Codex may append its own notification after the tool output: still "after spawn_agent".
    const notice = user('<subagent_notification>{}</subagent_notification>');
    const ev = await sseEvents(await post([CONTEXT, user('GO'), call, output, notice]));
    expect(ev[3]).toMatchObject({
      item: { content: [{ text: 'got {"agent_id":"a1"}' }] },
    });
    expect(scripted.server.used).toEqual(['child', 'after spawn']);
    expect(scripted.server.requests[1]).toMatchObject({
      firstUser: 'GO',
      lastTool: 'spawn_agent',
      lastToolOutput: '{"agent_id":"a1"}',
    });
  });

  it('a turn answers once unless repeated; an unmatched request is answered, reported and logged', async () => {
    const seen: unknown[] = [];
    await scripted.restart({
      script: SCRIPT,
      onUnmatched: (r) => seen.push(r),
    });
    await (await post([user('GO')])).text();
    const ev = await sseEvents(await post([user('GO')]));
    expect(ev[3]).toMatchObject({
      item: { content: [{ text: 'No scripted turn for this request.' }] },
    });
    expect(scripted.server.unmatched()).toHaveLength(1);
    expect(seen).toHaveLength(1);
    expect(logged.some((l) => l.startsWith('unmatched:'))).toBe(true);
  });

  it('anything but POST /responses is a logged 404', async () => {
    const res = await fetch(`${scripted.server.url}/models`);
    expect(res.status).toBe(404);
    expect(scripted.server.requests).toEqual([
      { method: 'GET', path: '/v1/models', answer: 'not found' },
    ]);
    expect(logged).toEqual(['GET /v1/models: answered 404 (not a Responses request)']);
  });
});
