/**
 * Entry point: loads the wasm core, reads the view state from the URL and mounts the page.
 * The language is known from the URL before the core loads, so the loading and
 * error messages are already in the reader's language.
 */
import 'katex/dist/katex.min.css';
import './styles.css';
import { loadQkScope } from '../../wasm/qkscope.js';
import { catalog, fill } from './i18n';
import { LANGS, type Lang, parseState } from './model/state';
import { mountApp } from './app';

function langFromUrl(): Lang {
  const l = new URLSearchParams(location.search).get('lang');
  return (LANGS as readonly string[]).includes(l ?? '') ? (l as Lang) : 'en';
}

async function main(): Promise<void> {
  const root = document.getElementById('app')!;
  const cat = catalog(langFromUrl());
  document.documentElement.lang = cat.htmlLang;
  const status = root.querySelector<HTMLElement>('[data-testid="app-status"]');
  if (status) status.textContent = cat.ui.loading;
  try {
    const qk = await loadQkScope();
    const ctx = { scores: qk.scoreFunctions.map((f) => f.name) };
    mountApp(root, qk, ctx, parseState(location.search, ctx));
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
