// native/bench/wasm_attention.mjs — times the WebAssembly module's two attention calls in
// Node, one thread: forward() (the core's all-intermediates path, qkscope_core.wasm) against
// attention() (the tiled SIMD kernels, qkscope_tiled.wasm), d = 64, scaled dot, at
// L = 128, 512, 2048, both in the same run; results NOTES.md ("The tiled kernels in the
// browser module"). Needs `npm run build:wasm`. Usage: node native/bench/wasm_attention.mjs [repeats]
import { readFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';

const dist = new URL('../../wasm/dist/', import.meta.url);
const { loadQkScope } = await import('../../wasm/qkscope.js');
const qk = await loadQkScope({
  wasmBinary: await readFile(new URL('qkscope_core.wasm', dist)),
  tiledWasmBinary: await readFile(new URL('qkscope_tiled.wasm', dist)),
});
const tiled = await qk.tiled();
const repeats = Number(process.argv[2] ?? 7);
const d = 64;

/** Seeded (rows, cols) matrix with entries in [-1, 1). */
function matrix(rows, cols, seed) {
  let a = seed >>> 0;
  const data = new Float32Array(rows * cols);
  for (let k = 0; k < data.length; k++) {
    a = (Math.imul(a, 1664525) + 1013904223) >>> 0;
    data[k] = a / 2 ** 31 - 1;
  }
  return { rows, cols, data };
}

/**
 * Wall times in ms of `repeats` calls of each of fns after one warm-up call each, the calls
 * interleaved so that load from other processes falls on both alike: [median, fastest] per fn.
 */
function time(...fns) {
  for (const fn of fns) fn();
  const t = fns.map(() => []);
  for (let r = 0; r < repeats; r++)
    fns.forEach((fn, k) => {
      const t0 = performance.now();
      fn();
      t[k].push(performance.now() - t0);
    });
  return t.map((x) => x.sort((a, b) => a - b)).map((x) => [x[x.length >> 1], x[0]]);
}

console.log(`# ${cpus()[0].model}, Node ${process.versions.node}, load ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
console.log(`# medians (fastest) of ${repeats} interleaved calls, d = ${d}, scaled_dot, one thread`);
console.log('| L | forward ms | attention ms | forward / attention | max abs O diff |');
console.log('|---|---|---|---|---|');
for (const L of [128, 512, 2048]) {
  const o = { query: matrix(L, d, 1), key: matrix(L, d, 2), value: matrix(L, d, 3) };
  const full = qk.forward(o).output.data, fast = tiled.attention(o).output.data;
  let diff = 0;
  for (let k = 0; k < full.length; k++) diff = Math.max(diff, Math.abs(full[k] - fast[k]));
  const [[tf, tf0], [ta, ta0]] = time(() => qk.forward(o), () => tiled.attention(o));
  console.log(`| ${L} | ${tf.toFixed(2)} (${tf0.toFixed(2)}) | ${ta.toFixed(2)} (${ta0.toFixed(2)}) | ` +
    `${(tf / ta).toFixed(1)} (${(tf0 / ta0).toFixed(1)}) | ${diff.toExponential(1)} |`);
}
