import type { BackgroundWork } from '@baton/protocol';

/** The two AHP chat actions on `backgroundWork`, plus any other chat action (left alone). */
export type BackgroundWorkAction =
  | { readonly type: 'chat/backgroundWorkSet'; readonly work: BackgroundWork }
  | { readonly type: 'chat/backgroundWorkRemoved'; readonly id: string }
  | { readonly type: string; readonly [key: string]: unknown };

/** Anything that has (or lacks) a `backgroundWork` list: an AHP ChatState, a Baton session view. */
export interface ChatWithBackgroundWork {
  readonly backgroundWork?: readonly { readonly id: string }[];
  readonly [key: string]: unknown;
}

type WorkOf<S> = S extends { readonly backgroundWork?: readonly (infer W)[] } ? W : never;

/**
 * AHP 1.0.0's chat reducer for `backgroundWork`: Set replaces an entry with the same id in place
 * or appends it; Removed deletes by id, returns the very same object when the id is absent (no
 * key is created) and leaves `[]` once the last entry goes — absent means "no inventory yet",
 * empty means "no active work". Kinds are never inspected, so a kind this reader does not know is
 * kept, replaced and removed like any other. Any other action leaves the state as it is.
 */
export function reduceBackgroundWork<
  S extends { readonly backgroundWork?: readonly { readonly id: string }[] },
>(chat: S, action: BackgroundWorkAction): S {
  if (action.type === 'chat/backgroundWorkSet') {
    const work = (action as unknown as { work: WorkOf<S> }).work;
    const list = (chat.backgroundWork ?? []) as readonly WorkOf<S>[];
    const at = list.findIndex((w) => w.id === work.id);
    return {
      ...chat,
      backgroundWork: at === -1 ? [...list, work] : list.map((w, i) => (i === at ? work : w)),
    };
  }
  if (action.type === 'chat/backgroundWorkRemoved') {
    const id = (action as { id: string }).id;
    const list = chat.backgroundWork;
    if (!list || !list.some((w) => w.id === id)) return chat;
    return { ...chat, backgroundWork: list.filter((w) => w.id !== id) };
  }
  return chat;
}

/** Baton's `possiblyFinished` is not AHP's: AHP clients get it as the `x-` extension. */
export function ahpWork(work: BackgroundWork): BackgroundWork {
  if (work.possiblyFinished === undefined) return work;
  const { possiblyFinished, ...rest } = work;
  return { ...rest, 'x-possiblyFinished': possiblyFinished } as BackgroundWork;
}
