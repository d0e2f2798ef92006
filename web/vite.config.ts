/**
 * Vite config for the qkscope tutorial page.
 * root is web/, the static build goes to web/dist (served by `vite preview`),
 * and the dev server may read the whole repository so ../wasm/ is importable.
 */
import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import { aliases } from './aliases';

const webDir = fileURLToPath(new URL('.', import.meta.url));
const repoRoot = fileURLToPath(new URL('..', import.meta.url));
// The widget docs page (widget.html) needs the widget's wasm build (`npm run build:widget`);
// without it only the tutorial is built, so `build:web` keeps working on its own.
const widgetBuilt = existsSync(fileURLToPath(new URL('../wasm/dist/widget/qkscope_widget.mjs', import.meta.url)));

export default defineConfig({
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
