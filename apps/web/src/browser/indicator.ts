/** The activity indicator of a task or a session: a mark and a word, named for screen readers. */
import type { Indicator } from '../model';
import { h, setAttrs, setText } from './dom';

export function indicatorElement(extra = ''): HTMLSpanElement {
  return h(
    'span',
    { class: `ind ${extra}`.trim(), role: 'img' },
    h('span', { class: 'ind-mark', 'aria-hidden': 'true' }),
    h('span', { class: 'ind-text', 'aria-hidden': 'true' }),
  );
}

export function updateIndicator(el: HTMLElement, ind: Indicator): void {
  const base = el.classList.contains('task-activity') ? 'ind task-activity' : 'ind';
  setAttrs(el, {
    class: `${base} ind-${ind.activity}`,
    'aria-label': ind.label,
    title: ind.title,
    'data-activity': ind.activity,
  });
  setText(el.querySelector('.ind-text')!, ind.text);
  el.hidden = false;
}
