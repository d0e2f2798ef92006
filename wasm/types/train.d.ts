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
export type TaskName = 'reverse' | 'recall' | 'copy' | 'text';

export interface TaskInfo {
  readonly name: TaskName;
  readonly label: string;
  /** Smallest sequence length the task accepts. */
  readonly minLength: number;
  /**
   * True for a task that trains on a caller's text (`TrainerOptions.text`, mask 'causal':
   * 'text'); false for the tasks that generate their own data.
   */
  readonly readsText: boolean;
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
  /**
   * The corpus of task 'text' (required there, rejected by the other tasks): any string,
   * encoded as `CharModel.encode` does; the last 10% is held out. Needs mask 'causal'.
   */
  text?: string;
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

/** A tensor of a weights file: row-major float32 entries, little-endian, base64 (RFC 4648). */
export interface WeightsTensor {
  /** [rows, cols], or [n] for a vector (b_out, score v, b, w). */
  shape: number[];
  data: string;
}

/**
 * A weights file `train-models/devil-<score>.json` (format 'qkscope-char-model', version 1),
 * written by `npm run train:text-models` (docs/training.md, "Shipped models"). Only the
 * fields marked "read" are used by `loadCharModel`; the others document the run.
 */
export interface CharModelWeights {
  /** Read: 'qkscope-char-model'. */
  format: string;
  /** Read: 1. */
  version: number;
  /** Read: 'text'. */
  task: string;
  /** Where the training text came from (book, licence, Debian package). */
  source: string;
  /** Read. */
  score: ScoreName;
  /** Read. */
  normalizer: NormalizerName;
  /** Read: 'causal'. */
  mask: string;
  /** Read: the vocabulary of the core (character i = token i; the last one is "other"). */
  vocabulary: string;
  /** Read: context length L (the longest text the model reads). */
  context: number;
  /** Read: model width d, a multiple of `heads`. */
  width: number;
  /** Read. */
  heads: number;
  /** Read. */
  layers: number;
  seed: number;
  steps: number;
  batch: number;
  lr: number;
  weight_decay: number;
  clip: number;
  /**
   * Measured natively after training: mean next-character cross-entropy (nats) and accuracy
   * over `windows` consecutive windows of L characters starting at encoded offset `start` of
   * the `characters`-long encoded text (the last 10%, never trained on), and the unigram
   * baseline on the same targets (training-part character frequencies).
   */
  heldout: { loss: number; accuracy: number; windows: number; start: number; characters: number;
    unigram_loss: number; unigram_accuracy: number };
  /** Read: every tensor, named as the core names them ('E', 'P', 'layers[0].W_Q', ..., 'W_out', 'b_out'). */
  params: Record<string, WeightsTensor>;
}

/** What a CharModel predicts for one text. */
export interface CharPrediction {
  /** The text as the model read it (`encode`), n characters, n <= context. */
  readonly text: string;
  /**
   * (n, vocabulary.length): row i is the softmax of the logits after reading text[0..i], the
   * probabilities of the next character (column k: vocabulary[k]); each row sums to 1.
   * (0, V) for an empty text.
   */
  readonly next: Matrix;
  /**
   * Attention weights (n, n) of `layer`, `head` (row i: query position i, column j: key
   * position j; causal, so zero above the diagonal). RangeError for a layer or head out of
   * range. (0, 0) for an empty text.
   */
  attention(layer: number, head: number): Matrix;
}

/** A trained next-character model; its forward pass is the core's (the training code). */
export interface CharModel {
  readonly score: ScoreName;
  readonly normalizer: NormalizerName;
  /** The characters of the tokens, in token order; the last is the "other" token '#'. */
  readonly vocabulary: string;
  /** Context length L: the model reads the last L characters of a text. */
  readonly context: number;
  readonly width: number;
  readonly layers: number;
  readonly heads: number;
  /**
   * The text as the model reads it: A-Z folded to a-z, every whitespace run one space, every
   * character outside the vocabulary (digits, '_', non-ASCII; one UTF-8 character each) '#',
   * then its last `context` characters. '' for ''. RangeError when text is not a string.
   */
  encode(text: string): string;
  /** Next-character probabilities and attention after each position of `encode(text)`. */
  predict(text: string): CharPrediction;
  /** Frees the WebAssembly memory of this model; the object is unusable afterwards. */
  delete(): void;
}

/** The training module: create as many trainers as needed (one per scoring function). */
export interface QkScopeTrain {
  readonly version: string;
  readonly tasks: readonly TaskInfo[];
  /** Throws RangeError naming the option for a bad setting. */
  createTrainer(options?: TrainerOptions): Trainer;
  /**
   * A trained next-character model from a parsed weights file. RangeError naming the field
   * for a bad file: missing or wrong format, version, task, score (unknown), normalizer,
   * mask, vocabulary, context, width, heads, layers; a tensor missing, unknown, of the
   * wrong shape, not base64 or holding a non-finite value. The module stays usable.
   */
  loadCharModel(weights: CharModelWeights): CharModel;
  /**
   * The whole text as the character models read it (the core's encoding, `CharModel.encode`
   * without the context limit): e.g. to find a weights file's held-out part
   * (`heldout.start`, offsets into this string). RangeError when text is not a string.
   */
  encodeText(text: string): string;
}
