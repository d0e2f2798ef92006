/**
 * qkscope training API (wasm/qkscope_train.wasm, loaded on the first `createTrainer` call):
 * a tiny attention-only transformer of the C++ core (core/include/qkscope/train/) trained
 * on a generated task, the same code as `npm run train`. See docs/training.md.
 *
 * Model: token + position embeddings, `layers` residual multi-head self-attention layers
 * (W_Q, W_K, W_V, W_O; the chosen scoring function and normalizer), a linear read-out per
 * position, cross-entropy on the answer positions; AdamW with global-norm gradient clipping.
 * Every step draws a fresh seeded batch; the held-out set is fixed at creation.
 * Bad options throw a RangeError naming the option and value (unknown task: lists the known
 * ones). A diverging run (non-finite loss or gradient, or overflow) stops: `state().diverged`.
 */
import type { Matrix, NormalizerName, ScoreName } from './core.js';

/** Identifier of a generated task, from the core's registry (`QkScopeTrain.tasks`). */
export type TaskName = 'reverse' | 'recall' | 'copy';

export interface TaskInfo {
  readonly name: TaskName;
  readonly label: string;
  /** Smallest sequence length the task accepts. */
  readonly minLength: number;
}

export interface TrainerOptions {
  /** Default 'reverse'. */
  task?: TaskName;
  /** Scoring function; default 'scaled_dot'. */
  score?: ScoreName;
  /** Normalizer; default 'softmax'. Its options (`hard`, `topK`) go next to it. */
  normalizer?: NormalizerName;
  /** 'gumbel_softmax': one-hot forward, straight-through gradient. */
  hard?: boolean;
  /** 'topk_softmax': keys kept per row. */
  topK?: number;
  /**
   * Seed of the parameters, every batch, the held-out set and the Gumbel noise (a fresh noise
   * seed per step is derived from it); an integer in [0, 2^53). Default 0.
   */
  seed?: number;
  /** 'none' (default) or 'causal'. */
  mask?: 'none' | 'causal';
  /** Sequence length L; default 12. */
  length?: number;
  /** Model width d, a multiple of `heads`; default 32. */
  width?: number;
  /** Attention heads; default 1. */
  heads?: number;
  /** Attention layers, 1 to 4; default 1. */
  layers?: number;
  /** Sequences per step; default 32. */
  batch?: number;
  /** Held-out sequences; default 256. */
  evalSize?: number;
  /** AdamW learning rate, finite and > 0; default 0.01. */
  lr?: number;
  /** AdamW decoupled weight decay, >= 0; default 0. */
  weightDecay?: number;
  /** Global gradient-norm clip, > 0; default 1. */
  clip?: number;
}

export interface EvalResult {
  /** Mean cross-entropy over the answer positions, nats (NaN once diverged). */
  loss: number;
  /** Fraction of answer positions predicted correctly. */
  tokenAccuracy: number;
  /** Fraction of sequences with every answer position correct. */
  sequenceAccuracy: number;
}

export interface TrainerState {
  /** Optimizer steps taken. */
  steps: number;
  /** True once the run diverged; `message` says at which step and why. */
  diverged: boolean;
  message: string;
  /** Token vocabulary size of the task. */
  vocab: number;
  length: number;
  evalSize: number;
}

export interface Trainer {
  /** Runs up to n >= 1 steps; the loss of each step that ran (fewer once the run diverges). */
  step(n: number): Float64Array;
  /** Held-out loss and accuracy. */
  evaluate(): EvalResult;
  /** Attention weights (L, L) of held-out example `example` at `layer`, `head`. */
  attention(example: number, layer: number, head: number): Matrix;
  /** Tokens and targets (-1: not an answer position) of held-out example `example`. */
  example(example: number): { tokens: Int32Array; targets: Int32Array };
  state(): TrainerState;
  /** Frees the WebAssembly memory of this run; the object is unusable afterwards. */
  delete(): void;
}

/** The training module: create as many trainers as needed (one per scoring function). */
export interface QkScopeTrain {
  readonly version: string;
  readonly tasks: readonly TaskInfo[];
  /** Throws RangeError naming the option for a bad setting. */
  createTrainer(options?: TrainerOptions): Trainer;
}
