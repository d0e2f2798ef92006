/**
 * Chapter 9's model (no DOM): per-head, per-row attention diagnostics from multiHeadForward
 * (Vaswani et al. 2017, §3.2.2) on seeded inputs:
 *   entropy H_i = -sum_j w_ij log w_ij (nats; 0 = one-hot, log L_k = uniform),
 *   max weight max_j w_ij, effective support exp(H_i) (in [1, L_k]).
 * and a rough verdict per head (docs/facts.md §9): diffuse (check the scale) or
 * over-focused (try tau > 1).
 */
import type { Matrix, MultiHeadResult, QkScope, ScoreName } from '@qkscope/wasm';
import { normalMatrix, normals, stream } from '../../model/random';
import { choice, int, num } from '../../model/url-state';

export const D_MODEL = 16;
export const D_HEAD = 8;

export interface DiagInput {
  heads: number;
  L: number;
  score: ScoreName;
  sigma: number;
  tau: number;
  seed: number;
}

export interface HeadStats {
  /** Per query row, (L). */
  entropy: number[];
  maxWeight: number[];
  support: number[];
  meanEntropy: number;
  meanMax: number;
  meanSupport: number;
  verdict: 'diffuse' | 'focused' | 'between';
}

export interface Diagnostics {
  L: number;
  logL: number;
  heads: HeadStats[];
  weights: Matrix[];
  input: Matrix;
}

/** Thresholds of the verdict: mean H / log L_k above DIFFUSE, or mean max weight above FOCUSED. */
export const DIFFUSE = 0.9;
export const FOCUSED = 0.9;

export function inputs(seed: number, L: number, sigma: number): Matrix {
  const X = normalMatrix(normals(stream(seed, 0)), L, D_MODEL); // (L, d_model)
  for (let k = 0; k < X.data.length; k++) X.data[k] = X.data[k]! * sigma;
  return X;
}

export function diagnose(qk: QkScope, s: DiagInput): Diagnostics {
  const X = inputs(s.seed, s.L, s.sigma);
  const r: MultiHeadResult = qk.multiHeadForward({ query: X, heads: s.heads, dK: D_HEAD, dV: D_HEAD, seed: s.seed, score: s.score, temperature: s.tau });
  const logL = Math.log(s.L);
  const heads = r.heads.map((hd): HeadStats => {
    const W = hd.weights;
    const entropy = Array.from(hd.entropy, (x) => Math.min(logL, Math.max(0, x)));
    const maxWeight: number[] = [];
    for (let i = 0; i < W.rows; i++) {
      let m = 0;
      for (let j = 0; j < W.cols; j++) m = Math.max(m, W.data[i * W.cols + j]!);
      maxWeight.push(m);
    }
    const support = entropy.map(Math.exp);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const meanEntropy = mean(entropy);
    const meanMax = mean(maxWeight);
    const verdict = logL > 0 && meanEntropy / logL > DIFFUSE ? 'diffuse' : meanMax > FOCUSED ? 'focused' : 'between';
    return { entropy, maxWeight, support, meanEntropy, meanMax, meanSupport: mean(support), verdict };
  });
  return { L: s.L, logL, heads, weights: r.heads.map((hd) => hd.weights), input: X };
}

/** (heads, L) matrix of one per-row statistic, optionally divided by `by`. */
export function statMatrix(d: Diagnostics, pick: (h: HeadStats) => number[], by = 1): Matrix {
  const rows = d.heads.length;
  const data = new Float32Array(rows * d.L);
  d.heads.forEach((hd, i) => pick(hd).forEach((x, j) => (data[i * d.L + j] = by > 0 ? x / by : 0)));
  return { rows, cols: d.L, data };
}

/** The chapter's URL state: one field table (model/url-state.ts) shared by its figures. */
export function makeSpec(names: readonly string[]) {
  return {
    score: choice(names, 'scaled_dot'),
    sigma: num(1, 0.1, 10, { digits: 3 }),
    tau: num(1, 0.1, 10, { digits: 3 }),
    heads: int(4, 1, 8),
    L: int(8, 2, 16),
    head: int(1, 1, 8),
    seed: int(1, 0, 999_999),
  };
}
export type Ch9Spec = ReturnType<typeof makeSpec>;
