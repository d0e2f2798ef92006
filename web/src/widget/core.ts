/**
 * The one attention core shared by every <qk-scope> on a page. Loading is memoised
 * on globalThis under Symbol.for('qkscope.widget.core'), so widgets from the npm
 * module and from the self-contained script (even both on one page, or the script
 * included twice) share one WebAssembly instance. Same interface as wasm/qkscope.js.
 */
import type { QkScope } from '@qkscope/wasm';
import createCore from './core-glue.js';

const KEY = Symbol.for('qkscope.widget.core');
const KEY_BYTES = Symbol.for('qkscope.widget.wasmBinary');
type Slot = { [KEY]?: Promise<QkScope>; [KEY_BYTES]?: Promise<Uint8Array> };
const slot = globalThis as unknown as Slot;

/**
 * The .wasm bytes (or a promise of them) to use instead of fetching the file next to
 * the glue (self-contained build). Call before the first element connects; the first
 * provider wins.
 */
export function provideWasmBinary(bytes: Uint8Array | Promise<Uint8Array>): void {
  slot[KEY_BYTES] ??= Promise.resolve(bytes);
}

function deepFreeze<T>(x: T): T {
  if (x && typeof x === 'object') {
    for (const v of Object.values(x)) deepFreeze(v);
    Object.freeze(x);
  }
  return x;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function wrap(core: any): QkScope {
  return Object.freeze({
    version: core.version(),
    scoreFunctions: deepFreeze(core.scoreFunctions()),
    normalizers: deepFreeze(core.normalizers()),
    forward: (o) => core.forward(o),
    // The widget build binds forward and the registries only (wasm/widget/bindings.cpp).
    backward: () => {
      throw new Error('backward is not in the widget build of qkscope; use wasm/qkscope.js');
    },
    initParams: () => {
      throw new Error('initParams is not in the widget build of qkscope; use wasm/qkscope.js');
    },
    multiHeadForward: () => {
      throw new Error('multiHeadForward is not in the widget build of qkscope; use wasm/qkscope.js');
    },
    precisionSoftmax: () => {
      throw new Error('precisionSoftmax is not in the widget build of qkscope; use wasm/qkscope.js');
    },
    linearAttention: () => {
      throw new Error('linearAttention is not in the widget build of qkscope; use wasm/qkscope.js');
    },
    mergeStates: () => {
      throw new Error('mergeStates is not in the widget build of qkscope; use wasm/qkscope.js');
    },
    sparsePattern: () => {
      throw new Error('sparsePattern is not in the widget build of qkscope; use wasm/qkscope.js');
    },
    t5Buckets: () => {
      throw new Error('t5Buckets is not in the widget build of qkscope; use wasm/qkscope.js');
    },
    // The tiled kernels are a separate module the widget does not ship (size budget).
    attention: () => Promise.reject(new Error('attention is not in the widget build of qkscope; use wasm/qkscope.js')),
    attentionBackward: () =>
      Promise.reject(new Error('attentionBackward is not in the widget build of qkscope; use wasm/qkscope.js')),
    tiled: () => Promise.reject(new Error('tiled is not in the widget build of qkscope; use wasm/qkscope.js')),
    train: () => Promise.reject(new Error('train is not in the widget build of qkscope; use wasm/qkscope.js')),
  } satisfies QkScope);
}

/** Loads (once per page) and returns the core. A failed load is not memoised. */
export function loadCore(): Promise<QkScope> {
  const existing = slot[KEY];
  if (existing) return existing;
  const bytes = slot[KEY_BYTES];
  const p = (bytes ? bytes.then((wasmBinary) => createCore({ wasmBinary })) : createCore({})).then(wrap);
  slot[KEY] = p;
  p.catch(() => {
    if (slot[KEY] === p) delete slot[KEY];
  });
  return p;
}
