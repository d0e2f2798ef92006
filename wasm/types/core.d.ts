/**
 * qkscope types: matrices, score parameters and the registries' descriptions
 * (re-exported by wasm/qkscope.d.ts, which states the API's conventions).
 */

/**
 * Identifier of a scoring function, from the core's registry (see `QkScope.scoreFunctions`).
 * Kept equal to what the module reports by tests/wasm/registry.test.mjs.
 */
export type ScoreName =
  | 'dot'
  | 'scaled_dot'
  | 'cosine'
  | 'bilinear'
  | 'additive'
  | 'linear_concat'
  | 'neg_sq_euclidean';

/** Row-major float32 matrix. `data.length === rows * cols`. */
export interface Matrix {
  rows: number;
  cols: number;
  data: Float32Array;
}

/** A matrix given as `Matrix` or as nested arrays (`number[][]`, each inner array one row). */
export type MatrixLike = Matrix | ArrayLike<ArrayLike<number>>;
/** A vector given as a typed array or a plain array. */
export type VectorLike = Float32Array | ArrayLike<number>;

/**
 * Learnable parameters of the scoring functions; each function reads only its own fields.
 * - W:   (d_q, d_k)   bilinear, q^T W k                     (Luong et al. 2015, eq. 8 "general")
 * - W_q: (d_h, d_q), W_k: (d_h, d_k), v: (d_h), b: (d_h)   additive, v^T tanh(W_q q + W_k k + b) (Bahdanau et al. 2015)
 * - w:   (d_q + d_k)  linear concat, w^T [q; k]
 */
export interface ScoreParams<M = MatrixLike, V = VectorLike> {
  W?: M;
  W_q?: M;
  W_k?: M;
  v?: V;
  b?: V;
  w?: V;
}

/** Static description of a scoring function (from the C++ registry). */
export interface ScoreInfo {
  name: ScoreName;
  /** Human label, e.g. "Scaled dot product". */
  label: string;
  /** KaTeX source of f(q, k). */
  tex: string;
  /** Parameter names it uses, e.g. ["W_q", "W_k", "v", "b"]. */
  params: string[];
  /** True when d_q must equal d_k. */
  sameDim: boolean;
}

/** Where the causal diagonal sits when L_q != L_k (cuDNN / FlashAttention 2.1 terminology). */
export type CausalAlignment = 'top_left' | 'bottom_right';

/**
 * Normalizer turning a row of logits into weights, from the core's registry (see
 * `QkScope.normalizers`). Kept equal to what the module reports by tests/wasm/registry.test.mjs.
 */
export type NormalizerName = 'softmax' | 'hard' | 'gumbel_softmax' | 'sparsemax' | 'topk_softmax';

/** The `ForwardOptions` keys that normalizers read (each normalizer's own options). */
export type NormalizerOptionName = 'seed' | 'hard' | 'topK';

/** One option of a normalizer (from the C++ registry), e.g. topK of 'topk_softmax'. */
export interface NormalizerOptionInfo {
  /** Its key in `ForwardOptions`. */
  name: NormalizerOptionName;
  kind: 'boolean' | 'integer' | 'number';
  /** Value used when the key is omitted. */
  default: boolean | number;
  /** Allowed range (numbers only). */
  min?: number;
  max?: number;
  /** One line saying what it does. */
  doc: string;
}

/** Static description of a normalizer (from the C++ registry). */
export interface NormalizerInfo {
  name: NormalizerName;
  /** Human label, e.g. "Top-k softmax". */
  label: string;
  /** KaTeX source of the weights p. */
  tex: string;
  /** True when it needs temperature > 0 (all but 'hard', which ignores the temperature). */
  soft: boolean;
  /** The options it reads ([] for none), e.g. [{name: 'topK', kind: 'integer', default: 1, min: 1, ...}]. */
  options: NormalizerOptionInfo[];
}
