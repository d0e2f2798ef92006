/**
 * Page shell: one app, one page per chapter (routes.ts: "#chN", old single-page anchors
 * open their chapter). Each page is the header (shell.ts), the table of contents, the
 * current chapter's article with previous/next links, and the footer; only the current
 * chapter is built, so the figures of the others cost nothing. The shell builds the
 * article from the chapter's catalog (kicker, title, lede, sections) and then lets the
 * chapter add its figures. View state lives in the URL query (chapters/shared/url.ts), the
 * page in its hash; switching language re-renders the page and keeps the reader's place.
 */
import type { QkScope } from '@qkscope/wasm';
import { type Place, keepPlace, readerPlace } from './reader-place';
import { focusTitle, snapshotFocus } from './focus-keep';
import { LANGS, type Lang, catalog, fill, type Catalog } from './i18n';
import type { FieldSpecs, ValuesOf } from './model/url-state';
import type { ArticleView, Chapter, ChapterContext } from './chapters/types';
import { Store } from './chapters/shared/store';
import { inline, rich } from './chapters/shared/rich';
import { h } from './chapters/shared/dom';
import { flushUrl, readQuery, setParam } from './chapters/shared/url';
import { type Route, type RouteTable, routeOf } from './routes';
import { type TocChapter, chapterNav, contentsDisclosure, followReader, relabelChapter, siteHeader, tocNav } from './shell';
import './app.css';
import './toc.css';

/** A chapter module, or the reason it could not be loaded. */
export type LoadedChapter = { ok: true; chapter: Chapter<any> } | { ok: false; index: number; message: string };

/** A registry entry as the page holds it: loaded (or failed), or still loading (null). */
type Slot = LoadedChapter | null;

/** Builds a chapter's article from its catalog: header, then one <section> per catalog section. */
function buildArticle(t: { id: string; kicker: string; title: string; lede: string; sections: { id: string; title: string; body: string }[] }, vars: Record<string, string>): ArticleView {
  const el = h('article', { className: 'chapter', id: t.id });
  el.dataset.testid = `chapter-${t.id}`;
  el.setAttribute('aria-labelledby', `${t.id}-title`);
  const h1 = h('h1', { id: `${t.id}-title` });
  h1.innerHTML = inline(t.title);
  h1.dataset.testid = 'chapter-title';
  el.append(h('header', { className: 'chapter-head' },
    h('p', { className: 'kicker', textContent: t.kicker }), h1, h('p', { className: 'lede', innerHTML: inline(t.lede) })));
  const sections = new Map<string, HTMLElement>();
  for (const s of t.sections) {
    const sec = h('section', { id: s.id });
    sec.dataset.testid = `section-${s.id}`;
    sec.setAttribute('aria-labelledby', `${s.id}-h`);
    sec.innerHTML = `<h2 id="${s.id}-h">${inline(s.title)}</h2><div class="prose">${rich(s.body, vars)}</div>`;
    el.append(sec);
    sections.set(s.id, sec);
  }
  return {
    el,
    section(id) {
      const sec = sections.get(id);
      if (!sec) throw new Error(`chapter ${t.id} has no section '${id}' (sections: ${[...sections.keys()].join(', ')})`);
      return sec;
    },
  };
}

function failure(cat: Catalog, message: string): HTMLElement {
  const p = h('p', { className: 'alert', textContent: fill(cat.ui.chapterFailed, { message }) });
  p.setAttribute('role', 'alert');
  p.dataset.testid = 'chapter-error';
  return p;
}

/**
 * The ids the router knows, per registry entry (a chapter that failed to load, or is still
 * loading, keeps its place as "chN"; its section anchors still find it by their "cN-" prefix).
 */
function routeTable(chapters: readonly Slot[]): RouteTable[] {
  return chapters.map((c, i) => (c?.ok
    ? { id: c.chapter.text.en.id, sections: c.chapter.text.en.sections.map((s: { id: string }) => s.id), ns: c.chapter.ns }
    : { id: `ch${i + 1}`, sections: [], ns: '' }));
}

function tocEntries(cat: Catalog, lang: Lang, chapters: readonly Slot[]): TocChapter[] {
  return chapters.map((c, i) => {
    if (!c) return { id: `ch${i + 1}`, kicker: fill(cat.ui.chapterKicker, { n: String(i + 1) }), title: cat.ui.chapterLoading, sections: [] };
    if (!c.ok) return { id: `ch${i + 1}`, kicker: '', title: fill(cat.ui.chapterMissing, { n: String(i + 1) }), sections: [] };
    const t = c.chapter.text[lang];
    return { id: t.id, kicker: t.kicker, title: t.title, sections: t.sections.map((s: { id: string; title: string }) => ({ id: s.id, title: s.title })) };
  });
}

