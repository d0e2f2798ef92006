// Shared helpers of the Node tests of the WebAssembly module (not a test file itself).
// The module must be built first: `npm run build:wasm` (wasm/dist/qkscope_core.{mjs,wasm}).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

export const wasmUrl = new URL('../../wasm/dist/qkscope_core.wasm', import.meta.url);
const glueUrl = new URL('../../wasm/dist/qkscope_core.mjs', import.meta.url);

if (!existsSync(wasmUrl) || !existsSync(glueUrl)) {
  throw new Error('wasm/dist/qkscope_core.{mjs,wasm} missing: run `npm run build:wasm` first');
}

const { loadQkScope } = await import('../../wasm/qkscope.js');
export { loadQkScope };

/** The module, loaded once per test process with the bytes read from disk (Node needs wasmBinary). */
export async function load() {
  return loadQkScope({ wasmBinary: await readFile(wasmUrl) });
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
