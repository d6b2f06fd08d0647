import type { IncomingMessage, ServerResponse } from 'node:http';
import { appendFileSync } from 'node:fs';
import {
  readBody,
  serveLoopback,
  type ScriptedServer,
  type ScriptedServerOptions,
} from './scripted-server';

/**
 * A small Anthropic Messages API on 127.0.0.1 that answers from a script, so the real Claude
 * Code CLI (under claude-agent-acp) runs real tools offline: Bash in the background, Agent
 * subagents, Monitor watches.
 *
 * The CLI sends three sorts of requests to `POST /v1/messages`:
 * - conversation requests (the session's main loop and every subagent's loop): they offer tools;
 *   the script answers them, each turn matched against what the conversation holds;
 * - side requests (session title, prompt suggestion, summaries): no tools offered, or a structured
 *   output format; they get a harmless answer and never consume a scripted turn;
 * - anything else (token counting, unknown paths): an empty answer, logged, so a test run shows
 *   what the CLI asked for.
 *
 * The CLI wraps what it adds to a user message (attribution rules, date and environment notes,
 * task notifications) in `<system-reminder>` tags, and what it adds changes between CLI versions
 * and with the machine. Turns therefore match the user's own text (reminders taken out) and, only
 * where a scenario needs it (task notifications), the reminders.
 */

export type ScriptBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; name: string; input: Record<string, unknown>; id?: string };

/** What a scripted turn answers. Every field given must hold (substrings, case-sensitive). */
export interface TurnMatch {
  /**
   * In the conversation's first user message (its own text). A subagent's conversation starts
   * with the prompt the Agent tool was given, so a marker in that prompt tells its requests apart.
   */
  first?: string;
  /** In the last user message: its own text and the text of the tool results it carries. */
  last?: string;
  /** In the last user message's system reminders: where the CLI puts task notifications. */
  reminder?: string;
  /** The last user message carries the result of a tool use of this name. */
  afterTool?: string;
}

export interface ScriptTurn {
  name: string;
  when: TurnMatch;
  reply: ScriptBlock[];
  /** Answer every matching request (e.g. one per Monitor event), not only the first. */
  repeat?: boolean;
}

export type RequestKind = 'conversation' | 'side' | 'count_tokens' | 'unknown';

export interface SeenRequest {
  kind: RequestKind;
  method: string;
  path: string;
  /** The scripted turn that answered, or why none did. */
  answer: string;
  /** For side requests, what they were taken for. */
  sideKind?: string;
  /** Own text of the conversation's first and last user messages (tool results included). */
  firstUser?: string;
  lastUser?: string;
  /** The system reminders of the last user message. */
  lastReminders?: string;
  /** For an unmatched conversation request: what it held, for the failure message. */
  report?: string;
}

/** Conversation requests no scripted turn matched each got a closing text answer. */
export type ScriptedModelServer = ScriptedServer<SeenRequest>;
export type ScriptedModelServerOptions = ScriptedServerOptions<ScriptTurn, SeenRequest>;

type Json = Record<string, unknown>;

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

interface Message {
  role: string;
  content: unknown;
}

const blocksOf = (content: unknown): Json[] =>
  typeof content === 'string'
    ? [{ type: 'text', text: content }]
    : Array.isArray(content)
      ? content.filter(isObj)
      : [];

const textOf = (content: unknown): string =>
  blocksOf(content)
    .map((b) => {
      if (b.type === 'text' && typeof b.text === 'string') return b.text;
      if (b.type === 'tool_result') return textOf(b.content);
      return '';
    })
    .join('\n');

const REMINDER = /<system-reminder>[\s\S]*?<\/system-reminder>/g;

/** A message's text split into the user's own (tool results included) and the CLI's reminders. */
const split = (content: unknown): { own: string; reminders: string } => {
  const text = textOf(content);
  return {
    own: text.replace(REMINDER, '').trim(),
    reminders: (text.match(REMINDER) ?? []).join('\n'),
  };
};

/** Names of the tools whose results the message carries, found through the conversation. */
const resultToolNames = (messages: Message[], last: Message): string[] => {
  const names = new Map<string, string>();
  for (const m of messages) {
    if (m.role !== 'assistant') continue;
    for (const b of blocksOf(m.content)) {
      if (b.type === 'tool_use' && typeof b.id === 'string' && typeof b.name === 'string')
        names.set(b.id, b.name);
    }
  }
  return blocksOf(last.content).flatMap((b) =>
    b.type === 'tool_result' && typeof b.tool_use_id === 'string'
      ? [names.get(b.tool_use_id) ?? '?']
      : [],
  );
};

interface Conversation {
  messages: Message[];
  firstUser: string;
  lastUser: string;
  lastReminders: string;
  afterTools: string[];
}

const conversationOf = (body: Json): Conversation => {
  const messages = (Array.isArray(body.messages) ? body.messages : []).filter(
    (m): m is Message => isObj(m) && typeof m.role === 'string',
  );
  const users = messages.filter((m) => m.role === 'user');
  const first = users[0];
  const last = users.at(-1);
  const lastText = last === undefined ? { own: '', reminders: '' } : split(last.content);
  return {
    messages,
    firstUser: first === undefined ? '' : split(first.content).own,
    lastUser: lastText.own,
    lastReminders: lastText.reminders,
    afterTools: last === undefined ? [] : resultToolNames(messages, last),
  };
};

