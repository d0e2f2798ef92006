/**
 * qkscope types: multi-head, precision, linear attention, attention states, sparse patterns
 * and T5 buckets (re-exported by wasm/qkscope.d.ts, which states the API's conventions).
 */

import type { ScoreName, Matrix, MatrixLike, VectorLike, CausalAlignment } from './core.js';
import type { ForwardOptions, T5BucketOptions } from './attention.js';

/** Options of `QkScope.multiHeadForward` (Vaswani et al. 2017, §3.2.2; GQA: Ainslie et al. 2023). */
export interface MultiHeadOptions {
  /** Query-side tokens of B sequences stacked as row blocks, (B*L_q, d_model). */
  query: MatrixLike;
  /** Key/value-side tokens, (B*L_k, d_model_kv); default `query` (self-attention). */
  keyValue?: MatrixLike;
  /** B, the number of sequences; default 1. */
  batch?: number;
  /** H, query heads (>= 1). */
  heads: number;
  /** H_kv, key/value heads; H % H_kv == 0 (H_kv = 1: multi-query). Default H. */
  kvHeads?: number;
  /** Per-head query/key width d_k and value width d_v (>= 1). */
  dK: number;
  dV: number;
  /** Output width of W_O; default d_model. */
  dOut?: number;
  /** Seed of the projection weights W_Q, W_K, W_V, W_O ~ N(0, 1/fan_in) and score parameters. */
  seed?: number;
  score?: ScoreName;
  temperature?: number;
  causal?: boolean;
  causalAlignment?: CausalAlignment;
  /** Valid keys per sequence (B entries), each in [0, L_k]. */
  keyLengths?: ArrayLike<number>;
  /** ALiBi with head h's slope from the ALiBi paper's construction for H heads. */
  alibi?: boolean;
  /** T5 bucketing of relative positions, as `ForwardOptions.t5`; needs `t5Table`. */
  t5?: T5BucketOptions;
  /** One T5 table per head, (heads, t5.numBuckets): head h adds t5Table[h][bucket(j - (i + o))]. */
  t5Table?: MatrixLike;
}

export interface MultiHeadResult {
  /** (B*L_q, dOut). */
  output: Matrix;
  /** Per (sequence b, head h), at index b*H + h: weights (L_q, L_k), entropy and logsumexp (L_q). */
  heads: { weights: Matrix; entropy: Float32Array; logsumexp: Float32Array }[];
}

/** Options of `QkScope.precisionSoftmax`: softmax of given scores in a storage dtype. */
export interface PrecisionOptions {
  /** Scores (L_q, L_k), rounded to `dtype` first. */
  scores: MatrixLike;
  /** Keep mask (L_q, L_k), true = may attend; default all true. */
  mask?: ArrayLike<ArrayLike<boolean | number>> | Matrix;
  /** Storage dtype; default 'float16'. */
  dtype?: 'float16' | 'bfloat16' | 'float32';
  /**
   * 'correct' (default): fp32 compute, masked = -inf, fully masked rows give 0.
   * 'masked_fill': the classic bug, fill masked scores with `fill` in the storage dtype, then softmax there.
   * 'no_max': softmax without subtracting the row max, in the storage dtype (exp overflow).
   */
  method?: 'correct' | 'masked_fill' | 'no_max';
  /** Fill value for 'masked_fill'; default -1e9 (which is -Infinity in float16). */
  fill?: number;
}

export interface PrecisionResult {
  weights: Matrix;
  /** What entered the softmax. */
  logits: Matrix;
  nanCount: number;
  infCount: number;
  /** Which intermediate the inf count refers to. */
  stage: string;
  /** One line saying what happened and why. */
  summary: string;
  /** The fill value as stored in the dtype (masked_fill only). */
  constantStored?: number;
  /** Whether PyTorch's masked_fill would refuse this fill value for the dtype. */
  pytorchRaises: boolean;
}

/** Feature map of linear attention. */
export type FeatureMapName = 'elu' | 'favor';

/**
 * Options of `QkScope.linearAttention`: kernelised attention O_i = phi(q_i) S / (phi(q_i) . z),
 * S = sum_j phi(k_j) v_j^T, z = sum_j phi(k_j), in O(L m d) (Katharopoulos et al. 2020).
 * Unknown keys throw.
 */
