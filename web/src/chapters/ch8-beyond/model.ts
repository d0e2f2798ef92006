/**
 * Chapter 8's model (no DOM): seeded inputs and helpers around the core's linear attention
 * (qk.linearAttention: elu + 1, Katharopoulos et al. 2020; FAVOR+, Choromanski et al. 2021;
 * causal by prefix sums), and the crossover length of two timing series.
 */
import type { ForwardResult, LinearAttentionOptions, Matrix, QkScope } from '@qkscope/wasm';
import { powersOfTwo, type Timing } from '../../model/timing';
import { normalMatrix, normals, stream } from '../../model/random';
import { bool, choice, int, num } from '../../model/url-state';

export type FeatureKind = 'elu' | 'favor';

export function randn(seed: number, k: number, rows: number, cols: number, scale = 1): Matrix {
  const m = normalMatrix(normals(stream(seed, k)), rows, cols);
  if (scale !== 1) for (let n = 0; n < m.data.length; n++) m.data[n] = m.data[n]! * scale;
  return m;
}

/** Options of the core's linearAttention() for a feature map: elu + 1, or FAVOR+ with m seeded iid directions. */
export function featureOptions(kind: FeatureKind, m: number, seed: number): Pick<LinearAttentionOptions, 'featureMap' | 'features' | 'seed' | 'orthogonal'> {
  return kind === 'elu' ? { featureMap: 'elu' } : { featureMap: 'favor', features: m, seed, orthogonal: false };
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

/** Figure 8.1's sequence length and width: L = d = 8, small enough to print every weight. */
export const LIN_L = 8;
export const LIN_D = 8;

/** Figure 8.1's seeded query, key (entries of standard deviation sigma) and value. */
export function linearInputs(seed: number, sigma: number): { Q: Matrix; K: Matrix; V: Matrix } {
  return { Q: randn(seed, 0, LIN_L, LIN_D, sigma), K: randn(seed, 1, LIN_L, LIN_D, sigma), V: randn(seed, 2, LIN_L, LIN_D) };
}

/** The softmax attention linear attention approximates (scaled dot, as in the figure). */
export function softmaxOf(qk: QkScope, x: { Q: Matrix; K: Matrix; V: Matrix }, causal: boolean): ForwardResult {
  return qk.forward({ query: x.Q, key: x.K, value: x.V, score: 'scaled_dot', causal });
}

/** The error of linear attention with feature map `kind` (m features) against softmax's output. */
export function linearError(qk: QkScope, x: { Q: Matrix; K: Matrix; V: Matrix }, soft: ForwardResult, causal: boolean, kind: FeatureKind, m: number, seed: number): number {
  const lin = qk.linearAttention({ query: x.Q, key: x.K, value: x.V, causal, ...featureOptions(kind, m, seed) });
  return relError(lin.output.data, soft.output.data);
}

/** The m at which Figure 8.1 draws FAVOR+'s error: 4, 8, ..., 4096. */
export const CURVE_M = powersOfTwo(4, 4096);

/**
 * FAVOR+'s error against softmax for m = 4 ... 4096 features (Figure 8.1's curve): 11 calls,
 * the last with 4096 features, ~10 ms in a browser, so the page asks the worker (jobs.ts).
 */
export function favorErrorCurve(qk: QkScope, seed: number, sigma: number, causal: boolean): { m: number; err: number }[] {
  const x = linearInputs(seed, sigma);
  const soft = softmaxOf(qk, x, causal);
  return CURVE_M.map((m) => ({ m, err: linearError(qk, x, soft, causal, 'favor', m, seed) }));
}

/** Figure 8.3's sequence length and width. */
export const SPARSE_L = 16;
export const SPARSE_D = 8;

/** Figure 8.3's seeded inputs and their full softmax (one forward per seed). */
export interface SparseBase {
  seed: number;
  Q: Matrix;
  K: Matrix;
  V: Matrix;
  full: ForwardResult;
}

/** One sparse evaluation: the fraction of pairs kept and scored, the output's error and the largest weight change against full softmax. */
export interface SparseEval {
  full: ForwardResult;
  sparse: ForwardResult;
  kept: number;
  scored: number;
  err: number;
  dw: number;
}

export function sparseBase(qk: QkScope, seed: number): SparseBase {
  const L = SPARSE_L;
  const Q = randn(seed, 10, L, SPARSE_D);
  const K = randn(seed, 11, L, SPARSE_D);
  const V = randn(seed, 12, L, SPARSE_D);
  return { seed, Q, K, V, full: qk.forward({ query: Q, key: K, value: V }) };
}

/** Top-k (topk_softmax, k) or sliding window w + g global tokens + r BigBird random keys (sparsePattern as the mask) through forward(). */
export function sparseEval(qk: QkScope, b: SparseBase, pattern: 'topk' | 'window', k: number, w: number, g: number, r: number): SparseEval {
  const L = SPARSE_L;
  const { Q, K, V, full } = b;
  const sparse = pattern === 'topk'
    ? qk.forward({ query: Q, key: K, value: V, normalizer: 'topk_softmax', topK: k })
    : qk.forward({ query: Q, key: K, value: V, mask: qk.sparsePattern({ queries: L, window: w, global: g, random: r, seed: b.seed }) });
  let keptPairs = 0;
  let dw = 0;
  for (let n = 0; n < L * L; n++) {
    if (pattern === 'topk' ? sparse.weights.data[n]! > 0 : sparse.maskedScores.data[n] !== -Infinity) keptPairs++;
    dw = Math.max(dw, Math.abs(sparse.weights.data[n]! - full.weights.data[n]!));
  }
  const kept = keptPairs / (L * L);
  return { full, sparse, kept, scored: pattern === 'topk' ? 1 : kept, err: relError(sparse.output.data, full.output.data), dw };
}

/**
 * Figure 8.3's window curve, w = 0 ... L - 1 at (seed, g, r): kept fraction and error. 17
 * forward calls; a dragged g or r asks the worker for it (jobs.ts), so the page's frame does
 * one call, for the current w, instead of 16.
 */
export function windowCurve(qk: QkScope, seed: number, g: number, r: number): { kept: number; err: number }[] {
  const b = sparseBase(qk, seed);
  return Array.from({ length: SPARSE_L }, (_, w) => {
    const e = sparseEval(qk, b, 'window', 1, w, g, r);
    return { kept: e.kept, err: e.err };
  });
}

/**
 * The crossover length: the smallest measured L from which `fast` is quicker than `slow` at
 * every measured L up to the largest; null when `fast` is not quicker at the largest L.
 */
export function crossoverL(results: readonly Timing[], slow: string, fast: string): number | null {
  const Ls = [...new Set(results.filter((r) => r.series === fast).map((r) => r.x))].sort((a, b) => a - b);
  let cross: number | null = null;
  for (const L of Ls) {
    const a = results.find((r) => r.series === slow && r.x === L);
    const b = results.find((r) => r.series === fast && r.x === L);
    if (!a || !b) continue;
    if (b.ms < a.ms) cross ??= L;
    else cross = null;
  }
  return cross;
}

export { powersOfTwo };

/** The chapter's URL state: one field table (model/url-state.ts) shared by its figures. */
export function makeSpec() {
  return {
    map: choice(['elu', 'favor'] as const, 'favor'),
    m: int(64, 4, 1024),
    sigma: num(0.5, 0.25, 2, { digits: 3 }),
    causal: bool(false),
    seed: int(1, 0, 999_999),
    maxL: choice(['256', '512', '1024', '2048'] as const, '1024'),
    dim: choice(['64', '128'] as const, '64'),
    pattern: choice(['topk', 'window'] as const, 'topk'),
    k: int(4, 1, 16),
    w: int(2, 0, 15),
    g: int(1, 0, 4),
    r: int(0, 0, 4),
  };
}
export type Ch8Spec = ReturnType<typeof makeSpec>;
