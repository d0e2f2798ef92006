/**
 * Page shell: header (title, language switch), table of contents that follows the
 * reader, the chapter, and the footer. All view state lives in one ViewState that is
 * mirrored to the URL (history.replaceState); switching language re-renders the page.
 */
import type { QkScope } from '../../wasm/qkscope.js';
import { catalog, fill, type Catalog } from './i18n';
import { LANGS, type Lang, type StateContext, type ViewState, serializeState } from './model/state';
import { renderChapter1 } from './chapters/chapter1';
import { inline } from './chapters/rich';

/** Writes the state to the address bar without adding history entries. */
export function writeUrl(s: ViewState, ctx: StateContext): void {
  const qs = serializeState(s, ctx);
  const url = `${location.pathname}${qs ? `?${qs}` : ''}${location.hash}`;
  if (url !== `${location.pathname}${location.search}${location.hash}`) history.replaceState(null, '', url);
}

function header(cat: Catalog, lang: Lang, onLang: (l: Lang) => void): HTMLElement {
  const el = document.createElement('header');
  el.className = 'site-header';
  el.innerHTML = `
    <div class="site-brand">
      <span class="site-name">${cat.ui.siteName}</span>
      <span class="site-tagline">${cat.ui.siteTagline}</span>
    </div>`;
  const group = document.createElement('div');
  group.className = 'lang-switch';
  group.setAttribute('role', 'group');
  group.setAttribute('aria-label', cat.ui.langSwitch);
  group.dataset.testid = 'lang-switch';
  for (const l of LANGS) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = catalog(l).selfName;
    b.lang = catalog(l).htmlLang;
    b.dataset.testid = `lang-${l}`;
    b.setAttribute('aria-pressed', String(l === lang));
    b.addEventListener('click', () => onLang(l));
    group.append(b);
  }
  el.append(group);
  return el;
}

function tocNav(cat: Catalog, items: { id: string; title: string }[]): HTMLElement {
  const nav = document.createElement('nav');
  nav.className = 'toc';
  nav.dataset.testid = 'toc';
  nav.setAttribute('aria-labelledby', 'toc-title');
  nav.innerHTML = `<p class="toc-title" id="toc-title">${cat.ui.tocTitle}</p>
    <p class="toc-chapter">${cat.chapter1.kicker} · ${cat.chapter1.title}</p>
    <ol>${items.map((it) => `<li><a href="#${it.id}">${inline(it.title)}</a></li>`).join('')}</ol>`;
  return nav;
}

/** Marks the TOC entry of the section being read (aria-current). */
function followReader(nav: HTMLElement, ids: string[]): IntersectionObserver {
  const links = new Map(ids.map((id) => [id, nav.querySelector<HTMLAnchorElement>(`a[href="#${id}"]`)!]));
  const visible = new Set<string>();
  const obs = new IntersectionObserver(
    (entries) => {
      for (const e of entries) (e.isIntersecting ? visible.add(e.target.id) : visible.delete(e.target.id));
      const current = ids.find((id) => visible.has(id));
      if (!current) return;
      links.forEach((a, id) => (id === current ? a.setAttribute('aria-current', 'true') : a.removeAttribute('aria-current')));
    },
    { rootMargin: '-10% 0px -55% 0px' },
  );
  ids.forEach((id) => {
    const sec = document.getElementById(id);
    if (sec) obs.observe(sec);
  });
  return obs;
}

/** Renders the whole page into `root`; returns nothing, re-renders itself on language change. */
export function mountApp(root: HTMLElement, qk: QkScope, ctx: StateContext, initial: ViewState): void {
  let state = initial;
  let observer: IntersectionObserver | null = null;
  const render = (focusLang?: Lang) => {
    const cat = catalog(state.lang);
    document.documentElement.lang = cat.htmlLang;
    observer?.disconnect();
    const chapter = renderChapter1(qk, cat, ctx, state, (s) => {
      state = s;
      writeUrl(state, ctx);
    });
    document.title = fill(cat.ui.docTitle, { chapter: cat.chapter1.title });
    const skip = Object.assign(document.createElement('a'), { className: 'skip-link', href: '#main', textContent: cat.ui.skipLink });
    const nav = tocNav(cat, chapter.toc);
    const main = document.createElement('main');
    main.id = 'main';
    main.tabIndex = -1;
    main.append(chapter.el);
    const layout = document.createElement('div');
    layout.className = 'layout';
    layout.append(nav, main);
    const footer = document.createElement('footer');
    footer.className = 'site-footer';
    footer.textContent = `${cat.ui.footer} (${fill(cat.ui.coreVersion, { version: qk.version })})`;
    root.replaceChildren(
      skip,
      header(cat, state.lang, (l) => {
        if (l === state.lang) return;
        state = { ...state, lang: l };
        writeUrl(state, ctx);
        render(l);
      }),
      layout,
      footer,
    );
    observer = followReader(nav, chapter.toc.map((t) => t.id));
    if (focusLang) root.querySelector<HTMLButtonElement>(`[data-testid="lang-${focusLang}"]`)?.focus();
  };
  render();
}
