import { MAX_PROMPT_CHARS } from '@baton/protocol';
import type { z } from 'zod';
import { WireFailure } from '../errors';

/** Parses a request body or path parameter, naming the field and rule of the first failure. */
export function parse<S extends z.ZodType>(schema: S, value: unknown, where = ''): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  // An unknown key is named first: it says most plainly what is wrong with the request.
  const i = r.error.issues.find((x) => x.code === 'unrecognized_keys') ?? r.error.issues[0]!;
  const path = [where, ...i.path.map(String)].filter(Boolean).join('.') || '(root)';
  if (path === 'text' && i.code === 'too_big') {
    const n =
      typeof (value as { text?: unknown })?.text === 'string'
        ? (value as { text: string }).text.length
        : 0;
    throw new WireFailure(
      'prompt_too_long',
      `text: the prompt has ${n} characters, the limit is ${MAX_PROMPT_CHARS}`,
      path,
    );
  }
  throw new WireFailure('invalid_message', `${path}: ${i.message}`, path);
}
