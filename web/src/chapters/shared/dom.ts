/**
 * Tiny DOM helpers for chapters: build elements with properties and children (text is
 * always set as text, never parsed as markup), and tag them with test ids.
 */

/** document.createElement with properties and children. Strings become text nodes. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Partial<HTMLElementTagNameMap[K]> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const e = Object.assign(document.createElement(tag), props);
  e.append(...children);
  return e;
}

/** Sets data-testid and returns the element. */
export function testId<E extends HTMLElement | SVGElement>(e: E, id: string): E {
  e.dataset.testid = id;
  return e;
}

/** A live region for short announcements (screen readers), visually hidden. */
export function liveRegion(): HTMLElement {
  const e = h('p', { className: 'sr-only' });
  e.setAttribute('aria-live', 'polite');
  return e;
}

/** True when the reader asked for reduced motion. */
export function prefersReducedMotion(): boolean {
  return typeof matchMedia === 'function' && matchMedia('(prefers-reduced-motion: reduce)').matches;
}