const SUB: Record<string, string> = { a: 'ₐ', e: 'ₑ', h: 'ₕ', i: 'ᵢ', j: 'ⱼ', k: 'ₖ', l: 'ₗ', m: 'ₘ', n: 'ₙ', o: 'ₒ', p: 'ₚ', r: 'ᵣ', s: 'ₛ', t: 'ₜ', v: 'ᵥ', x: 'ₓ' };

/** A title's inline math as plain text, for the window title ("Why divide by √dₖ"). */
function plainText(title: string): string {
  return title.replace(/\$([^$]+)\$/g, (_, m: string) => m
    .replace(/\\sqrt\{([^}]*)\}/g, '√$1')
    .replace(/_\{?([a-z])\}?/g, (s, c: string) => SUB[c] ?? s)
    .replace(/\\[a-zA-Z]+\s*/g, '')
    .replace(/[{}]/g, ''));
}

const SCROLLERS = '.math-display, .table-scroll';

/** False for an element whose section the browser skips for now (content-visibility: auto; app.css does not set it now, see native/bench/NOTES.md). */
function laidOut(el: HTMLElement): boolean {
  return typeof el.checkVisibility !== 'function' || el.checkVisibility({ contentVisibilityAuto: true });
}

/**
 * Display formulas and tables wider than their box scroll sideways (on a phone): those boxes
 * (all of them, or the given ones) become named, keyboard-focusable groups, so they can be
 * scrolled without a pointer.
 */
function markScrollers(root: HTMLElement, cat: Catalog, boxes: Iterable<HTMLElement> = root.querySelectorAll<HTMLElement>(SCROLLERS)): void {
  // All reads first, then the writes: a read after a write would lay the page out again.
  // Boxes in a section not laid out yet (content-visibility: auto, app.css) are skipped:
  // measuring one would lay its section out; the ResizeObserver below measures it when its
  // section is first drawn.
  const measured = [...boxes].filter((m) => m.isConnected && laidOut(m)).map((m) => [m, m.scrollWidth > m.clientWidth + 1] as const);
  for (const [m, scrolls] of measured) {
    if (scrolls === m.hasAttribute('tabindex')) continue;
    if (scrolls) {
      m.tabIndex = 0;
      // A named group (not a region: a page of them would be landmarks with one name).
      m.setAttribute('role', 'group');
      m.setAttribute('aria-label', m.classList.contains('table-scroll') ? cat.ui.tableScroll : cat.ui.formulaScroll);
    } else {
      m.removeAttribute('tabindex');
      m.removeAttribute('role');
      m.removeAttribute('aria-label');
    }
  }
}

/**
 * The boxes a batch of mutations may have changed: those the mutated nodes sit in and those
 * added. A figure redrawn outside any box (a chart, a heatmap) yields none, so a dragged
 * slider costs no measuring (reading scrollWidth forces a layout of the page).
 */
function touchedScrollers(records: MutationRecord[], into: Set<HTMLElement>): void {
  for (const r of records) {
    const at = r.target instanceof Element ? r.target : r.target.parentElement;
    const box = at?.closest<HTMLElement>(SCROLLERS);
    if (box) into.add(box);
    for (const n of r.addedNodes) {
      if (!(n instanceof HTMLElement)) continue;
      if (n.matches(SCROLLERS)) into.add(n);
      n.querySelectorAll<HTMLElement>(SCROLLERS).forEach((b) => into.add(b));
    }
  }
}

/** Where the reader was on this history entry (saved while scrolling; restored on back, forward and reload). */
interface SavedPlace {
  scrollY: number;
  place: Place | null;
}

function savedPlace(): SavedPlace | null {
  const st = history.state as Partial<SavedPlace> | null;
  return typeof st?.scrollY === 'number' && Number.isFinite(st.scrollY) ? { scrollY: st.scrollY, place: st.place ?? null } : null;
}

function savePlace(root: HTMLElement): void {
  const saved: SavedPlace = { scrollY: Math.round(window.scrollY), place: readerPlace(root) };
  history.replaceState({ ...(history.state as object | null), ...saved }, '', location.href);
}

/**
 * Renders the current chapter's page into `root`; follows the hash and the language switch.
 * `chapters` has one entry per registry line: a loaded chapter, or the promise of one. The
 * page is built as soon as the current chapter is there; each chapter that arrives later
 * fills in its entry in the contents and its previous/next link, and is shown at once if the
 * reader went to its page meanwhile. When every chapter has arrived (or failed), `root` gets
 * data-chapters="all". The address must name the current chapter for certain
 * (routes.ts chapterOfAddress) unless every chapter is loaded. `want(i)` is called when the
 * reader goes to chapter i before it has arrived (the loader fetches it ahead of the others).
 */
