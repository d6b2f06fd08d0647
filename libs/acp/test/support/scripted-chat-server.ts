import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import {
  startScriptedServer,
  type Conversation,
  type ScriptedItem,
  type ScriptedServer,
  type ScriptedServerOptions,
} from './scripted-script';

/**
 * A small OpenAI Chat Completions API on 127.0.0.1 that answers from a script, for the agents that
 * speak to any OpenAI-compatible provider (Qwen Code, OpenCode): `POST {base_url}/chat/completions`
 * with `messages` (`system`, `user`, `assistant` with `tool_calls`, `tool` with `tool_call_id`)
 * and `tools`. A streaming request (`stream: true`) gets `chat.completion.chunk` server-sent events
 * (the text, or each tool call whole in one delta, then `finish_reason`, then a usage chunk, then
 * `[DONE]`); any other gets one `chat.completion`. Any other path gets a 404, logged.
 *
 * Turns match the first user message that is the user's own (not a tag such as
 * `<system-reminder>`), the last message's text (a tool's output included), the tool whose output
 * the model gets back, and the system prompt (so an agent's side calls, a title or a memory
 * pass, are told from its turns).
 */

const Part = z.looseObject({ type: z.string(), text: z.string().optional() });
const Message = z.looseObject({
  role: z.string(),
  content: z.union([z.string(), z.array(Part), z.null()]).optional(),
  tool_calls: z
    .array(z.looseObject({ id: z.string(), function: z.looseObject({ name: z.string() }) }))
    .optional(),
  tool_call_id: z.string().optional(),
});
type Message = z.infer<typeof Message>;
const ChatRequest = z.looseObject({
  model: z.string(),
  messages: z.array(Message),
  stream: z.boolean().optional(),
});

const textOf = (m: Message): string =>
  typeof m.content === 'string'
    ? m.content
    : (m.content ?? []).map((p) => (p.type === 'text' ? (p.text ?? '') : '')).join('');

const conversationOf = (messages: Message[]): Conversation => {
  const system = messages
    .filter((m) => m.role === 'system')
    .map(textOf)
    .join('\n');
  const own = messages.find((m) => m.role === 'user' && !textOf(m).trimStart().startsWith('<'));
  const last = messages.at(-1);
  const c: Conversation = {
    firstUser: own === undefined ? '' : textOf(own),
    lastText: last === undefined ? '' : textOf(last),
    system,
  };
  // The model's last call, if its output came back (a `tool` message after the call).
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'assistant') continue;
    const call = m.tool_calls?.at(-1);
    const output = messages.slice(i + 1).find((o) => o.role === 'tool');
    if (call !== undefined && output !== undefined && output.tool_call_id === call.id) {
      c.lastTool = call.function.name;
      c.lastToolOutput = textOf(output);
    }
    break;
  }
  return c;
};

const USAGE = { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 };

const reply = (
  res: ServerResponse,
  items: ScriptedItem[],
  request: { model: string; stream?: boolean | undefined },
  counters: { completions: number; calls: number },
): void => {
  const id = `chatcmpl-scripted${++counters.completions}`;
  const text = items.flatMap((i) => (i.type === 'message' ? [i.text] : [])).join('');
  const toolCalls = items.flatMap((i) =>
    i.type === 'function_call'
      ? [
          {
            id: `call_scripted${++counters.calls}`,
            type: 'function',
            function: { name: i.name, arguments: JSON.stringify(i.arguments) },
          },
        ]
      : [],
  );
  const finish = toolCalls.length > 0 ? 'tool_calls' : 'stop';
  const base = { id, created: 1, model: request.model };
  if (request.stream !== true) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        ...base,
        object: 'chat.completion',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: text === '' ? null : text,
              ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
            },
            finish_reason: finish,
          },
        ],
        usage: USAGE,
      }),
    );
    return;
  }
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices, ...extra })}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]));
  if (text !== '') res.write(chunk([{ index: 0, delta: { content: text }, finish_reason: null }]));
  toolCalls.forEach((call, index) =>
    res.write(
      chunk([{ index: 0, delta: { tool_calls: [{ index, ...call }] }, finish_reason: null }]),
    ),
  );
  res.write(chunk([{ index: 0, delta: {}, finish_reason: finish }]));
  res.write(chunk([], { usage: USAGE }));
  res.end('data: [DONE]\n\n');
};

export const startScriptedChatServer = (
  options: ScriptedServerOptions,
): Promise<ScriptedServer> => {
  const counters = { completions: 0, calls: 0 };
  return startScriptedServer(
    {
      name: 'scripted-chat',
      request: 'Chat Completions',
      read: (method, path, body) => {
        const parsed = ChatRequest.safeParse(body);
        return method === 'POST' && path.endsWith('/chat/completions') && parsed.success
          ? conversationOf(parsed.data.messages)
          : undefined;
      },
      respond: (res, items, body) => reply(res, items, ChatRequest.parse(body), counters),
    },
    options,
  );
};
