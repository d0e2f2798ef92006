/**
 * Page shell: header (title, language switch), a table of contents listing every chapter
 * and its sections (following the reader), all chapters of the registry in order as one
 * long article, and the footer. The shell builds each chapter's article from its catalog
 * (kicker, title, lede, sections) and then lets the chapter add its figures. View state
 * lives in the URL (chapters/shared/url.ts); switching language re-renders the page.
 */
import type { QkScope } from '@qkscope/wasm';
import { readerPlace, restorePlace } from './reader-place';
import { LANGS, type Lang, catalog, fill, type Catalog } from './i18n';
import type { FieldSpecs, ValuesOf } from './model/url-state';
import type { ArticleView, Chapter, ChapterContext } from './chapters/types';
import { Store } from './chapters/shared/store';
import { inline, rich } from './chapters/shared/rich';
import { h } from './chapters/shared/dom';
import { setParam } from './chapters/shared/url';
import './app.css';

/** A chapter module, or the reason it could not be loaded. */
export type LoadedChapter = { ok: true; chapter: Chapter<any> } | { ok: false; index: number; message: string };

function header(cat: Catalog, lang: Lang, onLang: (l: Lang) => void): HTMLElement {
  const el = h('header', { className: 'site-header' },
    h('div', { className: 'site-brand' },
      h('span', { className: 'site-name', textContent: cat.ui.siteName }),
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
  el.append(group);
  return el;
}

interface TocChapter {
  id: string;
  kicker: string;
  title: string;
  sections: { id: string; title: string }[];
}

function tocNav(cat: Catalog, chapters: TocChapter[]): HTMLElement {
  const nav = h('nav', { className: 'toc' });
  nav.dataset.testid = 'toc';
  nav.setAttribute('aria-labelledby', 'toc-title');
  const list = h('ol', { className: 'toc-chapters' });
  for (const c of chapters) {
    const li = h('li', { className: 'toc-ch' });
    li.dataset.chapter = c.id;
    const a = h('a', { href: `#${c.id}`, className: 'toc-ch-link' });
    a.innerHTML = `<span class="toc-kicker">${inline(c.kicker)}</span> ${inline(c.title)}`;
    const sub = h('ol', { className: 'toc-sections' });
    for (const s of c.sections) {
      const sa = h('a', { href: `#${s.id}` });
      sa.innerHTML = inline(s.title);
      sub.append(h('li', {}, sa));
    }
    li.append(a, sub);
    list.append(li);
  }
  nav.append(h('p', { className: 'toc-title', id: 'toc-title', textContent: cat.ui.tocTitle }), list);
  return nav;
}

/** Marks the TOC entry of the section being read (aria-current) and expands its chapter. */
function followReader(nav: HTMLElement, targets: { el: Element; chapter: string; section: string | null }[]): IntersectionObserver {
  const visible = new Set<Element>();
  const mark = (chapter: string, section: string | null) => {
    nav.querySelectorAll('.toc-ch').forEach((li) => li.classList.toggle('is-current', (li as HTMLElement).dataset.chapter === chapter));
    nav.querySelectorAll('a').forEach((a) => {
      const id = a.getAttribute('href')!.slice(1);
      if (id === (section ?? chapter)) a.setAttribute('aria-current', 'true');
      else a.removeAttribute('aria-current');
    });
  };
  const obs = new IntersectionObserver(
    (entries) => {
      for (const e of entries) (e.isIntersecting ? visible.add(e.target) : visible.delete(e.target));
      const current = targets.find((t) => visible.has(t.el));
      if (current) mark(current.chapter, current.section);
    },
    { rootMargin: '-10% 0px -55% 0px' },
  );
  targets.forEach((t) => obs.observe(t.el));
  if (targets[0]) mark(targets[0].chapter, null);
  return obs;
}

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

/** Renders the whole page into `root` and re-renders it on language change. */
export function mountApp(root: HTMLElement, qk: QkScope, chapters: LoadedChapter[], initialLang: Lang): void {
  let lang = initialLang;
  let observers: IntersectionObserver[] = [];

  const render = (focusLang?: Lang) => {
    const cat = catalog(lang);
    document.documentElement.lang = cat.htmlLang;
    document.title = cat.ui.docTitle;
    observers.forEach((o) => o.disconnect());
    observers = [];
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
    const pending = new Map<Element, (() => void)[]>();
    observers.push(lazy);

    const main = h('main', { id: 'main', tabIndex: -1 });
    const toc: TocChapter[] = [];
    const targets: { el: Element; chapter: string; section: string | null }[] = [];
    const seen = new Set<string>();
    for (const loaded of chapters) {
      if (!loaded.ok) {
        main.append(failure(cat, loaded.message));
        continue;
      }
      const ch = loaded.chapter;
      const t = ch.text[lang];
      for (const id of [t.id, ...t.sections.map((s: { id: string }) => s.id)]) {
        if (seen.has(id)) console.error(`duplicate anchor id '${id}' in chapter ${ch.id}: section ids must be unique on the page`);
        seen.add(id);
      }
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
      let view: ArticleView;
      try {
        view = buildArticle(t, ch.vars ? ch.vars(ctx) : {});
        ch.render(ctx, view);
      } catch (e) {
        console.error(e);
        view = buildArticle({ ...t, sections: [] }, {});
        view.el.append(failure(cat, e instanceof Error ? e.message : String(e)));
      }
      main.append(view.el);
      toc.push({ id: t.id, kicker: t.kicker, title: t.title, sections: t.sections });
      targets.push({ el: view.el.querySelector('.chapter-head')!, chapter: t.id, section: null });
      for (const s of t.sections) {
        const el = view.el.querySelector(`#${CSS.escape(s.id)}`);
        if (el) targets.push({ el, chapter: t.id, section: s.id });
      }
    }

    const nav = tocNav(cat, toc);
    const skip = h('a', { className: 'skip-link', href: '#main', textContent: cat.ui.skipLink });
    const footer = h('footer', { className: 'site-footer', textContent: `${cat.ui.footer} (${fill(cat.ui.coreVersion, { version: qk.version })})` });
    root.replaceChildren(
      skip,
      header(cat, lang, (l) => {
        if (l === lang) return;
        lang = l;
        setParam('lang', l === 'en' ? null : l);
        // Keep the reader where they were: the same block at the same height, not the top.
        const place = readerPlace(root);
        render(l);
        restorePlace(place);
      }),
      h('div', { className: 'layout' }, nav, main),
      footer,
    );
    observers.push(followReader(nav, targets));
    if (focusLang) root.querySelector<HTMLButtonElement>(`[data-testid="lang-${focusLang}"]`)?.focus({ preventScroll: true });
  };
  render();
  // The address may point into the page (#section): the content exists only now.
  if (location.hash.length > 1) document.getElementById(decodeURIComponent(location.hash.slice(1)))?.scrollIntoView();
}
