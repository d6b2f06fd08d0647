/**
 * The page's whole "framework": build elements, and keep a list of them in step with data by key,
 * updating nodes in place so focus, selection and text being typed survive live updates.
 */

type Attrs = Record<string, string | number | boolean | null | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Array<Node | string>
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  el.append(...children);
  return el;
}

/** Sets or removes attributes: `false`, `null` and `undefined` remove, `true` sets it empty. */
export function setAttrs(el: Element, attrs: Attrs): void {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) {
      if (el.hasAttribute(name)) el.removeAttribute(name);
    } else {
      const v = value === true ? '' : String(value);
      if (el.getAttribute(name) !== v) el.setAttribute(name, v);
    }
  }
}

/** Sets text only when it changed (no needless mutations for screen readers and observers). */
export function setText(el: Element, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page lacks #${id}`);
  return el as T;
}

/**
 * Makes `container`'s children match `items` in order: one element per key, created once by
 * `create` and refreshed by `update` on every call; elements whose key is gone are removed.
 */
export function syncList<T, E extends HTMLElement>(
  container: HTMLElement,
  items: readonly T[],
  keyOf: (item: T) => string,
  create: (item: T) => E,
  update: (el: E, item: T, index: number) => void,
): void {
  const existing = new Map<string, E>();
  for (const child of Array.from(container.children)) {
    const key = (child as HTMLElement).dataset.key;
    if (key !== undefined) existing.set(key, child as E);
  }
  const wanted = new Set<string>();
  items.forEach((item, index) => {
    const key = keyOf(item);
    wanted.add(key);
    let el = existing.get(key);
    if (!el) {
      el = create(item);
      el.dataset.key = key;
    }
    update(el, item, index);
    const at = container.children[index];
    if (at !== el) container.insertBefore(el, at ?? null);
  });
  for (const [key, el] of existing) if (!wanted.has(key)) el.remove();
}
