/**
 * Plain number[][] matrices for the view state and for display (no DOM).
 * Row i is token i, as in the core: Q (L_q, d_q), K (L_k, d_k), V (L_k, d_v).
 */

export type Mat = number[][];

/** Anything shaped like the core's row-major Matrix ({ rows, cols, data }). */
export interface RowMajor {
  rows: number;
  cols: number;
  data: ArrayLike<number>;
}

/** A rows x cols matrix filled with `fill`. */
export function filled(rows: number, cols: number, fill = 0): Mat {
  return Array.from({ length: rows }, () => new Array<number>(cols).fill(fill));
}

/** Copy of `m` cut or zero-padded to rows x cols (existing entries keep their place). */
export function resize(m: Mat, rows: number, cols: number, fill = 0): Mat {
  return Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => m[i]?.[j] ?? fill),
  );
}

export function clone(m: Mat): Mat {
  return m.map((row) => row.slice());
}

export function equal(a: Mat, b: Mat): boolean {
  return (
    a.length === b.length &&
    a.every((row, i) => row.length === b[i]!.length && row.every((x, j) => Object.is(x, b[i]![j]) || x === b[i]![j]))
  );
}

/** Nested rows of a row-major matrix. */
export function toRows(m: RowMajor): Mat {
  return Array.from({ length: m.rows }, (_, i) => Array.from(m.data).slice(i * m.cols, (i + 1) * m.cols));
}

/** Row i of a row-major matrix. */
export function row(m: RowMajor, i: number): number[] {
  return Array.from(m.data).slice(i * m.cols, (i + 1) * m.cols);
}

/** Index of the largest entry (lowest index on ties), -1 for an empty array. */
export function argmax(xs: ArrayLike<number>): number {
  let best = -1;
  for (let j = 0; j < xs.length; j++) if (best < 0 || xs[j]! > xs[best]!) best = j;
  return best;
}

/** Where the core masked a logit: it writes -Infinity into maskedScores (i, j 0-based). */
export function maskedCells(maskedScores: RowMajor): (i: number, j: number) => boolean {
  return (i, j) => maskedScores.data[i * maskedScores.cols + j] === -Infinity;
}
