/**
 * The parts of the page around a chapter: the compact sticky header (title, language switch,
 * the contents button), the table of contents (a sidebar on wide screens; on narrower ones a
 * disclosure panel under the header, opened by the contents button), the section tracker that
 * marks the section being read, and the previous/next links at the end of a chapter.
 */
import { LANGS, type Lang, catalog, type Catalog } from './i18n';
import { inline } from './chapters/shared/rich';
import { h } from './chapters/shared/dom';

/** A chapter as the table of contents lists it. */
export interface TocChapter {
  id: string;
  kicker: string;
  title: string;
  sections: { id: string; title: string }[];
}

/** A chapter's kicker and title as the contents and the previous/next links show them. */
function chapterLabel(c: TocChapter): string {
  return `<span class="toc-kicker">${inline(c.kicker)}</span> ${inline(c.title)}`;
}

/**
 * Writes a chapter's label into every link to it that shows one (the contents entry, a
 * previous/next link): used when a chapter that was still loading as the page was built
 * arrives, so only those few links change.
 */
export function relabelChapter(root: ParentNode, c: TocChapter): void {
  root.querySelectorAll<HTMLElement>(`[data-chapter-label="${c.id}"]`).forEach((el) => {
    el.innerHTML = chapterLabel(c);
  });
}

const TOC_ID = 'toc';

/** The header: site name, language switch and (below the sidebar breakpoint) the contents button. */
export function siteHeader(cat: Catalog, lang: Lang, onLang: (l: Lang) => void): HTMLElement {
  const el = h('header', { className: 'site-header' },
    h('div', { className: 'site-brand' },
      h('a', { className: 'site-name', href: '#ch1', textContent: cat.ui.siteName }),
      h('span', { className: 'site-tagline', textContent: cat.ui.siteTagline })));
  const group = h('div', { className: 'lang-switch' });
  group.setAttribute('role', 'group');
  group.setAttribute('aria-label', cat.ui.langSwitch);
  group.dataset.testid = 'lang-switch';
  for (const l of LANGS) {
    const b = h('button', { type: 'button', textContent: catalog(l).selfName, lang: catalog(l).htmlLang });
    b.dataset.testid = `lang-${l}`;
    b.setAttribute('aria-pressed', String(l === lang));
    b.addEventListener('click', () => onLang(l));
    group.append(b);
  }
  const toggle = h('button', { type: 'button', className: 'toc-toggle' },
    h('span', { className: 'toc-toggle-icon', textContent: '☰' }), h('span', { textContent: cat.ui.tocTitle }));
  toggle.firstElementChild!.setAttribute('aria-hidden', 'true');
  toggle.dataset.testid = 'toc-toggle';
  toggle.setAttribute('aria-expanded', 'false');
  toggle.setAttribute('aria-controls', TOC_ID);
  el.append(h('div', { className: 'site-tools' }, group, toggle));
  return el;
}

/** The table of contents: every chapter, and the sections of the current one. */
export function tocNav(cat: Catalog, chapters: TocChapter[], current: string): HTMLElement {
  const nav = h('nav', { className: 'toc', id: TOC_ID });
  nav.dataset.testid = 'toc';
  nav.setAttribute('aria-labelledby', 'toc-title');
  const list = h('ol', { className: 'toc-chapters' });
  for (const c of chapters) {
    const li = h('li', { className: c.id === current ? 'toc-ch is-current' : 'toc-ch' });
    li.dataset.chapter = c.id;
    const a = h('a', { href: `#${c.id}`, className: 'toc-ch-link' });
    a.innerHTML = chapterLabel(c);
    a.dataset.chapterLabel = c.id;
    if (c.id === current) a.setAttribute('aria-current', 'page');
    li.append(a);
    if (c.id === current && c.sections.length) {
      const sub = h('ol', { className: 'toc-sections' });
      for (const s of c.sections) {
        const sa = h('a', { href: `#${s.id}` });
        sa.innerHTML = inline(s.title);
        sub.append(h('li', {}, sa));
      }
      li.append(sub);
    }
    list.append(li);
  }
  nav.append(h('p', { className: 'toc-title', id: 'toc-title', textContent: cat.ui.tocTitle }), list);
  return nav;
}

