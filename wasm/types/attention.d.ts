/**
 * qkscope types: options and results of forward, backward and the tiled calls
 * (re-exported by wasm/qkscope.d.ts, which states the API's conventions).
 */

import type { ScoreName, Matrix, MatrixLike, VectorLike, ScoreParams, ScoreInfo, CausalAlignment, NormalizerName } from './core.js';

/** Options of `forward` / `backward`. Unknown keys throw (catches typos such as 'temprature'). */
export interface ForwardOptions {
  /** Queries, (L_q, d_q). */
  query: MatrixLike;
  /** Keys, (L_k, d_k). */
  key: MatrixLike;
  /** Values, (L_k, d_v). */
  value: MatrixLike;
  /** Scoring function; default 'scaled_dot'. */
  score?: ScoreName;
  /** Parameters; missing ones are initialised from `seed` (see `initParams`). */
  params?: ScoreParams;
  /** Seed for parameter initialisation (and Gumbel noise); default 0. */
  seed?: number;
  /** Hidden size d_h of additive attention; default: the size of given additive params (v, W_q, W_k, b), else d_k. */
  hidden?: number;
  /** Multiplies raw scores; default 1/sqrt(d_k) for 'scaled_dot', else 1. Any explicit value, 0 included, is used as given. */
  scale?: number;
  /** Softmax temperature tau > 0 (dimensionless): weights = normalize(z / tau). Default 1. */
  temperature?: number;
  /** Number of valid keys (key padding): keys >= keyLength are masked. Default L_k. */
  keyLength?: number;
  /** Causal mask; default false. */
  causal?: boolean;
  /** Causal diagonal alignment when L_q != L_k; default 'top_left'. */
  causalAlignment?: CausalAlignment;
  /** Sliding window: key j visible from query i when -left <= j - i' <= right (i' the aligned diagonal). Omit for none;
   *  a side omitted or Infinity is unbounded. */
  window?: { left: number; right: number };
  /** Additive bias added to scores, (L_q, L_k). Entries finite or -Infinity (masks); never NaN or +Infinity. */
  bias?: MatrixLike;
  /** Explicit keep mask, (L_q, L_k), true = may attend. Combined with the others by AND. */
  mask?: ArrayLike<ArrayLike<boolean | number>> | { rows: number; cols: number; data: ArrayLike<boolean | number> };
  /** Normalizer; default 'softmax'. */
  normalizer?: NormalizerName;
  /** k for 'topk_softmax' (>= 1). */
  topK?: number;
  /** Straight-through hard variant for 'gumbel_softmax'. */
  hard?: boolean;
  /**
   * Logit soft-capping c > 0: s <- c * tanh(s / c), applied right after the scale
   * (Gemma 2 Team 2024, §2). Omit for none.
   */
  softcap?: number;
  /**
   * ALiBi slope m >= 0 of this head: s <- s - m * |j - (i + o)|, o the causal alignment's
   * diagonal offset (Press, Smith & Lewis 2022, §3). Slopes per head count: 2^(-8h/H).
   */
  alibiSlope?: number;
  /**
   * Relative-position bias table r of odd length 2R+1: s <- s + r[clip(j - (i + o), -R, R) + R],
   * o the causal alignment's diagonal offset as for ALiBi (Shaw et al. 2018; a table without
   * buckets). Learnable: see BackwardResult.dRelativeBias.
   */
  relativeBias?: VectorLike;
  /**
   * T5 bucketing of relative positions (Raffel et al. 2020; see `t5Buckets`); needs `t5Table`.
   * s <- s + t5Table[bucket(j - (i + o))].
   */
  t5?: T5BucketOptions;
  /** T5 bias per bucket, numBuckets entries. Learnable: see BackwardResult.dT5Table. */
  t5Table?: VectorLike;
}

export interface ForwardResult {
  /** f(q, k) before scale, (L_q, L_k). */
  rawScores: Matrix;
  /** Logits after scale and bias, before the mask, (L_q, L_k). */
  scores: Matrix;
  /** Logits with masked entries set to -Infinity, (L_q, L_k). */
  maskedScores: Matrix;
  /** Attention weights, rows sum to 1 (or 0 for fully masked rows), (L_q, L_k). */
  weights: Matrix;
  /** weights x V, (L_q, d_v). */
  output: Matrix;
  /**
   * log sum_j exp(z_ij / tau) over the unmasked keys, per query row, (L_q): the softmax
   * normalizer of the logits whatever `normalizer` is (a diagnostic for sparsemax, top-k,
   * hard and Gumbel). -Infinity for a fully masked row; +Infinity for normalizer 'hard'
   * with temperature 0.
   */
    logsumexp: Float32Array;
  /** Row entropy H = -sum p log p in nats, (L_q); 0 = one-hot, log L_k = uniform. */
  entropy: Float32Array;
  /** Largest weight per row, (L_q). */
  maxWeight: Float32Array;
  /** The parameters used (given or initialised), as Matrix / Float32Array. */
  params: ScoreParams<Matrix, Float32Array>;
  /** The scale used. */
  scale: number;
}

