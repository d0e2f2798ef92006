/**
 * Seeded random numbers for figures and Monte Carlo runs (no DOM): mulberry32 (Tommy
 * Ettinger, public domain) for uniforms, Box–Muller for standard normals. The same
 * (seed, stream) gives the same numbers on every engine, so a shared URL reproduces a run.
 */
import type { Matrix } from '@qkscope/wasm';
import type { Mat } from './matrix';

/** Floats in [0, 1) from a 32-bit seed. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A generator for (seed, stream): independent streams from one seed. */
export function stream(seed: number, stream: number): () => number {
  return mulberry32((Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul(stream + 1, 0x85ebca6b)) >>> 0);
}

/** Standard normal samples N(0, 1) from a uniform generator (Box–Muller, both outputs used). */
export function normals(uniform: () => number): () => number {
  let spare: number | null = null;
  return () => {
    if (spare !== null) {
      const s = spare;
      spare = null;
      return s;
    }
    const u = 1 - uniform(); // (0, 1]: log never sees 0
    const r = Math.sqrt(-2 * Math.log(u));
    const th = 2 * Math.PI * uniform();
    spare = r * Math.sin(th);
    return r * Math.cos(th);
  };
}

/** A rows x cols matrix of i.i.d. N(0, 1) entries, in the core's row-major Matrix form. */
export function normalMatrix(next: () => number, rows: number, cols: number): Matrix {
  const data = new Float32Array(rows * cols);
  for (let i = 0; i < data.length; i++) data[i] = next();
  return { rows, cols, data };
}

/**
 * A rows x cols matrix for (seed, stream) with entries uniform in [-1, 1], rounded to one
 * decimal so they print short (<qk-scope>'s Q, K, V when none are given: streams 0, 1, 2).
 */
export function seededMatrix(seed: number, streamId: number, rows: number, cols: number): Mat {
  const next = stream(seed, streamId);
  return Array.from({ length: rows }, () =>
    Array.from({ length: cols }, () => {
      const x = Math.round((next() * 2 - 1) * 10) / 10;
      return x === 0 ? 0 : x; // no -0
    }),
  );
}
