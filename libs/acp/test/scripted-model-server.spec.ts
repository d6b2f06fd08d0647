import { startScriptedModelServer, type ScriptTurn } from './support/scripted-model-server';
import { serverPerTest, sseEvents } from './support/scripted-server';

/**
 * The scripted Messages API on its own (no CLI needed): what the real-agent tests rely on —
 * turns matched by what the conversation holds, streamed as the Anthropic SSE events, side
 * requests told apart and answered without consuming a turn, unknown requests logged.
 */

const SCRIPT: ScriptTurn[] = [
  {
    name: 'sub',
    when: { first: 'SUB-MARK' },
    reply: [{ type: 'text', text: 'sub reply' }],
  },
  {
    name: 'launch',
    when: { last: 'GO' },
    reply: [
      { type: 'text', text: 'Running a command for you now.' },
      { type: 'tool_use', id: 'toolu_x', name: 'Bash', input: { command: 'echo "hi"' } },
    ],
  },
  { name: 'after bash', when: { afterTool: 'Bash' }, reply: [{ type: 'text', text: 'done' }] },
];

const TOOLS = [{ name: 'Bash', input_schema: { type: 'object' } }];

const scripted = serverPerTest(startScriptedModelServer, { script: SCRIPT });
const { logged } = scripted;

