import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import {
  startScriptedServer,
  type Conversation,
  type ScriptedItem,
  type ScriptedMatch,
  type ScriptedServer,
  type ScriptedServerOptions,
  type ScriptedTurn,
  type SeenRequest,
} from './scripted-script';

/**
 * A small OpenAI Responses API on 127.0.0.1 that answers from a script, so the real Codex (under
 * codex-acp) runs real tools offline: exec_command in a real shell, spawn_agent children with
 * their own conversations.
 *
 * Codex posts every model call of every thread (the session's and each child's) to
 * `POST {base_url}/responses` with `stream: true` and reads server-sent events: `response.created`,
 * then per output item `response.output_item.added`, (`response.output_text.delta` for a
 * message), `response.output_item.done`, and `response.completed` (its `response.id` and
 * `usage`). Items are `message` (`output_text` content) or `function_call` (`name`, `namespace`
 * for namespaced tools such as `multi_agent_v1`, `arguments` as a JSON string, `call_id`).
 * Any other path gets a 404, logged, so a run shows what Codex asked for.
 *
 * Codex adds its own context to the conversation as user messages in tags
 * (`<environment_context>`, `<subagent_notification>`, …). Turns match the first user message
 * that is the user's own (not a tag), the last input item's text, and the tool whose output the
 * model gets back.
 */

export type ResponsesItem = ScriptedItem;
export type ResponsesMatch = ScriptedMatch;
export type ResponsesTurn = ScriptedTurn;
export type SeenResponsesRequest = SeenRequest;
export type ScriptedResponsesServer = ScriptedServer;
export type ScriptedResponsesServerOptions = ScriptedServerOptions;

// What the server reads of a request: loose, every other field is Codex's business.
const ContentPart = z.looseObject({ type: z.string(), text: z.string().optional() });
const InputItem = z.looseObject({
  type: z.string(),
  role: z.string().optional(),
  content: z.union([z.string(), z.array(ContentPart)]).optional(),
  name: z.string().optional(),
  call_id: z.string().optional(),
  output: z.unknown().optional(),
});
type InputItem = z.infer<typeof InputItem>;
const ResponsesRequest = z.looseObject({
  model: z.string(),
  input: z.array(InputItem),
  stream: z.boolean().optional(),
});

const textOf = (item: InputItem): string => {
  if (item.type === 'message') {
    const c = item.content;
    return typeof c === 'string' ? c : (c ?? []).map((p) => p.text ?? '').join('');
  }
  if (item.type === 'function_call_output') {
    const o = item.output;
    return typeof o === 'string' ? o : JSON.stringify(o ?? '');
  }
  return '';
};

const conversationOf = (input: InputItem[]): Conversation => {
  const own = input.find(
    (i) => i.type === 'message' && i.role === 'user' && !textOf(i).trimStart().startsWith('<'),
  );
  const last = input.at(-1);
  const c: Conversation = {
    firstUser: own === undefined ? '' : textOf(own),
    lastText: last === undefined ? '' : textOf(last),
  };
  // The model's last call, if its output came back and the model has not spoken since.
  for (let i = input.length - 1; i >= 0; i--) {
    const item = input[i]!;
    if (item.type === 'message' && item.role === 'assistant') break;
    if (item.type !== 'function_call') continue;
    const output = input.slice(i + 1).find((o) => o.type === 'function_call_output');
    if (output !== undefined && output.call_id === item.call_id) {
      c.lastTool = item.name;
      c.lastToolOutput = textOf(output);
    }
    break;
  }
  return c;
};

const stream = (
  res: ServerResponse,
  items: ResponsesItem[],
  counters: { responses: number; calls: number },
): void => {
  const id = `resp_scripted${++counters.responses}`;
  const events: Record<string, unknown>[] = [
    { type: 'response.created', response: { id, status: 'in_progress' } },
  ];
  items.forEach((it, i) => {
    const itemId = `item_scripted${counters.responses}_${i}`;
    if (it.type === 'message') {
      const done = {
        type: 'message',
        id: itemId,
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: it.text, annotations: [] }],
      };
      events.push({
        type: 'response.output_item.added',
        output_index: i,
        item: { ...done, content: [], status: 'in_progress' },
      });
      events.push({
        type: 'response.output_text.delta',
        output_index: i,
        item_id: itemId,
        content_index: 0,
        delta: it.text,
      });
      events.push({ type: 'response.output_item.done', output_index: i, item: done });
    } else {
      const done = {
        type: 'function_call',
        id: itemId,
        status: 'completed',
        name: it.name,
        ...(it.namespace !== undefined ? { namespace: it.namespace } : {}),
        arguments: JSON.stringify(it.arguments),
        call_id: `call_scripted${++counters.calls}`,
      };
      events.push({ type: 'response.output_item.added', output_index: i, item: done });
      events.push({ type: 'response.output_item.done', output_index: i, item: done });
    }
  });
  events.push({
    type: 'response.completed',
    response: {
      id,
      status: 'completed',
      usage: { input_tokens: 100, output_tokens: 10, total_tokens: 110 },
    },
  });
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const e of events) res.write(`event: ${String(e.type)}\ndata: ${JSON.stringify(e)}\n\n`);
  res.end();
};

export const startScriptedResponsesServer = (
  options: ScriptedResponsesServerOptions,
): Promise<ScriptedResponsesServer> => {
  const counters = { responses: 0, calls: 0 };
  return startScriptedServer(
    {
      name: 'scripted-responses',
      request: 'Responses',
      read: (method, path, body) => {
        const parsed = ResponsesRequest.safeParse(body);
        return method === 'POST' && path.endsWith('/responses') && parsed.success
          ? conversationOf(parsed.data.input)
          : undefined;
      },
      respond: (res, items) => stream(res, items, counters),
    },
    options,
  );
};