export interface LinearAttentionOptions {
  /** Queries, (L_q, d). */
  query: MatrixLike;
  /** Keys, (L_k, d). */
  key: MatrixLike;
  /** Values, (L_k, d_v). */
  value: MatrixLike;
  /**
   * 'elu': phi(x) = elu(x) + 1 (m = d). 'favor' (default): FAVOR+ positive random features
   * exp(W a - |a|^2/2)/sqrt(m), a = sqrt(scale) x, estimating exp(scale q.k) (Choromanski et al. 2021).
   */
  featureMap?: FeatureMapName;
  /**
   * FAVOR+ feature count m >= 1; default 64. This and seed, scale, orthogonal apply only to
   * 'favor': passing them with 'elu' throws a RangeError naming the option.
   */
  features?: number;
  /** Seed of the FAVOR+ directions; default 0. */
  seed?: number;
  /** Softmax-kernel scale > 0 that FAVOR+ estimates; default 1/sqrt(d). */
  scale?: number;
  /** Orthogonal random directions (default true) or iid Gaussian ones. */
  orthogonal?: boolean;
  /** Causal prefix sums: query i sees keys j <= i + o; default false. */
  causal?: boolean;
  /** Diagonal alignment o of the causal band; default 'top_left'. */
  causalAlignment?: CausalAlignment;
  /** Also return the implied (L_q, L_k) weights (O(L_q L_k m): for small inputs); default false. */
  weights?: boolean;
  /** dL/d(output), (L_q, d_v): when given, the gradients are returned too. */
  gradOutput?: MatrixLike;
}

export interface LinearAttentionResult {
  /** (L_q, d_v). */
  output: Matrix;
  /** phi(q_i) . z_i per row after a stabiliser that cancels in the output (>= 1), (L_q). 0 = the row sees no key (causal) and has output 0. */
  denominator: Float32Array;
  /** Implied weights phi(q_i).phi(k_j) / denominator_i, (L_q, L_k); present when `weights` was true. */
  weights?: Matrix;
  /** dL/dQ, dL/dK, dL/dV; present when `gradOutput` was given. */
  dQuery?: Matrix;
  dKey?: Matrix;
  dValue?: Matrix;
}

/**
 * Softmax attention over one set of keys: output (L_q, d_v) and logsumexp (L_q), -Infinity where no key is
 * visible (only -Infinity: a finite number beyond float32 is an error, not an empty partition). The result
 * objects of `forward` and `attention` are states as they are: their other fields are ignored; any other key
 * is rejected as a likely typo.
 */
export interface AttentionState {
  output: MatrixLike;
  logsumexp: VectorLike;
  rawScores?: unknown;
  scores?: unknown;
  maskedScores?: unknown;
  weights?: unknown;
  entropy?: unknown;
  maxWeight?: unknown;
  params?: unknown;
  scale?: unknown;
  tiled?: unknown;
}

/**
 * Options of `QkScope.sparsePattern`: a fixed sparse pattern as a keep mask. Query i sits at
 * key position p = i + o (o: the alignment's diagonal offset, 0 top-left, L_k - L_q
 * bottom-right). Key j is kept when |j - p| <= window (Longformer), or 0 <= p < global or
 * j < global (global tokens), or j is one of `random` keys drawn for the row (BigBird, Zaheer
 * et al. 2020) from the keys the window and global tokens leave out, from a stream seeded by
 * (seed, p): with bottom-right alignment the last queries (KV-cache decoding) get exactly the
 * bottom rows of the square pattern.
 */
export interface SparsePatternOptions {
  /** L_q >= 0. */
  queries: number;
  /** L_k >= 0; default L_q. */
  keys?: number;
  /** Window half-width w >= 0; omit for no window. */
  window?: number;
  /** Number of global tokens g >= 0; default 0. */
  global?: number;
  /** Random keys r >= 0 per query row; default 0. */
  random?: number;
  /** Seed of the random keys; default 0. */
  seed?: number;
  /** Where the queries sit when L_q != L_k (window, global tokens, random streams); default 'top_left'. */
  causalAlignment?: CausalAlignment;
}

/** Options of `QkScope.t5Buckets`. */
export interface T5BucketMatrixOptions extends T5BucketOptions {
  /** L_q >= 0. */
  queries: number;
  /** L_k >= 0; default L_q. */
  keys?: number;
  /** Diagonal alignment o for L_q != L_k; default 'top_left'. */
  causalAlignment?: CausalAlignment;
}