const matches = (w: TurnMatch, c: Conversation): boolean =>
  (w.first === undefined || c.firstUser.includes(w.first)) &&
  (w.last === undefined || c.lastUser.includes(w.last)) &&
  (w.reminder === undefined || c.lastReminders.includes(w.reminder)) &&
  (w.afterTool === undefined || c.afterTools.includes(w.afterTool));

const clip = (s: string, n: number): string =>
  s.length <= n ? s : `${s.slice(0, n)}… (${s.length} chars)`;

/**
 * What an unmatched conversation request held, against what the script offered: the roles in
 * order, the first user message's own text, every block of the last user message (reminders
 * shortened, the user's own text in full up to a bound), and each unused turn's condition.
 */
const reportOf = (c: Conversation, script: ScriptTurn[], consumed: Set<ScriptTurn>): string => {
  const blocks = (m: Message | undefined): string[] =>
    m === undefined
      ? ['(none)']
      : blocksOf(m.content).map((b) => {
          if (b.type === 'text' && typeof b.text === 'string')
            return b.text.trimStart().startsWith('<system-reminder>')
              ? `reminder: ${JSON.stringify(clip(b.text, 200))}`
              : `text: ${JSON.stringify(clip(b.text, 1_000))}`;
          if (b.type === 'tool_result') {
            const name = resultToolNames(c.messages, { role: 'user', content: [b] })[0];
            return `tool_result of ${name}: ${JSON.stringify(clip(textOf(b.content), 300))}`;
          }
          return `${String(b.type)} block`;
        });
  const users = c.messages.filter((m) => m.role === 'user');
  const open = script.filter((t) => t.repeat === true || !consumed.has(t));
  return [
    `roles: ${c.messages.map((m) => m.role).join(', ')}`,
    `first user message's own text: ${JSON.stringify(clip(c.firstUser, 300))}`,
    `last user message:`,
    ...blocks(users.at(-1)).map((b) => `  - ${b}`),
    `turns still open: ${open.map((t) => `"${t.name}" ${JSON.stringify(t.when)}`).join('; ') || '(none)'}`,
  ].join('\n');
};

const systemText = (body: Json): string =>
  typeof body.system === 'string' ? body.system : textOf(body.system);

const outputSchema = (body: Json): Json | undefined => {
  const format = isObj(body.output_config) ? body.output_config.format : undefined;
  return isObj(format) && isObj(format.schema) ? format.schema : undefined;
};

/** A minimal value of a JSON schema: enough for a structured side request to parse. */
const minimal = (schema: Json, hint: string): unknown => {
  switch (schema.type) {
    case 'object': {
      const props = isObj(schema.properties) ? schema.properties : {};
      const required = Array.isArray(schema.required) ? schema.required : Object.keys(props);
      return Object.fromEntries(
        required.flatMap((k) => {
          const p = props[k as string];
          return typeof k === 'string' && isObj(p) ? [[k, minimal(p, k)]] : [];
        }),
      );
    }
    case 'array':
      return [];
    case 'string':
      return Array.isArray(schema.enum)
        ? schema.enum[0]
        : hint === 'title'
          ? 'Scripted session'
          : '';
    case 'number':
    case 'integer':
      return 0;
    case 'boolean':
      return false;
    default:
      return null;
  }
};

/**
 * A side request is one the conversation does not wait on. Most offer no tools or ask for a
 * structured answer (the session title). Some are forks of the conversation that share its
 * prompt cache, so they carry the same system prompt and tools: the prompt suggestion made after
 * each cycle is one, told apart by its last user message, a bracketed `[... MODE: ...]` order.
 */
