/**
 * Import aliases shared by both Vite configs (the tutorial and the widget builds). The
 * same names are in tsconfig.json "paths" for the type checker; the widget's emitted
 * declarations get the relative path back in scripts/build-widget.sh.
 *   '@qkscope/wasm' -> wasm/qkscope.js, the typed wrapper of the wasm core (types: qkscope.d.ts)
 */
import { fileURLToPath } from 'node:url';

export const aliases = [
  { find: /^@qkscope\/wasm$/, replacement: fileURLToPath(new URL('../wasm/qkscope.js', import.meta.url)) },
];
