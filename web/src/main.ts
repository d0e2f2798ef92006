/**
 * Entry point: loads the wasm core and the chapter the address names (in parallel), reads
 * the language from the URL and mounts the page; the other chapters load after its first
 * frame (mountApp fills in their links as they arrive). An address that does not name its
 * chapter for certain (a section anchor, a query-only link) waits for all of them. The
 * language is known before the core loads, so the loading and error messages are already in
 * the reader's language.
 */
import 'katex/dist/katex.min.css';
import './base.css';
import { loadQkScope } from '@qkscope/wasm';
import { LANGS, type Lang, catalog, fill } from './i18n';
import { CHAPTERS } from './chapters';
import { type LoadedChapter, mountApp } from './app';
import { chapterOfAddress } from './routes';

function langFromUrl(): Lang {
  const l = new URLSearchParams(location.search).get('lang');
  return (LANGS as readonly string[]).includes(l ?? '') ? (l as Lang) : 'en';
}

function loadChapter(index: number): Promise<LoadedChapter> {
  return CHAPTERS[index]!().then(
    (m): LoadedChapter => ({ ok: true, chapter: m.default }),
    (e: unknown): LoadedChapter => {
      console.error(e);
      return { ok: false, index, message: e instanceof Error ? e.message : String(e) };
    },
  );
}

/**
 * Resolves after the page's first frame (the chapters not shown are fetched and parsed then,
 * not while the shown one is built), or after a second in a tab that draws no frames.
 */
function afterFirstFrame(): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, 1000);
    requestAnimationFrame(() => setTimeout(() => {
      clearTimeout(timer);
      resolve();
    }));
  });
}

/** How long the background queue waits for one chapter before it starts the next. */
const QUEUE_WAIT_MS = 4000;
const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const root = document.getElementById('app')!;
  const lang = langFromUrl();
  const cat = catalog(lang);
  document.documentElement.lang = cat.htmlLang;
  const status = root.querySelector<HTMLElement>('[data-testid="app-status"]');
  if (status) status.textContent = cat.ui.loading;
  try {
    const core = loadQkScope(); // first: the chapter imports below queue their own requests
    const first = chapterOfAddress(location.hash, CHAPTERS.length, new URLSearchParams(location.search));
    // Each chapter is imported once, by whichever asks first: the background queue, or the
    // reader going to its page (mountApp's `want`), which must not wait behind the others.
    const arrive: ((c: LoadedChapter) => void)[] = [];
    const arrivals = CHAPTERS.map(() => new Promise<LoadedChapter>((resolve) => arrive.push(resolve)));
    const started = new Set<number>();
    const get = (i: number): Promise<LoadedChapter> => {
      if (!started.has(i)) {
        started.add(i);
        void loadChapter(i).then(arrive[i]!);
      }
      return arrivals[i]!;
    };
    const now = CHAPTERS.map((_, i) => (first === null || i === first ? get(i) : null));
    const [qk, loaded] = await Promise.all([core, Promise.all(now)]);
    // The others one after another, so each chapter's module is evaluated in a task of its
    // own; one that stalls holds the queue for at most QUEUE_WAIT_MS.
    let queue: Promise<unknown> = afterFirstFrame();
    loaded.forEach((c, i) => {
      if (!c) queue = queue.then(() => Promise.race([get(i), delay(QUEUE_WAIT_MS)]));
    });
    mountApp(root, qk, loaded.map((c, i) => c ?? arrivals[i]!), lang, (i) => void get(i));
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
