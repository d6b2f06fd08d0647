import { ServerMessage, UPDATE_SCHEMAS, type Update } from '@baton/protocol';
import { BatonError } from './errors';

/**
 * A frame from the server, read: a message, an update of a type this client does not know (a
 * newer server's), or why it is neither.
 */
export type Incoming =
  | { readonly message: ServerMessage }
  | { readonly future: Update }
  | { readonly error: BatonError };

export function readFrame(text: string): Incoming {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { error: new BatonError('protocol', 'the server sent a frame that is not JSON') };
  }
  const parsed = ServerMessage.safeParse(json);
  if (parsed.success) return { message: parsed.data };
  const future = unknownUpdate(json);
  if (future) return { future };
  const issue = parsed.error.issues[0];
  return {
    error: new BatonError(
      'protocol',
      `invalid server message: ${issue?.message}`,
      issue?.path.join('.'),
    ),
  };
}

const KNOWN_UPDATE_TYPES: ReadonlySet<string> = new Set(
  UPDATE_SCHEMAS.map((s) => s.shape.type.value),
);

/**
 * An update of a type this client does not know (a newer server's): kept only for its seq, as
 * AHP clients ignore unknown actions. A known type that fails validation is not this: it is an
 * error, and the gap it leaves makes the subscription resync.
 */
function unknownUpdate(json: unknown): Update | null {
  const m = json as {
    type?: unknown;
    update?: { taskId?: unknown; seq?: unknown; type?: unknown };
  };
  const u = m?.update;
  if (m?.type !== 'update' || !u) return null;
  if (typeof u.taskId !== 'string' || typeof u.type !== 'string') return null;
  if (KNOWN_UPDATE_TYPES.has(u.type)) return null;
  if (typeof u.seq !== 'number' || !Number.isInteger(u.seq) || u.seq < 1) return null;
  return u as Update;
}