const sideKind = (body: Json, c: Conversation): string | undefined => {
  const mode = /^\s*\[([A-Z][A-Z ]*) MODE:/.exec(c.lastUser);
  if (mode !== null) return mode[1]!.toLowerCase();
  const tools = Array.isArray(body.tools) ? body.tools : [];
  if (tools.length > 0 && outputSchema(body) === undefined) return undefined;
  if (/naming a coding session/i.test(systemText(body))) return 'title';
  return 'other';
};

let counter = 0;
const nextId = (prefix: string): string =>
  `${prefix}_scripted${(++counter).toString().padStart(4, '0')}`;

interface Reply {
  model: string;
  blocks: ScriptBlock[];
}

const messageOf = ({ model, blocks }: Reply) => {
  const content = blocks.map((b) =>
    b.type === 'text'
      ? { type: 'text', text: b.text }
      : { type: 'tool_use', id: b.id ?? nextId('toolu'), name: b.name, input: b.input },
  );
  return {
    id: nextId('msg'),
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: {
      input_tokens: 100,
      output_tokens: 10,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  };
};

const sendJson = (res: ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/** The message as Server-Sent Events, text in a few deltas and tool input as partial JSON. */
const sendStream = (res: ServerResponse, message: ReturnType<typeof messageOf>): void => {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const event = (type: string, data: Json) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  event('message_start', {
    message: {
      ...message,
      content: [],
      stop_reason: null,
      usage: { ...message.usage, output_tokens: 1 },
    },
  });
  message.content.forEach((block, index) => {
    if (block.type === 'text') {
      event('content_block_start', { index, content_block: { type: 'text', text: '' } });
      const text = block.text as string;
      for (let i = 0; i < text.length; i += 24)
        event('content_block_delta', {
          index,
          delta: { type: 'text_delta', text: text.slice(i, i + 24) },
        });
    } else {
      event('content_block_start', {
        index,
        content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
      });
      const json = JSON.stringify(block.input);
      const half = Math.ceil(json.length / 2);
      for (const part of [json.slice(0, half), json.slice(half)])
        event('content_block_delta', {
          index,
          delta: { type: 'input_json_delta', partial_json: part },
        });
    }
    event('content_block_stop', { index });
  });
  event('message_delta', {
    delta: { stop_reason: message.stop_reason, stop_sequence: null },
    usage: { output_tokens: message.usage.output_tokens },
  });
  event('message_stop', {});
  res.end();
};

const short = (s: string | undefined, n = 160): string =>
  (s ?? '').replace(/\s+/g, ' ').trim().slice(-n);

export const startScriptedModelServer = async (
  options: ScriptedModelServerOptions,
): Promise<ScriptedModelServer> => {
  const log = options.log ?? ((line: string) => console.warn(line));
  const requests: SeenRequest[] = [];
  const used: string[] = [];
  const consumed = new Set<ScriptTurn>();

  const answerConversation = (c: Conversation): { reply: ScriptBlock[]; seen: SeenRequest } => {
    const turn = options.script.find(
      (t) => (t.repeat === true || !consumed.has(t)) && matches(t.when, c),
    );
    const seen: SeenRequest = {
      kind: 'conversation',
      method: 'POST',
      path: '/v1/messages',
      answer: turn?.name ?? 'unmatched',
      firstUser: c.firstUser,
      lastUser: c.lastUser,
      lastReminders: c.lastReminders,
    };
    if (turn === undefined) {
      seen.report = reportOf(c, options.script, consumed);
      log(`[scripted-model] no scripted turn for a conversation request\n${seen.report}`);
      return { reply: [{ type: 'text', text: 'Nothing more to do.' }], seen };
    }
    consumed.add(turn);
    used.push(turn.name);
    return { reply: turn.reply, seen };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    const raw = await readBody(req);
    let body: Json = {};
    try {
      const parsed: unknown = raw === '' ? {} : JSON.parse(raw);
      if (isObj(parsed)) body = parsed;
    } catch {
      // Logged below as an unknown request; the CLI never sends non-JSON to the API.
    }
    if (options.dumpTo !== undefined)
      appendFileSync(options.dumpTo, `${JSON.stringify({ method, url: req.url, body })}\n`);
    if (method === 'POST' && path === '/v1/messages/count_tokens') {
      requests.push({ kind: 'count_tokens', method, path, answer: 'count' });
      return sendJson(res, 200, { input_tokens: 100 });
    }
    if (method !== 'POST' || path !== '/v1/messages') {
      requests.push({ kind: 'unknown', method, path, answer: 'empty' });
      log(`[scripted-model] unknown request ${method} ${req.url ?? ''} ${short(raw, 300)}`);
      return method === 'GET' || method === 'HEAD'
        ? sendJson(res, 200, {})
        : sendJson(res, 404, {
            type: 'error',
            error: { type: 'not_found_error', message: `no ${method} ${path} here` },
          });
    }
    const model = typeof body.model === 'string' ? body.model : 'claude-scripted';
    const conversation = conversationOf(body);
    const side = sideKind(body, conversation);
    let blocks: ScriptBlock[];
    if (side === 'other')
      log(`[scripted-model] side request of an unknown kind: ${short(systemText(body), 300)}`);
    if (side !== undefined) {
      const schema = outputSchema(body);
      // An empty answer is the harmless one: no title noise, no suggestion offered.
      blocks = [
        { type: 'text', text: schema !== undefined ? JSON.stringify(minimal(schema, '')) : '' },
      ];
      requests.push({
        kind: 'side',
        method,
        path,
        answer: 'side',
        sideKind: side,
        lastUser: conversation.lastUser,
      });
    } else {
      const r = answerConversation(conversation);
      blocks = r.reply;
      requests.push(r.seen);
      if (r.seen.answer === 'unmatched') options.onUnmatched?.(r.seen);
    }
    const message = messageOf({ model, blocks });
    if (body.stream === true) sendStream(res, message);
    else sendJson(res, 200, message);
  };

  const { port, close } = await serveLoopback(handle, (e, res) => {
    log(`[scripted-model] handler failed: ${String(e)}`);
    if (!res.headersSent)
      sendJson(res, 500, { type: 'error', error: { type: 'api_error', message: String(e) } });
    else res.end();
  });
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    used,
    unmatched: () => requests.filter((r) => r.kind === 'conversation' && r.answer === 'unmatched'),
    close,
  };
};
