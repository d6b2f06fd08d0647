import { isRecord, type JsonRecord } from './json';

/** Which way a JSON-RPC message travelled between Baton (the ACP client) and the agent. */
export type Direction = 'agent->client' | 'client->agent';
export const DIRECTIONS: readonly Direction[] = ['agent->client', 'client->agent'];

/**
 * One raw JSON-RPC message as it crossed the wire, with the time the tap saw it. `message` is
 * whatever the line parsed to: dialects must cope with any JSON value.
 */
export interface Frame {
  direction: Direction;
  at: string;
  message: unknown;
}

export type JsonRpcKind = 'request' | 'notification' | 'response' | 'invalid';

export const classify = (message: unknown): JsonRpcKind => {
  if (!isRecord(message)) return 'invalid';
  const hasId =
    'id' in message && (typeof message.id === 'number' || typeof message.id === 'string');
  if (typeof message.method === 'string') return hasId ? 'request' : 'notification';
  if (hasId && ('result' in message || 'error' in message)) return 'response';
  return 'invalid';
};

/** Request ids may be numbers or strings; `1` and `"1"` are different requests. */
export const idKey = (message: JsonRecord): string => JSON.stringify(message.id);

/** Parses one NDJSON line. A line that is not JSON is still a frame: its message is the text. */
export const parseLine = (direction: Direction, line: string, at: string): Frame => {
  let message: unknown;
  try {
    message = JSON.parse(line);
  } catch {
    message = line;
  }
  return { direction, at, message };
};
