/**
 * Chapter 2's computations (no DOM): all scoring functions of the core's registry on one
 * shared Q, K, V, with the parameters the figure controls:
 * - bilinear q^T W k with W = I + alpha * N, N (d_q, d_k) i.i.d. N(0, 1) from the seed
 *   (alpha = 0: exactly the dot product; Luong et al. 2015, "general");
 * - additive v^T tanh(W_q q + W_k k + b) with hidden size d_h, parameters from the seed
 *   (Bahdanau et al. 2015);
 * - linear concat w^T [q; k], parameters from the seed.
 * Differences of weights between two functions, and the query-independence of linear
 * concat (docs/facts.md §2): the spread of each weight column across queries.
 */
import type { ForwardOptions, ForwardResult, Matrix, QkScope, ScoreInfo, ScoreName } from '@qkscope/wasm';
import type { Mat } from '../../model/matrix';
import { normalMatrix, normals, stream } from '../../model/random';
import { choice, int, matrix, num } from '../../model/url-state';

export interface Ch2Inputs {
  q: Mat; // (L_q, d_q)
  k: Mat; // (L_k, d_k)
  v: Mat; // (L_k, d_v)
  alpha: number;
  dh: number;
  seed: number;
}

export type Outcome = { name: ScoreName; info: ScoreInfo; result: ForwardResult; error?: undefined } | { name: ScoreName; info: ScoreInfo; result?: undefined; error: Error };

/** W = I + alpha * N for bilinear, (d_q, d_k); I is the rectangular identity. */
export function bilinearW(alpha: number, seed: number, dq: number, dk: number): Matrix {
  const n = normalMatrix(normals(stream(seed, 7)), dq, dk);
  const data = new Float32Array(dq * dk);
  for (let i = 0; i < dq; i++) for (let j = 0; j < dk; j++) data[i * dk + j] = (i === j ? 1 : 0) + alpha * n.data[i * dk + j]!;
  return { rows: dq, cols: dk, data };
}

/** Forward options of one scoring function on the shared inputs. */
export function optionsFor(name: ScoreName, s: Ch2Inputs): ForwardOptions {
  const base: ForwardOptions = { query: s.q, key: s.k, value: s.v, score: name, seed: s.seed };
  if (name === 'bilinear') return { ...base, params: { W: bilinearW(s.alpha, s.seed, s.q[0]!.length, s.k[0]!.length) } };
  if (name === 'additive') return { ...base, hidden: s.dh };
  return base;
}

/** Every scoring function of the registry (or those `which` keeps) on the inputs; errors (e.g. d_q != d_k for dot) kept per function. */
export function runAll(qk: QkScope, s: Ch2Inputs, which: (name: ScoreName) => boolean = () => true): Outcome[] {
  return qk.scoreFunctions.filter((info) => which(info.name)).map((info) => {
    try {
      return { name: info.name, info, result: qk.forward(optionsFor(info.name, s)) };
    } catch (e) {
      return { name: info.name, info, error: e instanceof Error ? e : new Error(String(e)) };
    }
  });
}

/** a - b elementwise, (L_q, L_k). */
export function difference(a: Matrix, b: Matrix): Matrix {
  const data = new Float32Array(a.data.length);
  for (let i = 0; i < data.length; i++) data[i] = a.data[i]! - b.data[i]!;
  return { rows: a.rows, cols: a.cols, data };
}

/** Largest |x| and where (0-based), and the number of rows whose argmax differs between a and b. */
export function diffStats(a: Matrix, b: Matrix): { max: number; i: number; j: number; rowsChanged: number } {
  let max = 0;
  let at = [0, 0];
  let rowsChanged = 0;
  for (let i = 0; i < a.rows; i++) {
    let ja = 0;
    let jb = 0;
    for (let j = 0; j < a.cols; j++) {
      const d = Math.abs(a.data[i * a.cols + j]! - b.data[i * b.cols + j]!);
      if (d > max) [max, at] = [d, [i, j]];
      if (a.data[i * a.cols + j]! > a.data[i * a.cols + ja]!) ja = j;
      if (b.data[i * b.cols + j]! > b.data[i * b.cols + jb]!) jb = j;
    }
    if (ja !== jb) rowsChanged++;
  }
  return { max, i: at[0]!, j: at[1]!, rowsChanged };
}

/** Largest spread (max - min over queries) of any weight column: 0 when every row is the same. */
export function columnSpread(w: Matrix): number {
  let spread = 0;
  for (let j = 0; j < w.cols; j++) {
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = 0; i < w.rows; i++) {
      const x = w.data[i * w.cols + j]!;
      lo = Math.min(lo, x);
      hi = Math.max(hi, x);
    }
    spread = Math.max(spread, hi - lo);
  }
  return spread;
}

/** Mean row entropy (nats) of a result. */
export function meanEntropy(r: ForwardResult): number {
  let s = 0;
  for (const h of r.entropy) s += h;
  return s / Math.max(1, r.entropy.length);
}

export const DEFAULT_Q: Mat = [
  [1, 0, 1, 0],
  [0, 1, 0, 1],
  [1, 1, 0, 0],
  [-1, 0, 0.5, 1],
];
export const DEFAULT_K: Mat = [
  [1, 0, 1, 0],
  [0, 1, 0, 1],
  [2, 0, 2, 0],
  [0, 0, -1, 1],
  [0.5, 0.5, 0.5, 0.5],
];
export const DEFAULT_V: Mat = [
  [1, 0],
  [0, 1],
  [1, 1],
  [-1, 0],
  [0, -1],
];

/** The chapter's URL state: one field table (model/url-state.ts) shared by its figures. */
export function makeSpec(names: string[]) {
  return {
    view: choice(['weights', 'scores'] as const, 'weights'),
    alpha: num(0.25, 0, 1, { digits: 3 }),
    dh: int(4, 1, 16),
    seed: int(0, 0, 999_999),
    q: matrix(DEFAULT_Q),
    k: matrix(DEFAULT_K),
    v: matrix(DEFAULT_V),
    a: choice(names, names.includes('dot') ? 'dot' : names[0]!),
    b: choice(names, names.includes('bilinear') ? 'bilinear' : names[names.length - 1]!),
  };
}
export type Ch2Spec = ReturnType<typeof makeSpec>;
