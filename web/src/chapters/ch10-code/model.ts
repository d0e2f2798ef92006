/**
 * Chapter 10's URL state and the inputs of its two demos (no DOM). The numbers themselves
 * come from the core: precisionSoftmax for the naive and stable softmax of [c, c-1, c-2]
 * (docs/facts.md §10), forward with 'dot' and 'scaled_dot' for q.k of constant vectors.
 */
import type { PrecisionResult, QkScope } from '@qkscope/wasm';
import { choice, int, num } from '../../model/url-state';

export const DTYPES = ['float32', 'float16'] as const;
export type Dtype = (typeof DTYPES)[number];

export function makeSpec() {
  return {
    c: num(10, 0, 100, { digits: 4 }),
    dtype: choice(DTYPES, 'float16'),
    logd: int(8, 4, 14),
    a: num(4, 0.5, 8, { digits: 3 }),
    gseed: int(1, 0, 999_999),
  };
}

/** The row [c, c - 1, c - 2], whose softmax is the same for every c. */
export function shiftRow(c: number): number[] {
  return [c, c - 1, c - 2];
}

export interface MaxShift {
  logits: number[];
  naive: PrecisionResult;
  stable: PrecisionResult;
}

export function maxShift(qk: QkScope, c: number, dtype: Dtype): MaxShift {
  const scores = [shiftRow(c)];
  return {
    logits: scores[0]!,
    naive: qk.precisionSoftmax({ scores, dtype, method: 'no_max' }),
    stable: qk.precisionSoftmax({ scores, dtype, method: 'correct' }),
  };
}

export interface Overflow {
  d: number;
  /** q . k and q . k / sqrt(d) from the core, in float32. */
  dot: number;
  scaled: number;
  /** Whether the core accepts the score as float16 (it refuses values past the largest finite one). */
  dotFits: boolean;
  scaledFits: boolean;
}

function fitsFp16(qk: QkScope, s: number): boolean {
  try {
    qk.precisionSoftmax({ scores: [[s]], dtype: 'float16' });
    return true;
  } catch (e) {
    if (e instanceof RangeError) return false;
    throw e;
  }
}

/** q = k = (a, ..., a) of width d = 2^logd: one query, one key. */
export function overflow(qk: QkScope, logd: number, a: number): Overflow {
  const d = 2 ** logd;
  const q = [Array.from({ length: d }, () => a)];
  const dot = qk.forward({ query: q, key: q, value: [[1]], score: 'dot' }).scores.data[0]!;
  const scaled = qk.forward({ query: q, key: q, value: [[1]], score: 'scaled_dot' }).scores.data[0]!;
  return { d, dot, scaled, dotFits: fitsFp16(qk, dot), scaledFits: fitsFp16(qk, scaled) };
}
