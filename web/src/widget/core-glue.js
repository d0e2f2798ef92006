// core-glue.js — re-exports the Emscripten factory of the widget build
// (wasm/dist/widget/qkscope_widget.{mjs,wasm}, built by `npm run build:widget`);
// types in core-glue.d.ts. The glue finds the .wasm next to itself through
// new URL(..., import.meta.url) unless `wasmBinary` is passed.
export { default } from '../../../wasm/dist/widget/qkscope_widget.mjs';
