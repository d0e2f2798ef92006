/**
 * Entry point: loads the wasm core and the chapters (in parallel), reads the language from
 * the URL and mounts the page. The language is known before the core loads, so the loading
 * and error messages are already in the reader's language.
 */
import 'katex/dist/katex.min.css';
import './base.css';
import { loadQkScope } from '@qkscope/wasm';
import { LANGS, type Lang, catalog, fill } from './i18n';
import { CHAPTERS } from './chapters';
import { type LoadedChapter, mountApp } from './app';

function langFromUrl(): Lang {
  const l = new URLSearchParams(location.search).get('lang');
  return (LANGS as readonly string[]).includes(l ?? '') ? (l as Lang) : 'en';
}

function loadChapters(): Promise<LoadedChapter[]> {
  return Promise.all(
    CHAPTERS.map((load, index) =>
      load().then(
        (m): LoadedChapter => ({ ok: true, chapter: m.default }),
        (e: unknown): LoadedChapter => {
          console.error(e);
          return { ok: false, index, message: e instanceof Error ? e.message : String(e) };
        },
      ),
    ),
  );
}

async function main(): Promise<void> {
  const root = document.getElementById('app')!;
  const lang = langFromUrl();
  const cat = catalog(lang);
  document.documentElement.lang = cat.htmlLang;
  const status = root.querySelector<HTMLElement>('[data-testid="app-status"]');
  if (status) status.textContent = cat.ui.loading;
  try {
    const [qk, chapters] = await Promise.all([loadQkScope(), loadChapters()]);
    mountApp(root, qk, chapters, lang);
    root.dataset.ready = 'true';
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    const alert = document.createElement('p');
    alert.className = 'alert';
    alert.setAttribute('role', 'alert');
    alert.dataset.testid = 'load-error';
    alert.textContent = fill(cat.ui.loadFailed, { message });
    root.replaceChildren(alert);
    root.dataset.ready = 'error';
    throw e;
  }
}

void main();
