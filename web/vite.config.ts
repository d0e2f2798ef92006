/**
 * Vite config for the qkscope tutorial page.
 * root is web/, the static build goes to web/dist (served by `vite preview`),
 * and the dev server may read the whole repository so ../wasm/ is importable.
 */
import { defineConfig, type Plugin } from 'vite';
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import { aliases } from './aliases';

const webDir = fileURLToPath(new URL('.', import.meta.url));
const repoRoot = fileURLToPath(new URL('..', import.meta.url));
// The widget docs page (widget.html) needs the widget's wasm build (`npm run build:widget`);
// without it only the tutorial is built, so `build:web` keeps working on its own.
const widgetBuilt = existsSync(fileURLToPath(new URL('../wasm/dist/widget/qkscope_widget.mjs', import.meta.url)));

/**
 * Starts chapter 1's downloads with the page (links in index.html's head) instead of when
 * the page's scripts have run (~0.3-0.5 s later on a 2-core machine): the core's .wasm
 * (<link rel="preload">; its crossorigin matches the fetch of Emscripten's loader, with
 * same-origin credentials, so the loader takes the preloaded response) and chapter 1's
 * chunk with the chunks it imports (<link rel="modulepreload">). Chapter 1 is the page
 * without a hash; another chapter's page fetches its own chunk as before.
 */
function preloadFirstChapter(): Plugin {
  return {
    name: 'qkscope-preload-first-chapter',
    apply: 'build',
    transformIndexHtml: {
      order: 'post',
      handler(html, ctx) {
        if (!ctx.bundle || !ctx.filename.endsWith('index.html')) return;
        const bundle = ctx.bundle;
        const wasm = Object.keys(bundle).find((f) => /(^|\/)qkscope_core-[\w-]+\.wasm$/.test(f));
        const ch1 = Object.values(bundle).find((c) => c.type === 'chunk' && /chapters\/ch1-[^/]+\/index\.ts$/.test(c.facadeModuleId ?? ''));
        if (!wasm || !ch1) throw new Error('preloadFirstChapter: no qkscope_core-*.wasm or chapter 1 chunk in the bundle');
        const chunks = new Set<string>();
        const visit = (name: string) => {
          const c = bundle[name];
          if (!c || c.type !== 'chunk' || chunks.has(name)) return;
          chunks.add(name);
          c.imports.forEach(visit);
        };
        visit(ch1.fileName);
        return [
          { tag: 'link', attrs: { rel: 'preload', href: `./${wasm}`, as: 'fetch', type: 'application/wasm', crossorigin: '' }, injectTo: 'head-prepend' },
          ...[...chunks].filter((f) => !html.includes(f)).map((f) => ({ tag: 'link', attrs: { rel: 'modulepreload', crossorigin: '', href: `./${f}` }, injectTo: 'head' as const })),
        ];
      },
    },
  };
}

export default defineConfig({
  plugins: [preloadFirstChapter()],
  root: webDir,
  // Relative asset URLs: the build works from any sub-path (e.g. a project page).
  base: './',
  resolve: { alias: aliases },
  build: {
    outDir: fileURLToPath(new URL('./dist', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    rollupOptions: {
      input: {
        main: fileURLToPath(new URL('./index.html', import.meta.url)),
        bench: fileURLToPath(new URL('./bench.html', import.meta.url)),
        ...(widgetBuilt ? { widget: fileURLToPath(new URL('./widget.html', import.meta.url)) } : {}),
      },
    },
  },
  // ES module workers: the qkscope worker (src/worker/qk.worker.ts) imports wasm/qkscope.js,
  // whose tiled module is a dynamic import (code splitting needs 'es', not the default 'iife').
  worker: { format: 'es' },
  server: {
    fs: { allow: [repoRoot] },
  },
  preview: {
    host: '127.0.0.1',
  },
});