/** Gradients of a scalar loss L given gradOutput = dL/d(output); each has the shape of what it differentiates. */
export interface BackwardResult {
  /** dL/dQ, (L_q, d_q). */
  dQuery: Matrix;
  /** dL/dK, (L_k, d_k). */
  dKey: Matrix;
  /** dL/dV, (L_k, d_v). */
  dValue: Matrix;
  /** dL/d(parameters) of the scoring function (its own fields only; {} for dot, scaled_dot, cosine). */
  dParams: ScoreParams<Matrix, Float32Array>;
  /** dL/d(temperature). */
  dTemperature: number;
  /** dL/d(bias), (L_q, L_k); present when `bias` was given. */
  dBias?: Matrix;
  /** dL/d relativeBias, (2R+1); present when `relativeBias` was given. */
  dRelativeBias?: Float32Array;
  /** dL/d t5Table, (numBuckets); present when `t5` was given. */
  dT5Table?: Float32Array;
}

/**
 * Result of the fast call `attention` (tiled online softmax: Dao et al. 2022, Alg. 1; Dao 2023,
 * Alg. 1): the output and logsumexp only, O(L d) memory, never the (L_q, L_k) matrices. Equal
 * to `forward`'s `output` and `logsumexp` within the tests' tolerance (tests/wasm/tiled.test.mjs).
 */
export interface AttentionResult {
  /** weights x V, (L_q, d_v); rows of fully masked queries are 0. */
  output: Matrix;
  /** log sum_j exp(z_ij / tau) over the unmasked keys, (L_q); -Infinity for a fully masked row. */
  logsumexp: Float32Array;
  /** The parameters used (given or initialised from `seed`), as in `ForwardResult`. */
  params: ScoreParams<Matrix, Float32Array>;
  /** The scale used. */
  scale: number;
  /**
   * True when the tiled kernels computed it; false when they deferred to the core (a normalizer
   * other than softmax, or logits that could overflow float32 once divided by the temperature).
   * Either way the values (or the error) are the core's.
   */
  tiled: boolean;
}

/** Gradients from the fast call `attentionBackward`: `BackwardResult` plus which path ran. */
export interface AttentionBackwardResult extends BackwardResult {
  /** True when the tiled backward (Dao 2023, Alg. 2) computed it; false when the core did. */
  tiled: boolean;
}

/**
 * The tiled kernels as synchronous calls (the module `QkScope.tiled()` loads). Same options,
 * checks and error messages as `forward` / `backward`; bad input throws a RangeError naming the
 * argument, out of memory an Error, and the module stays usable after either.
 */
export interface QkScopeTiled {
  /** Version of the core the tiled module was built from (equals `QkScope.version`). */
  readonly version: string;
  /** The registry of scoring functions: every one runs on the tiled kernels. */
  readonly scoreFunctions: readonly ScoreInfo[];
  /** Attention output and logsumexp without the (L_q, L_k) intermediates. */
  attention(options: ForwardOptions): AttentionResult;
  /** Gradients as `backward`, from the tiled forward and backward (O(L d) memory unless `bias` is given). */
  attentionBackward(options: ForwardOptions, gradOutput: MatrixLike): AttentionBackwardResult;
}

/**
 * T5's bucketed relative positions (Raffel et al. 2020): r = j - (i + o), o the alignment's diagonal
 * offset (as for ALiBi and the causal mask). Bidirectional: half the buckets for r <= 0, half for r > 0;
 * causal: r > 0 shares bucket 0. In each half of n buckets the first n/2 distances are exact, the rest
 * logarithmic up to maxDistance; farther distances share the last bucket.
 */
export interface T5BucketOptions {
  /** Number of buckets >= 2; default 32 (T5). */
  numBuckets?: number;
  /** Distance >= 1 where the logarithmic buckets end; default 128 (T5). */
  maxDistance?: number;
  /** true (default) for encoders, false for causal decoders. */
  bidirectional?: boolean;
}
