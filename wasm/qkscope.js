// wasm/qkscope.js — ESM entry of the qkscope WebAssembly module (types: qkscope.d.ts).
//
// Thin on purpose: every check, conversion and error message lives in the compiled
// C++ bindings (wasm/src/bindings.cpp), so all callers see the same behaviour.
// Bad input throws a RangeError naming the argument; other failures (out of memory)
// throw an Error; the module stays usable after either.
//
// Browsers: the Emscripten glue finds qkscope_core.wasm next to itself through
// new URL(..., import.meta.url), which Vite bundles with no configuration.
// Node: pass the bytes, e.g.
//   const wasmBinary = await readFile(new URL('./dist/qkscope_core.wasm', import.meta.url));
//   const qk = await loadQkScope({ wasmBinary });
// The fast calls (attention, attentionBackward) live in a second module, qkscope_tiled.wasm,
// imported on the first fast call (in Node: pass its bytes as tiledWasmBinary); training
// (train().createTrainer) lives in qkscope_train.wasm, imported on the first train() call.
import createQkScopeCore from './dist/qkscope_core.mjs';

/** @type {Promise<import('./qkscope.js').QkScope> | null} */
let loading = null;

const isNode = () =>
  typeof globalThis.process === 'object' && globalThis.process !== null &&
  typeof globalThis.process.versions === 'object' && globalThis.process.versions !== null &&
  typeof globalThis.process.versions.node === 'string';

/** Recursively freezes the registry descriptions (plain data, safe to share). */
function deepFreeze(x) {
  if (x && typeof x === 'object') {
    for (const v of Object.values(x)) deepFreeze(v);
    Object.freeze(x);
  }
  return x;
}

/**
 * Wraps the Embind module in the QkScope interface. Arguments are passed with fixed
 * arity so missing ones reach C++ as `undefined` and get its messages (Embind would
 * otherwise throw its own arity error).
 * @param {any} core the instantiated Emscripten module
 * @param {import('./qkscope.js').LoadOptions} loadOptions
 * @returns {import('./qkscope.js').QkScope}
 */
function wrap(core, loadOptions) {
  /** @type {Promise<import('./qkscope.js').QkScopeTiled> | null} */
  let tiledLoading = null;
  const tiled = (options = {}) => {
    if (tiledLoading) return tiledLoading;
    const wasmBinary = (options && options.wasmBinary) || loadOptions.tiledWasmBinary;
    if (!wasmBinary && isNode()) {
      return Promise.reject(new Error(
        "attention: in Node pass the tiled module's bytes: loadQkScope({ wasmBinary, tiledWasmBinary: " +
          "await readFile(new URL('./dist/qkscope_tiled.wasm', import.meta.url)) })"));
    }
    // A separate module, fetched on the first fast call: qkscope_core.wasm stays small.
    tiledLoading = import('./dist/qkscope_tiled.mjs')
      .then((m) => m.default(wasmBinary ? { wasmBinary } : {}))
      .then(wrapTiled);
    tiledLoading.catch(() => {
      tiledLoading = null;
    });
    return tiledLoading;
  };
  /** @type {Promise<import('./qkscope.js').QkScopeTrain> | null} */
  let trainLoading = null;
  const train = (options = {}) => {
    if (trainLoading) return trainLoading;
    const wasmBinary = (options && options.wasmBinary) || loadOptions.trainWasmBinary;
    if (!wasmBinary && isNode()) {
      return Promise.reject(new Error(
        "train: in Node pass the training module's bytes: loadQkScope({ wasmBinary, trainWasmBinary: " +
          "await readFile(new URL('./dist/qkscope_train.wasm', import.meta.url)) })"));
    }
    // A separate module, fetched on the first training call: qkscope_core.wasm stays small.
    trainLoading = import('./dist/qkscope_train.mjs')
      .then((m) => m.default(wasmBinary ? { wasmBinary } : {}))
      .then(wrapTrain);
    trainLoading.catch(() => {
      trainLoading = null;
    });
    return trainLoading;
  };
  return Object.freeze({
    version: core.version(),
    scoreFunctions: deepFreeze(core.scoreFunctions()),
    normalizers: deepFreeze(core.normalizers()),
    forward: (options) => core.forward(options),
    backward: (options, gradOutput) => core.backward(options, gradOutput),
    initParams: (score, dQ, dK, hidden, seed) => core.initParams(score, dQ, dK, hidden, seed),
    multiHeadForward: (options) => core.multiHeadForward(options),
    precisionSoftmax: (options) => core.precisionSoftmax(options),
    linearAttention: (options) => core.linearAttention(options),
    mergeStates: (a, b) => core.mergeStates(a, b),
    sparsePattern: (options) => core.sparsePattern(options),
    t5Buckets: (options) => core.t5Buckets(options),
    tiled,
    train,
    attention: (options) => tiled().then((t) => t.attention(options)),
    attentionBackward: (options, gradOutput) => tiled().then((t) => t.attentionBackward(options, gradOutput)),
  });
}

