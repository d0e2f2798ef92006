/**
 * Chapter 7's model (no DOM): seeded inputs, memory estimates from shapes (the timing loop
 * is web/src/model/timing.ts), and the
 * textbook "broadcast" additive attention that materialises the (L_q, L_k, d_h) tensor
 *   S_ij = v . tanh(W_q q_i + W_k k_j + b)     (Bahdanau et al. 2015, eq. 6)
 * the way `torch.tanh(qp[:, None, :] + kp[None, :, :] + b) @ v` does (docs/facts.md §7).
 */
import type { Matrix } from '@qkscope/wasm';
import { normalMatrix, normals, stream } from '../../model/random';
import { choice, int } from '../../model/url-state';

/** A seeded (rows, cols) matrix of N(0, 1) entries; `k` picks an independent stream. */
export function randn(seed: number, k: number, rows: number, cols: number): Matrix {
  return normalMatrix(normals(stream(seed, k)), rows, cols);
}

/**
 * Seeded query, key and value matrices (L, d) for each L, drawn on first use: a run's inputs
 * up to L = 1024 cost tens of milliseconds to draw, so they are made one length at a time as
 * the run reaches it, never all on the click that starts it.
 */
export function inputsByLength(seed: number, d: number): (L: number) => { Q: Matrix; K: Matrix; V: Matrix } {
  const memo = new Map<number, { Q: Matrix; K: Matrix; V: Matrix }>();
  return (L) => {
    let x = memo.get(L);
    if (!x) memo.set(L, (x = { Q: randn(seed, 0, L, d), K: randn(seed, 1, L, d), V: randn(seed, 2, L, d) }));
    return x;
  };
}

export { measure, median, powersOfTwo, SLOW_MS, type Timing, type TimingTask } from '../../model/timing';

/** Bytes of float32 buffers, by what they hold (estimates from shapes, one head, batch 1). */
export function memoryBytes(L: number, d: number, dh: number) {
  const f = 4;
  return {
    /** Scores S and weights P, (L, L) each: the textbook implementation. */
    scoresWeights: 2 * L * L * f,
    /** What forward() hands back for teaching: raw, scaled, masked scores and weights. */
    forwardCopies: 4 * L * L * f,
    /** The broadcast additive tensor (L, L, d_h), twice (sum, then tanh). */
    broadcast: 2 * L * L * dh * f,
    /** Q, K, V and O, (L, d) each: what a tiled (FlashAttention-style) kernel keeps. */
    tiled: 4 * L * d * f,
  };
}

export interface AdditiveParams {
  W_q: Matrix; // (d_h, d_q)
  W_k: Matrix; // (d_h, d_k)
  v: Float32Array; // (d_h)
  b: Float32Array; // (d_h)
}

/** x W^T for x (L, d_in) and W (d_out, d_in): (L, d_out). */
function project(x: Matrix, W: Matrix): Float32Array {
  const out = new Float32Array(x.rows * W.rows);
  for (let i = 0; i < x.rows; i++)
    for (let o = 0; o < W.rows; o++) {
      let s = 0;
      for (let c = 0; c < x.cols; c++) s += x.data[i * x.cols + c]! * W.data[o * W.cols + c]!;
      out[i * W.rows + o] = s;
    }
  return out;
}

/**
 * Textbook broadcast additive attention, materialising E = qp_i + kp_j + b and T = tanh(E),
 * both (L_q, L_k, d_h), then S = T v, softmax per row and O = P V. Returns S (L_q, L_k),
 * O (L_q, d_v) and the bytes of the two big tensors.
 */
export function broadcastAdditive(Q: Matrix, K: Matrix, V: Matrix, p: AdditiveParams): { scores: Matrix; output: Matrix; tensorBytes: number } {
  const Lq = Q.rows;
  const Lk = K.rows;
  const dh = p.v.length;
  const qp = project(Q, p.W_q); // (L_q, d_h)
  const kp = project(K, p.W_k); // (L_k, d_h)
  const E = new Float32Array(Lq * Lk * dh); // (L_q, L_k, d_h)
  for (let i = 0; i < Lq; i++)
    for (let j = 0; j < Lk; j++) {
      const base = (i * Lk + j) * dh;
      for (let c = 0; c < dh; c++) E[base + c] = qp[i * dh + c]! + kp[j * dh + c]! + p.b[c]!;
    }
  const T = new Float32Array(E.length); // tanh(E), a second (L_q, L_k, d_h) tensor
  for (let n = 0; n < E.length; n++) T[n] = Math.tanh(E[n]!);
  const S = new Float32Array(Lq * Lk); // (L_q, L_k)
  for (let ij = 0; ij < Lq * Lk; ij++) {
    let s = 0;
    for (let c = 0; c < dh; c++) s += T[ij * dh + c]! * p.v[c]!;
    S[ij] = s;
  }
  const P = softmaxRows(S, Lq, Lk);
  const O = new Float32Array(Lq * V.cols); // (L_q, d_v)
  for (let i = 0; i < Lq; i++)
    for (let j = 0; j < Lk; j++) {
      const w = P[i * Lk + j]!;
      for (let c = 0; c < V.cols; c++) O[i * V.cols + c] += w * V.data[j * V.cols + c]!;
    }
  return { scores: { rows: Lq, cols: Lk, data: S }, output: { rows: Lq, cols: V.cols, data: O }, tensorBytes: 2 * E.length * 4 };
}

/** Row softmax of a (rows, cols) buffer, max subtracted. */
export function softmaxRows(S: Float32Array, rows: number, cols: number): Float32Array {
  const P = new Float32Array(S.length);
  for (let i = 0; i < rows; i++) {
    let m = -Infinity;
    for (let j = 0; j < cols; j++) m = Math.max(m, S[i * cols + j]!);
    let z = 0;
    for (let j = 0; j < cols; j++) z += P[i * cols + j] = Math.exp(S[i * cols + j]! - m);
    for (let j = 0; j < cols; j++) P[i * cols + j] /= z;
  }
  return P;
}

/** Largest |a - b| over two equal-length buffers. */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let k = 0; k < a.length; k++) m = Math.max(m, Math.abs(a[k]! - b[k]!));
  return m;
}

/** Human size: 1.5 KB, 64 MB, 2.1 GB (powers of 1024). */
export function bytesText(b: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let k = 0;
  while (b >= 1024 && k < units.length - 1) {
    b /= 1024;
    k++;
  }
  return `${Number(b.toPrecision(b >= 100 ? 3 : 2))} ${units[k]}`;
}

/** The chapter's URL state: one field table (model/url-state.ts) shared by its figures. */
export function makeSpec() {
  return {
    maxL: choice(['128', '256', '512', '1024'] as const, '512'),
    d: choice(['16', '32', '64'] as const, '64'),
    pathL: choice(['512', '1024', '2048', '4096'] as const, '1024'),
    addL: choice(['64', '128', '256'] as const, '128'),
    dh: choice(['16', '32', '64'] as const, '32'),
    qset: int(0, 0, 999),
  };
}
export type Ch7Spec = ReturnType<typeof makeSpec>;
