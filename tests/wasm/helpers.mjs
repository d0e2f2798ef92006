// Shared helpers of the Node tests of the WebAssembly module (not a test file itself).
// The module must be built first: `npm run build:wasm` (wasm/dist/qkscope_core.{mjs,wasm}).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

export const wasmUrl = new URL('../../wasm/dist/qkscope_core.wasm', import.meta.url);
const glueUrl = new URL('../../wasm/dist/qkscope_core.mjs', import.meta.url);
export const tiledWasmUrl = new URL('../../wasm/dist/qkscope_tiled.wasm', import.meta.url);
const referenceUrl = new URL('../../build/wasm/qkscope_reference.mjs', import.meta.url);
const referenceWasmUrl = new URL('../../build/wasm/qkscope_reference.wasm', import.meta.url);

for (const u of [wasmUrl, glueUrl, tiledWasmUrl, referenceUrl, referenceWasmUrl]) {
  if (!existsSync(u)) throw new Error(`${u.pathname} missing: run \`npm run build:wasm\` first`);
}

const { loadQkScope } = await import('../../wasm/qkscope.js');
export { loadQkScope };

/** The module, loaded once per test process with the bytes read from disk (Node needs wasmBinary). */
export async function load() {
  return loadQkScope({ wasmBinary: await readFile(wasmUrl), tiledWasmBinary: await readFile(tiledWasmUrl) });
}

let referenceLoading = null;
/**
 * The test-only oracle module (tests/wasm/reference/bindings.cpp): reference(options) gives
 * {output, logsumexp} of the double reference and {naiveOutput, naiveLogsumexp} of the same
 * loops in float32; referenceBackward(options, gradOutput) gives {ref, naive} gradients.
 */
export function loadReference() {
  referenceLoading ??= import(referenceUrl.href).then(async (m) =>
    m.default({ wasmBinary: await readFile(referenceWasmUrl) }));
  return referenceLoading;
}

/**
 * The project's one tolerance rule (core/reference/tolerance.hpp): the fast values may be at
 * most twice as far from the double reference as naive float32 math, plus a small floor,
 *   max|fast - ref| <= 2 max|naive - ref| + 1e-6 (1 + max|ref|);
 * -Infinity must match exactly, NaN never passes. Flat arrays of equal length.
 */
export function assertMatchesReference(fast, naive, ref, what) {
  const f = Array.from(fast), n = Array.from(naive), r = Array.from(ref);
  assert.equal(f.length, r.length, `${what}: length ${f.length}, reference ${r.length}`);
  assert.equal(n.length, r.length, `${what}: naive length ${n.length}, reference ${r.length}`);
  let maxRef = 0, naiveErr = 0;
  for (let k = 0; k < r.length; k++) {
    if (Number.isFinite(r[k])) maxRef = Math.max(maxRef, Math.abs(r[k]));
    if (Number.isFinite(r[k]) && Number.isFinite(n[k])) naiveErr = Math.max(naiveErr, Math.abs(n[k] - r[k]));
  }
  const tol = 2 * naiveErr + 1e-6 * (1 + maxRef);
  for (let k = 0; k < r.length; k++) {
    const ok = Number.isFinite(r[k]) || Number.isFinite(f[k])
      ? Math.abs(f[k] - r[k]) <= tol
      : f[k] === r[k];
    assert.ok(ok, `${what}[${k}]: fast ${f[k]} vs reference ${r[k]} (tol ${tol.toExponential(2)}, naive err ${naiveErr.toExponential(2)})`);
  }
}

/** The worked example of the tutorial: X = Q = K = V. */
export const X = [
  [1, 0, 1, 0],
  [0, 1, 0, 1],
  [1, 1, 0, 0],
];

/** Matrix {rows, cols, data} -> number[][] */
export function toRows(m) {
  assert.equal(m.data.length, m.rows * m.cols, 'data.length === rows*cols');
  const out = [];
  for (let i = 0; i < m.rows; i++) out.push(Array.from(m.data.subarray(i * m.cols, (i + 1) * m.cols)));
  return out;
}

/** Asserts |a - e| <= tol entrywise (nested arrays or flat arrays). */
export function assertClose(actual, expected, tol, what = 'value') {
  const a = Array.isArray(actual) || ArrayBuffer.isView(actual) ? Array.from(actual) : actual;
  if (Array.isArray(expected)) {
    assert.equal(a.length, expected.length, `${what}: length`);
    expected.forEach((e, i) => assertClose(a[i], e, tol, `${what}[${i}]`));
    return;
  }
  assert.ok(Number.isFinite(a), `${what}: ${a} is not finite`);
  assert.ok(Math.abs(a - expected) <= tol, `${what}: got ${a}, expected ${expected} (tol ${tol})`);
}

/** Every entry finite. */
export function assertFinite(data, what) {
  for (let i = 0; i < data.length; i++) assert.ok(Number.isFinite(data[i]), `${what}[${i}] = ${data[i]}`);
}

/** Rows of an (L_q, L_k) weight matrix sum to 1 (within tol) and entries lie in [0, 1]. */
export function assertRowStochastic(weights, what, tol = 1e-5) {
  for (const [i, r] of toRows(weights).entries()) {
    for (const p of r) assert.ok(p >= 0 && p <= 1 + tol, `${what} row ${i}: weight ${p} outside [0, 1]`);
    const s = r.reduce((x, y) => x + y, 0);
    assert.ok(Math.abs(s - 1) <= tol, `${what} row ${i} sums to ${s}`);
  }
}

/** Deterministic pseudo-random (L, d) matrix with entries in [-1, 1) (mulberry32). */
export function randomMatrix(rows, cols, seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return Array.from({ length: rows }, () => Array.from({ length: cols }, () => 2 * next() - 1));
}

/** Asserts fn throws an error of class `cls` whose message matches every regex in `patterns`. */
export function assertThrowsWith(fn, cls, ...patterns) {
  let err;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  assert.ok(err !== undefined, `expected a ${cls.name}, nothing was thrown`);
  assert.ok(err instanceof cls, `expected a ${cls.name}, got ${err?.constructor?.name}: ${err?.message ?? err}`);
  for (const p of patterns) assert.match(err.message, p);
  return err;
}
