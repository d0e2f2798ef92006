/**
 * Vite (library mode) builds of the <qk-scope> widget, from web/src/widget/:
 *   --mode esm         dist/widget/esm/{index,define}.js: ES modules for npm; the
 *                      Emscripten glue (qkscope_widget.mjs) stays an external import
 *                      and scripts/build-widget.sh copies it and its .wasm alongside.
 *   --mode standalone  dist/widget/qk-scope.js: one classic script (IIFE) for blogs,
 *                      the .wasm inlined as base64 of its gzip (see standalone.ts).
 * Needs wasm/dist/widget/qkscope_widget.{mjs,wasm} (cmake target qkscope_widget).
 */
import { defineConfig, type Plugin } from 'vite';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { aliases } from './aliases';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const widgetSrc = `${repoRoot}web/src/widget/`;
const wasmFile = `${repoRoot}wasm/dist/widget/qkscope_widget.wasm`;
const GLUE = /qkscope_widget\.mjs$/;

/** Keeps the glue an external sibling module in the npm build. */
function externalGlue(): Plugin {
  return {
    name: 'qkscope-external-glue',
    enforce: 'pre',
    resolveId(id) {
      return GLUE.test(id) ? { id: './qkscope_widget.mjs', external: true } : null;
    },
  };
}

/** Inlines the .wasm (gzip + base64) and removes the glue's import.meta.url uses (classic script). */
function inlineWasm(): Plugin {
  const VIRTUAL = 'virtual:qkscope-widget-wasm';
  return {
    name: 'qkscope-inline-wasm',
    enforce: 'pre',
    resolveId(id) {
      return id === VIRTUAL ? `\0${VIRTUAL}` : null;
    },
    load(id) {
      if (id !== `\0${VIRTUAL}`) return null;
      const b64 = gzipSync(readFileSync(wasmFile), { level: 9 }).toString('base64');
      return `export default ${JSON.stringify(b64)};`;
    },
    transform(code, id) {
      if (!GLUE.test(id)) return null;
      // The bytes are always passed as wasmBinary, so the file URL is never used.
      return code
        .replace(/new URL\((['"])qkscope_widget\.wasm\1,\s*import\.meta\.url\)\.toString\(\)/g, "'qkscope_widget.wasm'")
        .replace(/import\.meta\.url/g, "''");
    },
  };
}

export default defineConfig(({ mode }) => {
  const standalone = mode === 'standalone';
  return {
    root: widgetSrc,
    publicDir: false,
    resolve: { alias: aliases },
    plugins: [standalone ? inlineWasm() : externalGlue()],
    build: {
      outDir: fileURLToPath(new URL(standalone ? '../dist/widget' : '../dist/widget/esm', import.meta.url)),
      emptyOutDir: !standalone,
      target: 'es2022',
      minify: true,
      sourcemap: false,
      lib: standalone
        ? { entry: `${widgetSrc}standalone.ts`, formats: ['iife'], name: 'QkScopeWidget', fileName: () => 'qk-scope.js' }
        : { entry: { index: `${widgetSrc}index.ts`, define: `${widgetSrc}define.ts` }, formats: ['es'], fileName: (_f, name) => `${name}.js` },
    },
  };
});
