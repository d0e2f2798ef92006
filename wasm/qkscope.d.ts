/**
 * qkscope — typed JS API of the C++ attention core compiled to WebAssembly.
 *
 * Conventions (same as the C++ core):
 * - Matrices are row-major: row i is token i. Shapes are written (rows, cols).
 *   Q: (L_q, d_q), K: (L_k, d_k), V: (L_k, d_v), scores/weights: (L_q, L_k), output: (L_q, d_v).
 * - Masks use one polarity: true = the query may attend to the key (PyTorch SDPA / FlexAttention).
 * - Pipeline order: raw score f(q,k) -> x scale -> + bias -> mask -> normalizer(z / temperature) -> weights x V.
 * - A fully masked row has weights 0, output 0 and logsumexp -Infinity (never NaN).
 * - Bad input throws a RangeError whose message names the argument and the shape or value at fault
 *   (e.g. "query: row 2 has 3 entries, expected 4", "key[1][0] must be a number, got a string",
 *   "options: unknown option 'temprature' (known: ...)"). Other failures (out of memory) throw an
 *   Error. The module stays usable after either.
 * - Results hold copies (Float32Array), never views into WebAssembly memory.
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
 * Options of `QkScope.sparsePattern`: a fixed sparse pattern as a keep mask. Key j is kept for
 * query i when |j - (i + o)| <= window (o: the alignment's diagonal offset; Longformer), or
 * i < global or j < global (global tokens), or j is one of `random` keys drawn for row i
 * (BigBird, Zaheer et al. 2020), seeded, from the keys the window and global tokens leave out.
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
  /** Diagonal of the window when L_q != L_k; default 'top_left'. */
  causalAlignment?: CausalAlignment;
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

/** Options of `QkScope.t5Buckets`. */
export interface T5BucketMatrixOptions extends T5BucketOptions {
  /** L_q >= 0. */
  queries: number;
  /** L_k >= 0; default L_q. */
  keys?: number;
  /** Diagonal alignment o for L_q != L_k; default 'top_left'. */
  causalAlignment?: CausalAlignment;
}

export interface QkScope {
  /** Multi-head attention with seeded projections (GQA/MQA by index mapping, ALiBi, per-sequence key lengths). Throws RangeError on bad input. */
  multiHeadForward(options: MultiHeadOptions): MultiHeadResult;
  /** Softmax in a reduced-precision dtype: the correct fp32 path or a reproduction of a classic failure. Never throws for the failure it demonstrates. */
  precisionSoftmax(options: PrecisionOptions): PrecisionResult;
  /** Linear attention (elu + 1 or FAVOR+), forward and optionally backward. Throws RangeError on bad input. */
  linearAttention(options: LinearAttentionOptions): LinearAttentionResult;
  /**
   * Merges the states of softmax attention over two disjoint key sets (same queries, scale, temperature and
   * modifiers) into the state over their union: lse = log(e^lse_a + e^lse_b), output = e^(lse_a - lse) o_a +
   * e^(lse_b - lse) o_b. An empty state (logsumexp -Infinity) is the identity. Throws RangeError for mismatched shapes.
   */
  mergeStates(a: AttentionState, b: AttentionState): { output: Matrix; logsumexp: Float32Array };
  /** Keep mask (L_q, L_k) of a window + global + random pattern, entries 1 (keep) or 0; pass it as `mask` to `forward`. */
  sparsePattern(options: SparsePatternOptions): Matrix;
  /** Bucket index (0 ... numBuckets - 1) of every (query, key) pair, (L_q, L_k). Throws RangeError for numBuckets < 2 or maxDistance < 1. */
  t5Buckets(options: T5BucketMatrixOptions): Matrix;
  /** Version of the core. */
  readonly version: string;
  /** The registry of scoring functions, in tutorial order. */
  readonly scoreFunctions: readonly ScoreInfo[];
  /** The registry of normalizers, in tutorial order. */
  readonly normalizers: readonly NormalizerInfo[];
  /** Runs attention and returns every intermediate. Throws RangeError on bad input. */
  forward(options: ForwardOptions): ForwardResult;
  /**
   * Gradients of a scalar loss L through attention, given gradOutput = dL/d(output), (L_q, d_v)
   * (e.g. all ones for L = sum of the outputs). Recomputes the forward pass with the same options
   * (same seed, so the same initialised parameters and Gumbel noise). Masked entries and fully
   * masked rows get exactly 0; 'hard' has zero gradient; 'gumbel_softmax' with hard: true uses the
   * straight-through (soft) gradient. Throws RangeError on bad input.
   */
  backward(options: ForwardOptions, gradOutput: MatrixLike): BackwardResult;
  /**
   * The fast call: attention output (L_q, d_v) and logsumexp (L_q) from the tiled online-softmax
   * kernels compiled with WebAssembly SIMD, without the four (L_q, L_k) matrices of `forward`.
   * The first call loads the tiled module (qkscope_tiled.wasm, fetched next to the glue; in Node
   * pass `tiledWasmBinary` to `loadQkScope`). Rejects with the RangeError `forward` would throw
   * for the same options; the modules stay usable.
   */
  attention(options: ForwardOptions): Promise<AttentionResult>;
  /**
   * `backward` on the tiled kernels: gradients given gradOutput = dL/d(output), (L_q, d_v).
   * Loads the tiled module like `attention`; rejects with the RangeError `backward` would throw.
   */
  attentionBackward(options: ForwardOptions, gradOutput: MatrixLike): Promise<AttentionBackwardResult>;
  /**
   * Loads (once) the tiled module and returns its synchronous calls, for loops that time or
   * repeat them. `wasmBinary`: its bytes (Node; default `LoadOptions.tiledWasmBinary`). A failed
   * load is not memoised.
   */
  tiled(options?: { wasmBinary?: ArrayBuffer | Uint8Array }): Promise<QkScopeTiled>;
  /** Seeded parameter initialisation for a scoring function. Throws RangeError on bad sizes. */
  initParams(score: ScoreName, dQ: number, dK: number, hidden: number, seed: number): ScoreParams<Matrix, Float32Array>;
}

export interface LoadOptions {
  /** The .wasm bytes (required in Node; in browsers the file next to the module is fetched). */
  wasmBinary?: ArrayBuffer | Uint8Array;
  /** The tiled module's .wasm bytes (qkscope_tiled.wasm), for `attention` in Node. */
  tiledWasmBinary?: ArrayBuffer | Uint8Array;
}

/** Loads (once) and returns the qkscope module. Concurrent calls share one instance. */
export function loadQkScope(options?: LoadOptions): Promise<QkScope>;
