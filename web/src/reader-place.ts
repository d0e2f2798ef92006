/**
 * The reader's place on the page, kept across a re-render (the language switch): the block
 * at the top of the viewport, named by the nearest ancestor with an id (a section, figure or
 * chapter; the same in every language) and the path of child indices below it, with its
 * distance from the top of the viewport. Both languages build the same blocks, so the path
 * finds the same paragraph or figure after the switch; when it does not, the ancestor is used.
 */

export interface Place {
  id: string;
  path: number[];
  top: number;
}

/** The block under a line just below the top of the viewport (below a sticky header). */
export function readerPlace(root: HTMLElement): Place | null {
  if (window.scrollY < 1) return null;
  const line = Math.max(0, root.querySelector('.site-header')?.getBoundingClientRect().bottom ?? 0) + 16;
  const x = Math.min(window.innerWidth - 1, Math.max(0, (root.querySelector('main')?.getBoundingClientRect().left ?? 0) + 24));
  let el = document.elementFromPoint(x, line);
  if (!el || !root.contains(el)) return null;
  const path: number[] = [];
  while (el && el !== root && !(el.id && el.closest('main'))) {
    const parent: Element | null = el.parentElement;
    if (!parent) return null;
    path.unshift(Array.prototype.indexOf.call(parent.children, el));
    el = parent;
  }
  if (!el || el === root || !el.id) return null;
  const target = resolve(el, path);
  return { id: el.id, path, top: target.getBoundingClientRect().top };
}

function resolve(base: Element, path: number[]): Element {
  let el = base;
  for (const k of path) {
    const next = el.children[k];
    if (!next) break;
    el = next;
  }
  return el;
}

/** Scrolls so that the block of `place` is again `place.top` pixels below the top of the viewport. */
export function restorePlace(place: Place | null): void {
  if (!place) return;
  const base = document.getElementById(place.id);
  if (!base) return;
  const el = resolve(base, place.path);
  window.scrollTo({ top: window.scrollY + el.getBoundingClientRect().top - place.top, behavior: 'instant' });
}
