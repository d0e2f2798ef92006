/**
 * Chapter 8's model (no DOM): kernelised "linear" attention and helpers, seeded.
 *   O = phi(Q) (phi(K)^T V) / (phi(Q) (phi(K)^T 1))          O(L m d) instead of O(L^2 d)
 * - phi = elu + 1 (Katharopoulos et al. 2020, "Transformers are RNNs", eq. 7);
 * - positive random features of the softmax kernel (Performer FAVOR+, Choromanski et al.
 *   2021, Lemma 1): phi(x) = exp(W x - |x|^2 / 2) / sqrt(m), W rows ~ N(0, I), with
 *   x = q / d^(1/4) so that E[phi(q) . phi(k)] = exp(q . k / sqrt(d));
 * - causal version with prefix sums S_i = sum_{j<=i} phi(k_j) v_j^T, z_i = sum_{j<=i} phi(k_j).
 * Also an exact softmax attention in JS that streams rows (for a same-language timing).
 */
import type { Matrix } from '@qkscope/wasm';
import { normalMatrix, normals, stream } from '../../model/random';
import { bool, choice, int, num } from '../../model/url-state';

export type FeatureKind = 'elu' | 'favor';

export function randn(seed: number, k: number, rows: number, cols: number, scale = 1): Matrix {
  const m = normalMatrix(normals(stream(seed, k)), rows, cols);
  if (scale !== 1) for (let n = 0; n < m.data.length; n++) m.data[n] = m.data[n]! * scale;
  return m;
}

/** Feature map phi applied to every row of X (L, d): (L, m). */
export interface FeatureMap {
  kind: FeatureKind;
  /** FAVOR+ projection (m, d); absent for elu. */
  W?: Matrix;
  apply(X: Matrix): Matrix;
}

export function eluFeatures(): FeatureMap {
  return {
    kind: 'elu',
    apply: (X) => {
      const out = new Float32Array(X.data.length);
      for (let n = 0; n < out.length; n++) {
        const x = X.data[n]!;
        out[n] = x > 0 ? x + 1 : Math.exp(x);
      }
      return { rows: X.rows, cols: X.cols, data: out };
    },
  };
}

/** FAVOR+ positive random features with m seeded Gaussian directions for width d. */
export function favorFeatures(seed: number, m: number, d: number): FeatureMap {
  const W = randn(seed, 99, m, d); // (m, d)
  const s = d ** -0.25;
  return {
    kind: 'favor',
    W,
    apply: (X) => {
      const out = new Float32Array(X.rows * m);
      const inv = 1 / Math.sqrt(m);
      for (let i = 0; i < X.rows; i++) {
        let sq = 0;
        for (let c = 0; c < d; c++) sq += (X.data[i * d + c]! * s) ** 2;
        for (let r = 0; r < m; r++) {
          let p = 0;
          for (let c = 0; c < d; c++) p += W.data[r * d + c]! * X.data[i * d + c]! * s;
          out[i * m + r] = Math.exp(p - sq / 2) * inv;
        }
      }
      return { rows: X.rows, cols: m, data: out };
    },
  };
}

/** phi(Q)(phi(K)^T V), row-normalised; causal uses prefix sums. Returns O (L_q, d_v). */
export function linearAttention(Q: Matrix, K: Matrix, V: Matrix, phi: FeatureMap, causal = false): Matrix {
  const fq = phi.apply(Q); // (L_q, m)
  const fk = phi.apply(K); // (L_k, m)
  const m = fq.cols;
  const dv = V.cols;
  const O = new Float32Array(Q.rows * dv);
  const KV = new Float64Array(m * dv); // sum_j phi(k_j) v_j^T, (m, d_v)
  const z = new Float64Array(m); // sum_j phi(k_j), (m)
  const addKey = (j: number) => {
    for (let r = 0; r < m; r++) {
      const f = fk.data[j * m + r]!;
      z[r] += f;
      for (let c = 0; c < dv; c++) KV[r * dv + c] += f * V.data[j * dv + c]!;
    }
  };
  const readRow = (i: number) => {
    let den = 0;
    for (let r = 0; r < m; r++) den += fq.data[i * m + r]! * z[r]!;
    for (let c = 0; c < dv; c++) {
      let num = 0;
      for (let r = 0; r < m; r++) num += fq.data[i * m + r]! * KV[r * dv + c]!;
      O[i * dv + c] = den > 0 ? num / den : 0;
    }
  };
  if (causal) {
    for (let i = 0; i < Q.rows; i++) {
      if (i < K.rows) addKey(i);
      readRow(i);
    }
  } else {
    for (let j = 0; j < K.rows; j++) addKey(j);
    for (let i = 0; i < Q.rows; i++) readRow(i);
  }
  return { rows: Q.rows, cols: dv, data: O };
}