/**
 * Makes the contents button a disclosure for the table of contents: it opens and closes the
 * panel (aria-expanded), Escape closes it and returns focus to the button, and following a
 * link, clicking outside or moving focus past it closes it. Returns a function that removes the document listeners.
 */
export function contentsDisclosure(toggle: HTMLButtonElement, nav: HTMLElement): () => void {
  const set = (open: boolean) => {
    toggle.setAttribute('aria-expanded', String(open));
    nav.classList.toggle('is-open', open);
  };
  toggle.addEventListener('click', () => set(toggle.getAttribute('aria-expanded') !== 'true'));
  nav.addEventListener('click', (e) => {
    if ((e.target as Element).closest('a')) set(false);
  });
  const onKey = (e: KeyboardEvent) => {
    if (e.key !== 'Escape' || toggle.getAttribute('aria-expanded') !== 'true') return;
    set(false);
    toggle.focus();
  };
  const onPointer = (e: PointerEvent) => {
    const t = e.target as Node;
    if (toggle.getAttribute('aria-expanded') === 'true' && !nav.contains(t) && !toggle.contains(t)) set(false);
  };
  // Tabbing past the last entry would put focus under the panel: it closes instead.
  const onFocus = (e: FocusEvent) => {
    const t = e.target as Element;
    if (toggle.getAttribute('aria-expanded') === 'true' && !nav.contains(t) && !t.closest?.('.site-header')) set(false);
  };
  document.addEventListener('keydown', onKey);
  document.addEventListener('pointerdown', onPointer);
  document.addEventListener('focusin', onFocus);
  return () => {
    document.removeEventListener('keydown', onKey);
    document.removeEventListener('pointerdown', onPointer);
    document.removeEventListener('focusin', onFocus);
  };
}

/** Marks the table-of-contents entry of the section being read (aria-current). */
export function followReader(nav: HTMLElement, sections: Element[]): IntersectionObserver {
  const visible = new Set<Element>();
  const mark = (id: string | null) => {
    nav.querySelectorAll('.toc-sections a').forEach((a) => {
      if (id !== null && a.getAttribute('href') === `#${id}`) a.setAttribute('aria-current', 'true');
      else a.removeAttribute('aria-current');
    });
  };
  const obs = new IntersectionObserver(
    (entries) => {
      for (const e of entries) (e.isIntersecting ? visible.add(e.target) : visible.delete(e.target));
      const first = sections.find((s) => visible.has(s));
      if (first) mark(first.id);
    },
    { rootMargin: '-10% 0px -55% 0px' },
  );
  sections.forEach((s) => obs.observe(s));
  return obs;
}

/** "Previous" and "Next" links to the neighbouring chapter pages. */
export function chapterNav(cat: Catalog, prev: TocChapter | null, next: TocChapter | null): HTMLElement {
  const nav = h('nav', { className: 'chapter-nav' });
  nav.setAttribute('aria-label', cat.ui.chapterNav);
  nav.dataset.testid = 'chapter-nav';
  const link = (c: TocChapter, rel: 'prev' | 'next') => {
    const a = h('a', { href: `#${c.id}`, className: `chapter-nav-${rel}` });
    a.rel = rel;
    a.dataset.testid = `chapter-${rel}`;
    a.innerHTML = `<span class="chapter-nav-dir">${rel === 'prev' ? `← ${cat.ui.prevChapter}` : `${cat.ui.nextChapter} →`}</span>` +
      `<span class="chapter-nav-title" data-chapter-label="${c.id}">${chapterLabel(c)}</span>`;
    return a;
  };
  if (prev) nav.append(link(prev, 'prev'));
  if (next) nav.append(link(next, 'next'));
  return nav;
}
