import type { BackgroundWork } from '@baton/protocol';

/** The two AHP chat actions on `backgroundWork` (server-only). */
export type BackgroundWorkAction =
  | { readonly type: 'chat/backgroundWorkSet'; readonly work: BackgroundWork }
  | { readonly type: 'chat/backgroundWorkRemoved'; readonly id: string }
  | { readonly type: string; readonly [key: string]: unknown };

export interface ChatWithBackgroundWork {
  readonly backgroundWork?: readonly BackgroundWork[];
  readonly [key: string]: unknown;
}

/**
 * AHP 1.0.0 chat reducer for `backgroundWork`: Set appends a new id at the end and replaces an
 * existing one in place; Removed of an absent id returns the same state object (no key is
 * created); removing the last entry leaves `[]` — missing means "no inventory yet", empty means
 * "no active work". Kinds are not inspected, so unknown kinds are kept, replaced and removed by
 * id. Any other action leaves the state as it is.
 */
export function reduceBackgroundWork<S extends ChatWithBackgroundWork>(
  state: S,
  action: BackgroundWorkAction,
): S {
  if (action.type === 'chat/backgroundWorkSet') {
    const work = (action as { work: BackgroundWork }).work;
    const list = state.backgroundWork ?? [];
    const index = list.findIndex((w) => w.id === work.id);
    const next = index === -1 ? [...list, work] : list.map((w, i) => (i === index ? work : w));
    return { ...state, backgroundWork: next };
  }
  if (action.type === 'chat/backgroundWorkRemoved') {
    const id = (action as { id: string }).id;
    const list = state.backgroundWork;
    if (!list || !list.some((w) => w.id === id)) return state;
    return { ...state, backgroundWork: list.filter((w) => w.id !== id) };
  }
  return state;
}