/** The (L_q, L_k) weights linear attention implies: phi(q_i).phi(k_j) / sum_j' (small L only). */
export function impliedWeights(Q: Matrix, K: Matrix, phi: FeatureMap, causal = false): Matrix {
  const fq = phi.apply(Q);
  const fk = phi.apply(K);
  const m = fq.cols;
  const A = new Float32Array(Q.rows * K.rows);
  for (let i = 0; i < Q.rows; i++) {
    let sum = 0;
    for (let j = 0; j < K.rows; j++) {
      if (causal && j > i) continue;
      let s = 0;
      for (let r = 0; r < m; r++) s += fq.data[i * m + r]! * fk.data[j * m + r]!;
      A[i * K.rows + j] = s;
      sum += s;
    }
    for (let j = 0; j < K.rows; j++) A[i * K.rows + j] = sum > 0 ? A[i * K.rows + j]! / sum : 0;
  }
  return { rows: Q.rows, cols: K.rows, data: A };
}

/** Exact softmax(Q K^T / sqrt d) V in JS, one row at a time (no (L, L) buffer). */
export function softmaxAttentionJs(Q: Matrix, K: Matrix, V: Matrix): Matrix {
  const d = Q.cols;
  const dv = V.cols;
  const s = 1 / Math.sqrt(d);
  const row = new Float64Array(K.rows);
  const O = new Float32Array(Q.rows * dv);
  for (let i = 0; i < Q.rows; i++) {
    let mx = -Infinity;
    for (let j = 0; j < K.rows; j++) {
      let dot = 0;
      for (let c = 0; c < d; c++) dot += Q.data[i * d + c]! * K.data[j * d + c]!;
      row[j] = dot * s;
      if (row[j]! > mx) mx = row[j]!;
    }
    let z = 0;
    for (let j = 0; j < K.rows; j++) z += row[j] = Math.exp(row[j]! - mx);
    for (let j = 0; j < K.rows; j++) {
      const w = row[j]! / z;
      for (let c = 0; c < dv; c++) O[i * dv + c] += w * V.data[j * dv + c]!;
    }
  }
  return { rows: Q.rows, cols: dv, data: O };
}

/** ||A - B||_F / ||B||_F. */
export function relError(A: ArrayLike<number>, B: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let k = 0; k < B.length; k++) {
    num += (A[k]! - B[k]!) ** 2;
    den += B[k]! ** 2;
  }
  return den > 0 ? Math.sqrt(num / den) : Math.sqrt(num);
}

/** Keep mask of a sliding window of half-width w plus g global tokens (their rows and columns). */
export function windowGlobalMask(L: number, w: number, g: number): boolean[][] {
  return Array.from({ length: L }, (_, i) => Array.from({ length: L }, (_, j) => Math.abs(i - j) <= w || i < g || j < g));
}

export { powersOfTwo } from '../../model/timing';

/** The chapter's URL state: one field table (model/url-state.ts) shared by its figures. */
export function makeSpec() {
  return {
    map: choice(['elu', 'favor'] as const, 'favor'),
    m: int(64, 4, 1024),
    sigma: num(0.5, 0.25, 2, { digits: 3 }),
    causal: bool(false),
    seed: int(1, 0, 999_999),
    maxL: choice(['256', '512', '1024', '2048'] as const, '1024'),
    pattern: choice(['topk', 'window'] as const, 'topk'),
    k: int(4, 1, 16),
    w: int(2, 0, 15),
    g: int(1, 0, 4),
  };
}
export type Ch8Spec = ReturnType<typeof makeSpec>;