const post = (path: string, body: object) =>
  fetch(`${scripted.server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

const user = (text: string) => ({ role: 'user', content: [{ type: 'text', text }] });

it('streams a scripted turn: text deltas, tool input as partial JSON, stop reason tool_use', async () => {
  const res = await post('/v1/messages?beta=true', {
    model: 'm',
    stream: true,
    tools: TOOLS,
    messages: [user('please GO')],
  });
  expect(res.headers.get('content-type')).toBe('text/event-stream');
  const evs = await sseEvents(res);
  expect(evs.map((e) => e.type)).toEqual([
    'message_start',
    'content_block_start',
    'content_block_delta',
    'content_block_delta',
    'content_block_stop',
    'content_block_start',
    'content_block_delta',
    'content_block_delta',
    'content_block_stop',
    'message_delta',
    'message_stop',
  ]);
  const deltas = evs.filter((e) => e.type === 'content_block_delta') as {
    index: number;
    delta: { text?: string; partial_json?: string };
  }[];
  expect(
    deltas
      .filter((d) => d.index === 0)
      .map((d) => d.delta.text)
      .join(''),
  ).toBe('Running a command for you now.');
  expect(
    JSON.parse(
      deltas
        .filter((d) => d.index === 1)
        .map((d) => d.delta.partial_json)
        .join(''),
    ),
  ).toEqual({ command: 'echo "hi"' });
  expect(evs[5]).toMatchObject({
    content_block: { type: 'tool_use', id: 'toolu_x', name: 'Bash', input: {} },
  });
  expect(evs.at(-2)).toMatchObject({ delta: { stop_reason: 'tool_use' } });
  expect(scripted.server.used).toEqual(['launch']);
});

it('matches a tool result by the name of the tool use it answers; a used turn is not used again', async () => {
  const conversation = [
    user('please GO'),
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_x', name: 'Bash', input: {} }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_x', content: 'hi' }] },
  ];
  const res = await post('/v1/messages', { model: 'm', tools: TOOLS, messages: conversation });
  expect(await res.json()).toMatchObject({
    content: [{ type: 'text', text: 'done' }],
    stop_reason: 'end_turn',
  });
  // The same request again: the turn is spent, so the server closes the conversation and says so.
  await (await post('/v1/messages', { model: 'm', tools: TOOLS, messages: conversation })).json();
  expect(scripted.server.used).toEqual(['after bash']);
  expect(scripted.server.unmatched()).toHaveLength(1);
  expect(logged.join('\n')).toMatch(/no scripted turn/);
});

it('tells a subagent conversation by its first user message', async () => {
  const res = await post('/v1/messages', {
    model: 'm',
    tools: TOOLS,
    messages: [user('SUB-MARK: look'), { role: 'assistant', content: 'x' }, user('GO on')],
  });
  expect(await res.json()).toMatchObject({ content: [{ text: 'sub reply' }] });
});

it('answers side requests harmlessly without consuming a turn', async () => {
  const title = await post('/v1/messages', {
    model: 'm',
    system: [{ type: 'text', text: 'You are naming a coding session so the user can pick it' }],
    output_config: {
      format: {
        type: 'json_schema',
        schema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] },
      },
    },
    messages: [user('<session>GO</session>')],
  });
  const titleText = ((await title.json()) as { content: { text: string }[] }).content[0]!.text;
  expect(JSON.parse(titleText)).toEqual({ title: 'Scripted session' });
  // The prompt suggestion is a fork of the conversation: same tools, a mode order as last message.
  const suggestion = await post('/v1/messages', {
    model: 'm',
    tools: TOOLS,
    messages: [
      user('please GO'),
      { role: 'assistant', content: 'ok' },
      user('[SUGGESTION MODE: x]'),
    ],
  });
  expect(await suggestion.json()).toMatchObject({ content: [{ type: 'text', text: '' }] });
  expect(scripted.server.requests.map((r) => [r.kind, r.sideKind])).toEqual([
    ['side', 'title'],
    ['side', 'suggestion'],
  ]);
  expect(scripted.server.used).toEqual([]);
});

it('answers token counting and logs unknown requests', async () => {
  expect(await (await post('/v1/messages/count_tokens', { messages: [] })).json()).toEqual({
    input_tokens: 100,
  });
  const unknown = await post('/v1/other', { a: 1 });
  expect(unknown.status).toBe(404);
  expect((await fetch(`${scripted.server.url}/health`)).status).toBe(200);
  expect(scripted.server.requests.map((r) => r.kind)).toEqual([
    'count_tokens',
    'unknown',
    'unknown',
  ]);
  expect(logged).toEqual([
    expect.stringContaining('unknown request POST /v1/other'),
    expect.stringContaining('unknown request GET /health'),
  ]);
});

describe('system reminders the CLI adds to user messages', () => {
  const reminder = (text: string) => `<system-reminder>\n${text}\n</system-reminder>`;
  const withReminders = (...texts: string[]) => ({
    role: 'user',
    content: texts.map((text) => ({ type: 'text', text })),
  });

  it('match the user own text: a marker only in a reminder does not match `last`', async () => {
    await (
      await post('/v1/messages', {
        model: 'm',
        tools: TOOLS,
        messages: [withReminders(reminder('the user once said GO'), 'hello')],
      })
    ).json();
    expect(scripted.server.used).toEqual([]);
    const res = await post('/v1/messages', {
      model: 'm',
      tools: TOOLS,
      messages: [withReminders(reminder('Today is a day; cwd listing'), `please GO`)],
    });
    expect(await res.json()).toMatchObject({ content: [{ type: 'text' }, { type: 'tool_use' }] });
    expect(scripted.server.used).toEqual(['launch']);
    expect(scripted.server.requests.at(-1)).toMatchObject({
      lastUser: 'please GO',
      lastReminders: expect.stringContaining('cwd listing'),
    });
  });

  it('`reminder` matches inside them (task notifications arrive as reminders)', async () => {
    await scripted.restart({
      script: [
        { name: 'note', when: { reminder: '<task-notification>' }, reply: [], repeat: true },
      ],
    });
    const note = withReminders(
      reminder('<task-notification><task-id>b1</task-id></task-notification>'),
    );
    for (let i = 0; i < 2; i++)
      await (await post('/v1/messages', { model: 'm', tools: TOOLS, messages: [note] })).json();
    // The notification written as plain user text is not one the CLI sends: it does not match.
    await (
      await post('/v1/messages', {
        model: 'm',
        tools: TOOLS,
        messages: [user('<task-notification>x</task-notification>')],
      })
    ).json();
    expect(scripted.server.used).toEqual(['note', 'note']);
    expect(scripted.server.unmatched()).toHaveLength(1);
  });
});

it('reports an unmatched conversation request at once, with what its last user message held', async () => {
  const reports: string[] = [];
  await scripted.restart({
    script: SCRIPT,
    onUnmatched: (r) => reports.push(r.report ?? ''),
  });
  const res = await post('/v1/messages', {
    model: 'm',
    tools: TOOLS,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: '<system-reminder>\nsome note\n</system-reminder>' },
          { type: 'text', text: 'prompt NOPE' },
        ],
      },
    ],
  });
  expect(await res.json()).toMatchObject({ content: [{ text: 'Nothing more to do.' }] });
  expect(reports).toHaveLength(1);
  expect(reports[0]).toContain('roles: user');
  expect(reports[0]).toContain('- reminder: "<system-reminder>\\nsome note');
  expect(reports[0]).toContain('- text: "prompt NOPE"');
  expect(reports[0]).toContain('turns still open: "sub" {"first":"SUB-MARK"}');
  expect(scripted.server.unmatched()).toEqual([expect.objectContaining({ report: reports[0] })]);
  expect(logged.join('\n')).toContain('prompt NOPE');
});