export function mountApp(root: HTMLElement, qk: QkScope, chapters: readonly (LoadedChapter | Promise<LoadedChapter>)[], initialLang: Lang,
  want?: (index: number) => void): void {
  let lang = initialLang;
  const slots: Slot[] = chapters.map((c) => (c instanceof Promise ? null : c));
  let table = routeTable(slots);
  let route: Route = routeOf(location.hash, table, readQuery());
  let cleanup: (() => void)[] = [];
  if ('scrollRestoration' in history) history.scrollRestoration = 'manual';

  const render = () => {
    const cat = catalog(lang);
    document.documentElement.lang = cat.htmlLang;
    cleanup.forEach((fn) => fn());
    cleanup = [];
    const pending = new Map<Element, (() => void)[]>();
    const lazy = new IntersectionObserver(
      (entries) => {
        for (const e of entries) {
          if (!e.isIntersecting) continue;
          lazy.unobserve(e.target);
          const fns = pending.get(e.target) ?? [];
          pending.delete(e.target);
          fns.forEach((fn) => fn());
        }
      },
      { rootMargin: '400px 0px' },
    );
    cleanup.push(() => lazy.disconnect());

    const toc = tocEntries(cat, lang, slots);
    const index = route.chapter;
    const entry = toc[index]!;
    const loaded = slots[index]!;
    const main = h('main', { id: 'main', tabIndex: -1 });
    let view: ArticleView;
    if (!loaded) {
      // Reached before its module arrived (a link followed in the first moments): a status
      // line until it does (see the arrival handler below).
      const status = h('p', { className: 'app-status' });
      status.setAttribute('role', 'status');
      // Filled in once the live region is in the page, so screen readers announce it.
      requestAnimationFrame(() => { status.textContent = cat.ui.chapterLoading; });
      status.dataset.testid = 'chapter-loading';
      view = { el: h('article', { className: 'chapter', id: entry.id }, status), section: () => view.el };
    } else if (!loaded.ok) {
      view = { el: h('article', { className: 'chapter', id: entry.id }, failure(cat, loaded.message)), section: () => view.el };
    } else {
      const ch = loaded.chapter;
      const t = ch.text[lang];
      const ctx: ChapterContext<any> = {
        qk,
        lang,
        t,
        cat,
        state: <S extends FieldSpecs>(spec: S, normalize?: (v: ValuesOf<S>) => ValuesOf<S>) => new Store(ch.ns, spec, normalize),
        whenVisible: (el, fn) => {
          pending.set(el, [...(pending.get(el) ?? []), fn]);
          lazy.observe(el);
        },
      };
      try {
        view = buildArticle(t, ch.vars ? ch.vars(ctx) : {});
        ch.render(ctx, view);
      } catch (e) {
        console.error(e);
        view = buildArticle({ ...t, sections: [] }, {});
        view.el.append(failure(cat, e instanceof Error ? e.message : String(e)));
      }
    }
    main.append(view.el, chapterNav(cat, toc[index - 1] ?? null, toc[index + 1] ?? null));
    document.title = `${plainText(entry.title)} · ${cat.ui.docTitle}`;

    const nav = tocNav(cat, toc, entry.id);
    const skip = h('a', { className: 'skip-link', href: '#main', textContent: cat.ui.skipLink });
    skip.addEventListener('click', (e) => {
      // The hash is the page's address: move focus without changing it.
      e.preventDefault();
      main.focus();
    });
    const footer = h('footer', { className: 'site-footer', textContent: `${cat.ui.footer} (${fill(cat.ui.coreVersion, { version: qk.version })})` });
    const head = siteHeader(cat, lang, (l) => {
      if (l === lang) return;
      lang = l;
      setParam('lang', l === 'en' ? null : l);
      // Keep the reader where they were: the same block at the same height, not the top.
      const place = readerPlace(root);
      render();
      keepPlace(place, root.querySelector('main')!);
      root.querySelector<HTMLButtonElement>(`[data-testid="lang-${l}"]`)?.focus({ preventScroll: true });
    });
    root.replaceChildren(skip, head, h('div', { className: 'layout' }, nav, main), footer);
    cleanup.push(contentsDisclosure(head.querySelector<HTMLButtonElement>('.toc-toggle')!, nav));
    const tracker = followReader(nav, [...view.el.querySelectorAll(':scope > section')]);
    cleanup.push(() => tracker.disconnect());
    // Again for the boxes whose content changed or that were added (figures draw lazily or
    // on a change), whose own width changed (a scrollbar appeared, the window was resized),
    // and for all of them whenever web fonts (KaTeX's) have loaded.
    let queued = false;
    let everything = true;
    let fontsAsked = false;
    const touched = new Set<HTMLElement>();
    const watched = new WeakSet<HTMLElement>();
    const ro = typeof ResizeObserver === 'function' ? new ResizeObserver((entries) => mark(entries.map((e) => e.target as HTMLElement))) : null;
    const mark = (boxes?: HTMLElement[]) => {
      if (boxes) boxes.forEach((b) => touched.add(b));
      else everything = true;
      if (queued || (!everything && touched.size === 0)) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        if (!main.isConnected) return;
        const all = everything ? [...main.querySelectorAll<HTMLElement>(SCROLLERS)] : [...touched];
        everything = false;
        touched.clear();
        for (const b of all) if (ro && !watched.has(b)) (watched.add(b), ro.observe(b));
        markScrollers(main, cat, all);
        // Only now, after the measuring laid the page out: in Chromium, reading
        // document.fonts.ready forces a style and layout pass (one of ~200 ms on chapter
        // 1's first load when it was read while building the page).
        if (!fontsAsked) {
          fontsAsked = true;
          void document.fonts?.ready.then(() => mark());
        }
      });
    };
    mark();
    const mo = new MutationObserver((records) => {
      const boxes = new Set<HTMLElement>();
      touchedScrollers(records, boxes);
      if (boxes.size) mark([...boxes]);
    });
    mo.observe(main, { childList: true, subtree: true });
    const fontsLoaded = () => mark();
    document.fonts?.addEventListener?.('loadingdone', fontsLoaded);
    cleanup.push(() => {
      mo.disconnect();
      ro?.disconnect();
      document.fonts?.removeEventListener?.('loadingdone', fontsLoaded);
    });
  };

  /**
   * Scrolls to where the history entry (back, forward, reload) or the route says, and keeps
   * that block in place while the figures near it draw (they change the height above it).
   */
  const position = (fresh: boolean) => {
    const main = root.querySelector('main')!;
    const saved = savedPlace();
    const target = route.target ? document.getElementById(route.target) : null;
    if (saved) {
      window.scrollTo({ top: saved.scrollY, behavior: 'instant' });
      keepPlace(saved.place, main);
    } else if (target) {
      target.scrollIntoView({ block: 'start', behavior: 'instant' });
      keepPlace({ id: target.id, path: [], top: target.getBoundingClientRect().top }, main);
    } else if (fresh) {
      window.scrollTo({ top: 0, behavior: 'instant' });
    }
  };

  render();
  position(false);

  // The chapters still loading: each fills in its links on arrival, and its page if it is the one shown.
  let waiting = slots.filter((c) => c === null).length;
  if (waiting === 0) root.dataset.chapters = 'all';
  chapters.forEach((c, i) => {
    if (!(c instanceof Promise)) return;
    void c.then((arrived) => {
      slots[i] = arrived;
      table = routeTable(slots);
      if (route.chapter === i) {
        const restore = snapshotFocus(root);
        render();
        restore();
        position(true);
      } else {
        relabelChapter(root, tocEntries(catalog(lang), lang, slots)[i]!);
      }
      if (--waiting === 0) root.dataset.chapters = 'all';
    });
  });

  window.addEventListener('hashchange', () => {
    const next = routeOf(location.hash, table, readQuery());
    const fresh = next.chapter !== route.chapter;
    route = next;
    if (fresh) {
      if (slots[route.chapter] === null) want?.(route.chapter);
      render();
      focusTitle(root);
    }
    position(fresh);
  });
  // Save the place before a link changes the page, and while reading (debounced).
  // Not on a chapter's loading page: its place (the top) would replace the one saved on this
  // history entry, which the page is restored to when the chapter arrives.
  const shown = () => slots[route.chapter] !== null;
  document.addEventListener('click', (e) => {
    if (shown() && (e.target as Element | null)?.closest?.('a[href^="#"]')) {
      flushUrl();
      savePlace(root);
    }
  }, true);
  window.addEventListener('pagehide', flushUrl);
  let timer = 0;
  window.addEventListener('scroll', () => {
    clearTimeout(timer);
    timer = window.setTimeout(() => shown() && savePlace(root), 200);
  }, { passive: true });
  let resizeTimer = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = window.setTimeout(() => markScrollers(root, catalog(lang)), 200);
  });
}
