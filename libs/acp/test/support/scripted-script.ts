import { appendFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { waitForFile } from './real-session';
import {
  readBody,
  serveLoopback,
  type ScriptedServer as ScriptedServerOf,
  type ScriptedServerOptions as ScriptedServerOptionsOf,
} from './scripted-server';

/**
 * What the scripted OpenAI-style model servers (Responses API, Chat Completions) share: a script
 * of turns matched by what the conversation holds, the request log, the JSONL dump, a 404 for
 * anything that is not a model call, and the loopback listener. Each server only says how its wire
 * format reads a conversation and how it streams a reply.
 */

/** A reply item: assistant text, or a call of one of the agent's tools. */
export type ScriptedItem =
  | { type: 'message'; text: string }
  | {
      type: 'function_call';
      name: string;
      /** Responses API only: namespaced tools such as Codex's `multi_agent_v1`. */
      namespace?: string;
      arguments: Record<string, unknown>;
    };

/** A reply of assistant text only. */
export const say = (text: string): ScriptedItem[] => [{ type: 'message', text }];

/** The task a parent gives its subagent; the child's conversation starts with it. */
export const CHILD_TASK = 'CHILD-TASK: run one command and report';

/**
 * A subagent's turns, the same whatever agent spawns it: the parent's `spawn` call on RUN-AGENT
 * (its task CHILD_TASK), and the child's own: one command, held until `release-agent` exists,
 * run with `shell` (the agent's `shellTool`), then its report. The child's come first: its
 * conversation holds the parent's words too.
 */
export const subagentTurns = (
  shell: (command: string) => ScriptedItem,
  shellTool: string,
  spawn: ScriptedItem,
): ScriptedTurn[] => [
  {
    name: 'child: command',
    when: { first: 'CHILD-TASK', last: 'CHILD-TASK' },
    reply: [shell(`${waitForFile('release-agent')}; echo child`)],
  },
  {
    name: 'child: report',
    when: { first: 'CHILD-TASK', afterTool: shellTool },
    reply: say('Child work done.'),
  },
  { name: 'spawn child', when: { last: 'RUN-AGENT' }, reply: [spawn] },
];

export interface ScriptedMatch {
  /** In the conversation's first own user message: a child's conversation starts with its task. */
  first?: string;
  /** In the last input item (a message's text or a tool output). */
  last?: string;
  /** The model's last tool call was of this name and its output is in the input. */
  afterTool?: string;
  /** In the system prompt: tells an agent's side calls (titles, memory) from its turns. */
  system?: string;
}

export interface SeenRequest {
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

export interface ScriptedTurn {
  name: string;
  when: ScriptedMatch;
  /** The items to answer with; a function can read the request (e.g. an agent id from an output). */
  reply: ScriptedItem[] | ((request: SeenRequest) => ScriptedItem[]);
  /** Answer every matching request, not only the first. */
  repeat?: boolean;
}

/** What a server's wire format says of a conversation. */
export interface Conversation {
  firstUser: string;
  lastText: string;
  system?: string;
  lastTool?: string;
  lastToolOutput?: string;
}

/** The base URL ends in `/v1`. */
export type ScriptedServer = ScriptedServerOf<SeenRequest>;
export type ScriptedServerOptions = ScriptedServerOptionsOf<ScriptedTurn, SeenRequest>;

/** How one wire format is served. */
export interface WireFormat {
  /** Prefix of log lines. */
  name: string;
  /** What a model call of this format is called, for the log (`Responses`). */
  request: string;
  /** The request's conversation, or undefined when it is not a model call of this format. */
  read(method: string, path: string, body: unknown): Conversation | undefined;
  /** Writes the reply (`body` is the request's, e.g. to tell streaming from not). */
  respond(res: ServerResponse, items: ScriptedItem[], body: unknown): void;
}

export const matches = (w: ScriptedMatch, c: Conversation): boolean =>
  (w.first === undefined || c.firstUser.includes(w.first)) &&
  (w.last === undefined || c.lastText.includes(w.last)) &&
  (w.afterTool === undefined || c.lastTool === w.afterTool) &&
  (w.system === undefined || (c.system ?? '').includes(w.system));

export const startScriptedServer = async (
  format: WireFormat,
  options: ScriptedServerOptions,
): Promise<ScriptedServer> => {
  const log = options.log ?? ((line: string) => console.warn(`[${format.name}] ${line}`));
  const requests: SeenRequest[] = [];
  const used: string[] = [];
  const consumed = new Set<ScriptedTurn>();

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
    const c = format.read(method, path, json);
    if (c === undefined) {
      requests.push({ method, path, answer: 'not found' });
      log(`${method} ${path}: answered 404 (not a ${format.request} request)`);
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ error: { message: 'not scripted', type: 'invalid_request_error' } }),
      );
      return;
    }
    const seen: SeenRequest = {
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
        `unmatched: first=${JSON.stringify(c.firstUser.slice(0, 200))} last=${JSON.stringify(c.lastText.slice(0, 300))} afterTool=${c.lastTool ?? '-'} system=${JSON.stringify((c.system ?? '').slice(0, 80))}`,
      );
      options.onUnmatched?.(seen);
      format.respond(res, [{ type: 'message', text: 'No scripted turn for this request.' }], json);
      return;
    }
    consumed.add(turn);
    used.push(turn.name);
    seen.answer = turn.name;
    format.respond(res, typeof turn.reply === 'function' ? turn.reply(seen) : turn.reply, json);
  };

  const { port, close } = await serveLoopback(handle, (e, res) => {
    log(`error: ${String(e)}`);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  });
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    used,
    unmatched: () => requests.filter((r) => r.answer === 'unmatched'),
    close,
  };
};

/** `script` with each `WORK/` in its replies pointing into `work`, the agent's work folder. */
export const scriptInWorkFolder = (script: ScriptedTurn[], work: string): ScriptedTurn[] =>
  script.map((t) => ({
    ...t,
    reply: JSON.parse(JSON.stringify(t.reply).replaceAll('WORK/', `${work}/`)) as ScriptedItem[],
  }));
