// What every scripted model server (Anthropic's Messages API; OpenAI's Responses and Chat
// Completions APIs through scripted-script.ts) shares: its contract with a test, and serving on a
// free loopback port.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A scripted model server as a test holds it; `Seen` is what it records of a request. */
export interface ScriptedServer<Seen> {
  /** The base URL the agent's model provider is pointed at. */
  url: string;
  /** Every request in arrival order, with how it was answered. */
  readonly requests: Seen[];
  /** Names of the scripted turns used so far, in order. */
  readonly used: string[];
  /** Conversation requests no scripted turn matched. */
  unmatched(): Seen[];
  close(): Promise<void>;
}

export interface ScriptedServerOptions<Turn, Seen> {
  script: Turn[];
  /** Where unknown and unmatched requests are reported; the test output by default. */
  log?: (line: string) => void;
  /**
   * Called at once for a conversation request no turn matched, with a report of what the request
   * held: a scenario can fail right there instead of waiting for a state that will never come.
   */
  onUnmatched?: (request: Seen) => void;
  /** Appends every request (path and parsed body) to this JSONL file: what the CLI sent. */
  dumpTo?: string;
}

/**
 * Serves `handle` on a free loopback port; a handler that throws is answered by `failed`. Its
 * port, and a close that ends the connections still open (agents keep theirs alive).
 */
export async function serveLoopback(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  failed: (e: unknown, res: ServerResponse) => void,
): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => failed(e, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A request's whole body, as text. */
export const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });

/**
 * A spec's scripted server, one per test: started before each from `options` (with a log kept in
 * `logged`, emptied for each test), closed after. `restart` replaces it, within a test, by one
 * started from other options (the same log).
 */
export const serverPerTest = <
  O extends { log?: (line: string) => void },
  S extends { close(): Promise<void> },
>(
  start: (options: O) => Promise<S>,
  options: Omit<O, 'log'>,
) => {
  const logged: string[] = [];
  const log = (line: string): void => {
    logged.push(line);
  };
  // A spread of a generic type is not known to be that type again (TypeScript cannot tell).
  const withLog = (o: Omit<O, 'log'>) => ({ ...o, log }) as unknown as O;
  let current: S | undefined;
  beforeEach(async () => {
    logged.length = 0;
    current = await start(withLog(options));
  });
  afterEach(() => current?.close());
  return {
    logged,
    get server(): S {
      if (current === undefined) throw new Error('the scripted server runs only within a test');
      return current;
    },
    async restart(other: Omit<O, 'log'>): Promise<void> {
      await current?.close();
      current = await start(withLog(other));
    },
  };
};

/** The events of an SSE body (Messages, Responses), checking each `event:` name is its data's type. */
export const sseEvents = async (res: Response): Promise<Record<string, unknown>[]> =>
  (await res.text())
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const name = /^event: (.+)$/m.exec(block)?.[1];
      const data = JSON.parse(/^data: (.+)$/m.exec(block)![1]!) as Record<string, unknown>;
      expect(data.type).toBe(name);
      return data;
    });
