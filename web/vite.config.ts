/**
 * Vite config for the qkscope tutorial page.
 * root is web/, the static build goes to web/dist (served by `vite preview`),
 * and the dev server may read the whole repository so ../wasm/ is importable.
 */
import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

const webDir = fileURLToPath(new URL('.', import.meta.url));
const repoRoot = fileURLToPath(new URL('..', import.meta.url));

export default defineConfig({
  root: webDir,
  // Relative asset URLs: the build works from any sub-path (e.g. a project page).
  base: './',
  build: {
    outDir: fileURLToPath(new URL('./dist', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
  },
  server: {
    fs: { allow: [repoRoot] },
  },
  preview: {
    host: '127.0.0.1',
  },
});
