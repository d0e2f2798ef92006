/** Emscripten factory of the widget's wasm build (see core-glue.js). */
declare const createQkScopeWidgetCore: (moduleArgs: { wasmBinary?: ArrayBuffer | Uint8Array }) => Promise<unknown>;
export default createQkScopeWidgetCore;
