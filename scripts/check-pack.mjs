// check-pack.mjs — `prepack` guard: `npm pack` / `npm publish` ship build outputs
// (the widget and the full wasm core), so refuse to pack when one is missing and say
// which build makes it, and refuse when the npm, C++ and CMake versions disagree.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8'));
const needs = {
  'wasm/dist/qkscope_core.mjs': 'npm run build:wasm',
  'wasm/dist/qkscope_core.wasm': 'npm run build:wasm',
  'wasm/dist/qkscope_tiled.mjs': 'npm run build:wasm',
  'wasm/dist/qkscope_tiled.wasm': 'npm run build:wasm',
  'wasm/dist/qkscope_train.mjs': 'npm run build:wasm',
  'wasm/dist/qkscope_train.wasm': 'npm run build:wasm',
  'dist/widget/qk-scope.js': 'npm run build:widget',
  'dist/widget/esm/index.js': 'npm run build:widget',
  'dist/widget/esm/qkscope_widget.wasm': 'npm run build:widget',
  'dist/widget/types/web/src/widget/index.d.ts': 'npm run build:widget',
};
const missing = Object.entries(needs).filter(([f]) => !existsSync(root + f));
if (missing.length) {
  console.error(`prepack: missing build outputs:\n${missing.map(([f, cmd]) => `  ${f}  (${cmd})`).join('\n')}`);
  process.exit(1);
}
// One version for the three distributions (docs/npm-package.md).
const hpp = readFileSync(`${root}core/include/qkscope/version.hpp`, 'utf8').match(/version = "([^"]+)"/)?.[1];
const cmake = readFileSync(`${root}CMakeLists.txt`, 'utf8').match(/project\(qkscope VERSION (\S+)/)?.[1];
if (hpp !== pkg.version || cmake !== pkg.version) {
  console.error(`prepack: versions disagree: package.json ${pkg.version}, version.hpp ${hpp}, CMakeLists.txt ${cmake}`);
  process.exit(1);
}
