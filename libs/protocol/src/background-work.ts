import { z } from 'zod';
import { Id, IsoTime, Meta } from './common';

/**
 * AHP `BackgroundWork` (ChatState.backgroundWork, AHP 1.0.0): unfinished work that outlives the
 * tool call that started it. Every variant is loose: fields Baton does not model are kept, so a
 * client that knows more than we do loses nothing.
 */
const base = {
  id: Id,
  label: z.string().max(2_000),
  startedAt: IsoTime,
  _meta: Meta.optional(),
  /**
   * Baton's view only (never a dialect's): the agent said some work finished without saying
   * which, and this item could be it. Shown until an identified end or the execution's end; AHP
   * clients get it as `x-possiblyFinished`.
   */
  possiblyFinished: z.literal(true).optional(),
};

export const BackgroundShellWork = z.looseObject({
  ...base,
  kind: z.literal('shell'),
  command: z.string().max(20_000),
  terminal: z.string().max(2_000).optional(),
});

export const BackgroundSubagentWork = z.looseObject({
  ...base,
  kind: z.literal('subagent'),
  chat: z.string().max(2_000),
});

export const KNOWN_BACKGROUND_KINDS = ['shell', 'subagent'] as const;

/** AHP's union is non-exhaustive: a kind we do not know is kept, replaced and removed by id. */
export const UnknownBackgroundWork = z.looseObject({
  ...base,
  kind: z
    .string()
    .min(1)
    .max(100)
    .refine((k) => !(KNOWN_BACKGROUND_KINDS as readonly string[]).includes(k), {
      message: 'a known kind must match its own schema',
    }),
});

export const BackgroundWork = z.union([
  BackgroundShellWork,
  BackgroundSubagentWork,
  UnknownBackgroundWork,
]);
export type BackgroundWork = z.infer<typeof BackgroundWork>;