/**
 * Wraps the tiled Embind module (wasm/tiled/bindings.cpp) in the QkScopeTiled interface.
 * @param {any} core the instantiated Emscripten module
 * @returns {import('./qkscope.js').QkScopeTiled}
 */
function wrapTiled(core) {
  return Object.freeze({
    version: core.version(),
    scoreFunctions: deepFreeze(core.scoreFunctions()),
    attention: (options) => core.attention(options),
    attentionBackward: (options, gradOutput) => core.attentionBackward(options, gradOutput),
  });
}

/**
 * Wraps the training Embind module (wasm/train/bindings.cpp) in the QkScopeTrain interface
 * (types/train.d.ts). Each trainer owns WebAssembly memory until `delete()`.
 * @param {any} core the instantiated Emscripten module
 * @returns {import('./qkscope.js').QkScopeTrain}
 */
function wrapTrain(core) {
  return Object.freeze({
    version: core.version(),
    tasks: deepFreeze(core.tasks()),
    createTrainer: (options = {}) => {
      const t = core.createTrainer(options);
      return Object.freeze({
        step: (n) => t.step(n),
        evaluate: () => t.evaluate(),
        attention: (example, layer, head) => t.attention(example, layer, head),
        example: (example) => t.example(example),
        state: () => t.state(),
        delete: () => t.delete(),
      });
    },
    encodeText: (text) => core.encodeText(text),
    loadCharModel: (weights) => {
      const m = core.loadCharModel(weights);
      const info = m.info();
      return Object.freeze({
        score: info.score,
        normalizer: info.normalizer,
        vocabulary: info.vocabulary,
        context: info.context,
        width: info.width,
        layers: info.layers,
        heads: info.heads,
        encode: (text) => m.encode(text),
        predict: (text) => {
          const r = m.predict(text);
          const att = r.attention;
          return Object.freeze({
            text: r.text,
            next: r.next,
            attention: (layer, head) => {
              for (const [name, v, n] of [['layer', layer, info.layers], ['head', head, info.heads]]) {
                if (!Number.isInteger(v) || v < 0 || v >= n)
                  throw new RangeError(`attention: ${name} must be an integer in [0, ${n}), got ${String(v)}`);
              }
              return att[layer][head];
            },
          });
        },
        delete: () => m.delete(),
      });
    },
  });
}

/**
 * Loads (once) and returns the qkscope module. Concurrent and later calls share one
 * instance; their options are ignored once loading has started. A failed load is not
 * memoised, so a retry (e.g. with `wasmBinary`) can succeed.
 * @param {import('./qkscope.js').LoadOptions} [options]
 *   `wasmBinary`: the .wasm bytes (required in Node; browsers fetch the file next to the glue).
 *   `tiledWasmBinary`: the tiled module's bytes, for `attention` in Node (browsers fetch
 *   qkscope_tiled.wasm on the first fast call).
 * @returns {Promise<import('./qkscope.js').QkScope>}
 */
export function loadQkScope(options = {}) {
  if (loading) return loading;
  const wasmBinary = options && options.wasmBinary;
  if (!wasmBinary && isNode()) {
    return Promise.reject(new Error(
      "loadQkScope: in Node pass the module's bytes: loadQkScope({ wasmBinary: await " +
        "readFile(new URL('./dist/qkscope_core.wasm', import.meta.url)) })"));
  }
  const moduleArgs = wasmBinary ? { wasmBinary } : {};
  loading = createQkScopeCore(moduleArgs).then((core) => wrap(core, options || {}));
  loading.catch(() => {
    loading = null;
  });
  return loading;
}
