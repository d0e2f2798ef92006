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

export * from './types/core.js';
export * from './types/attention.js';
export * from './types/extras.js';
export * from './types/train.js';
import type { ScoreName, Matrix, MatrixLike, ScoreParams, ScoreInfo, NormalizerInfo } from './types/core.js';
import type { ForwardOptions, ForwardResult, BackwardResult, AttentionResult, AttentionBackwardResult, QkScopeTiled } from './types/attention.js';
import type { QkScopeTrain } from './types/train.js';
import type { MultiHeadOptions, MultiHeadResult, PrecisionOptions, PrecisionResult, LinearAttentionOptions, LinearAttentionResult, AttentionState, SparsePatternOptions, T5BucketMatrixOptions } from './types/extras.js';

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
  /**
   * Loads (once) the training module (qkscope_train.wasm; in Node pass `trainWasmBinary` to
   * `loadQkScope` or `wasmBinary` here) and returns its synchronous calls (types/train.d.ts).
   * A failed load is not memoised.
   */
  train(options?: { wasmBinary?: ArrayBuffer | Uint8Array }): Promise<QkScopeTrain>;
  /** Seeded parameter initialisation for a scoring function. Throws RangeError on bad sizes. */
  initParams(score: ScoreName, dQ: number, dK: number, hidden: number, seed: number): ScoreParams<Matrix, Float32Array>;
}

export interface LoadOptions {
  /** The .wasm bytes (required in Node; in browsers the file next to the module is fetched). */
  wasmBinary?: ArrayBuffer | Uint8Array;
  /** The tiled module's .wasm bytes (qkscope_tiled.wasm), for `attention` in Node. */
  tiledWasmBinary?: ArrayBuffer | Uint8Array;
  /** The training module's .wasm bytes (qkscope_train.wasm), for `train` in Node. */
  trainWasmBinary?: ArrayBuffer | Uint8Array;
}

/** Loads (once) and returns the qkscope module. Concurrent calls share one instance. */
export function loadQkScope(options?: LoadOptions): Promise<QkScope>;
