/**
 * Seeded Q/K/V for <qk-scope> when q/k/v are not given (no DOM). mulberry32
 * (Tommy Ettinger, public domain): a 32-bit state, deterministic on every engine.
 * Entries are uniform in [-1, 1], rounded to one decimal so they print short.
 */
import type { Mat } from '../model/matrix';

/** A generator of floats in [0, 1) from a 32-bit seed. */
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

/** A rows x cols matrix for (seed, stream): stream 1 = Q, 2 = K, 3 = V. */
export function seededMatrix(seed: number, stream: number, rows: number, cols: number): Mat {
  const next = mulberry32((Math.imul(seed, 0x9e3779b1) ^ Math.imul(stream, 0x85ebca6b)) >>> 0);
  return Array.from({ length: rows }, () =>
    Array.from({ length: cols }, () => {
      const x = Math.round((next() * 2 - 1) * 10) / 10;
      return x === 0 ? 0 : x; // no -0
    }),
  );
}
