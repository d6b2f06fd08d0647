import { appendFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';

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

export type ResponsesItem =
  | { type: 'message'; text: string }
  | {
      type: 'function_call';
      name: string;
      namespace?: string;
      arguments: Record<string, unknown>;
    };

export interface ResponsesMatch {
  /** In the conversation's first own user message: a child's conversation starts with its task. */
  first?: string;
  /** In the last input item (a message's text or a tool output). */
  last?: string;
  /** The model's last tool call was of this name and its output is in the input. */
  afterTool?: string;
}

export interface ResponsesTurn {
  name: string;
  when: ResponsesMatch;
  /** The items to answer with; a function can read the request (e.g. an agent id from an output). */
  reply: ResponsesItem[] | ((request: SeenResponsesRequest) => ResponsesItem[]);
  /** Answer every matching request, not only the first. */
  repeat?: boolean;
}

export interface SeenResponsesRequest {
  method: string;
  path: string;
  /** The scripted turn that answered, `unmatched`, or `not found`. */
  answer: string;
  firstUser?: string;
  lastText?: string;
  /** The output of the model's last tool call, when the input carries it. */
  lastToolOutput?: string;
  lastTool?: string;
}

export interface ScriptedResponsesServer {
  /** The `base_url` for Codex's model provider (ends in `/v1`). */
  url: string;
  readonly requests: SeenResponsesRequest[];
  /** Names of the scripted turns used so far, in order. */
  readonly used: string[];
  unmatched(): SeenResponsesRequest[];
  close(): Promise<void>;
}

export interface ScriptedResponsesServerOptions {
  script: ResponsesTurn[];
  log?: (line: string) => void;
  onUnmatched?: (request: SeenResponsesRequest) => void;
  /** Appends every request (path and parsed body) to this JSONL file. */
  dumpTo?: string;
}

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

interface Conversation {
  firstUser: string;
  lastText: string;
  lastTool?: string;
  lastToolOutput?: string;
}

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

const matches = (w: ResponsesMatch, c: Conversation): boolean =>
  (w.first === undefined || c.firstUser.includes(w.first)) &&
  (w.last === undefined || c.lastText.includes(w.last)) &&
  (w.afterTool === undefined || c.lastTool === w.afterTool);

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });

export const startScriptedResponsesServer = async (
  options: ScriptedResponsesServerOptions,
): Promise<ScriptedResponsesServer> => {
  const log = options.log ?? ((line: string) => console.warn(`[scripted-responses] ${line}`));
  const requests: SeenResponsesRequest[] = [];
  const used: string[] = [];
  const consumed = new Set<ResponsesTurn>();
  let responses = 0;
  let calls = 0;

  const stream = (res: ServerResponse, items: ResponsesItem[]): void => {
    const id = `resp_scripted${++responses}`;
    const events: Record<string, unknown>[] = [
      { type: 'response.created', response: { id, status: 'in_progress' } },
    ];
    items.forEach((it, i) => {
      const itemId = `item_scripted${responses}_${i}`;
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
          call_id: `call_scripted${++calls}`,
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

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const raw = await readBody(req);
    const path = (req.url ?? '/').split('?')[0]!;
    const method = req.method ?? 'GET';
    let json: unknown = undefined;
    try {
      json = raw === '' ? undefined : JSON.parse(raw);
    } catch {
      json = raw;
    }
    if (options.dumpTo !== undefined)
      appendFileSync(options.dumpTo, JSON.stringify({ method, path, body: json }) + '\n');
    const parsed = ResponsesRequest.safeParse(json);
    if (method !== 'POST' || !path.endsWith('/responses') || !parsed.success) {
      const seen = { method, path, answer: 'not found' };
      requests.push(seen);
      log(`${method} ${path}: answered 404${parsed.success ? '' : ' (not a Responses request)'}`);
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ error: { message: 'not scripted', type: 'invalid_request_error' } }),
      );
      return;
    }
    const c = conversationOf(parsed.data.input);
    const seen: SeenResponsesRequest = {
      method,
      path,
      answer: 'unmatched',
      firstUser: c.firstUser,
      lastText: c.lastText,
      ...(c.lastTool !== undefined ? { lastTool: c.lastTool } : {}),
      ...(c.lastToolOutput !== undefined ? { lastToolOutput: c.lastToolOutput } : {}),
    };
    requests.push(seen);
    const turn = options.script.find(
      (t) => (t.repeat === true || !consumed.has(t)) && matches(t.when, c),
    );
    if (turn === undefined) {
      log(
        `unmatched: first=${JSON.stringify(c.firstUser.slice(0, 200))} last=${JSON.stringify(c.lastText.slice(0, 300))} afterTool=${c.lastTool ?? '-'}`,
      );
      options.onUnmatched?.(seen);
      stream(res, [{ type: 'message', text: 'No scripted turn for this request.' }]);
      return;
    }
    consumed.add(turn);
    used.push(turn.name);
    seen.answer = turn.name;
    stream(res, typeof turn.reply === 'function' ? turn.reply(seen) : turn.reply);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      log(`error: ${String(e)}`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    used,
    unmatched: () => requests.filter((r) => r.answer === 'unmatched'),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};
