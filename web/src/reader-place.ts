/**
 * The reader's place on the page, kept across a re-render (the language switch): the block
 * at the top of the viewport, named by the nearest ancestor with an id (a section, figure or
 * chapter; the same in every language) and the path of child indices below it, with its
 * distance from the top of the viewport (the smallest block at that line: a paragraph, a
 * formula, a figure). Both languages build the same blocks, so the path
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
  let el: Element | null = document.elementFromPoint(x, line);
  if (!el || !root.contains(el)) return null;
  // Inline content (text, math) differs between the languages: use the block that holds it.
  while (el.parentElement && el.parentElement !== root && getComputedStyle(el).display.startsWith('inline')) el = el.parentElement;
  // Between two paragraphs the point hits their container: go down to the block at the line.
  for (;;) {
    const kids: Element[] = [...el.children];
    if (kids.length === 0 || kids.some((k) => getComputedStyle(k).display.startsWith('inline'))) break;
    const next: Element | undefined = kids.find((k) => k.getBoundingClientRect().bottom > line);
    if (!next) break;
    el = next;
  }
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

/**
 * Restores `place` now and again whenever `watch` changes size during the next `ms`
 * milliseconds: figures drawn after the re-render (lazily, near the viewport, some after a
 * computation) change the height of what is above the place. Stops early when the reader
 * scrolls (by wheel, touch, keys or the scrollbar: any scroll that is not ours).
 */
export function keepPlace(place: Place | null, watch: Element, ms = 4000): void {
  if (!place) return;
  let ours = window.scrollY;
  const restore = () => {
    restorePlace(place);
    ours = window.scrollY;
  };
  restore();
  const ro = new ResizeObserver(restore);
  const onScroll = () => {
    if (Math.abs(window.scrollY - ours) <= 1) return;
    // A scroll that left the block within a few pixels of its place is the browser's scroll
    // anchoring (a section above was laid out, content-visibility: auto), not the reader:
    // snap back exactly and go on keeping the place.
    const base = document.getElementById(place.id);
    if (base && Math.abs(resolve(base, place.path).getBoundingClientRect().top - place.top) <= 8) restore();
    else stop();
  };
  const inputs = ['wheel', 'touchstart', 'keydown'] as const;
  const stop = () => {
    ro.disconnect();
    window.removeEventListener('scroll', onScroll);
    for (const ev of inputs) window.removeEventListener(ev, stop);
  };
  ro.observe(watch);
  window.addEventListener('scroll', onScroll, { passive: true });
  for (const ev of inputs) window.addEventListener(ev, stop, { passive: true, once: true });
  setTimeout(stop, ms);
}
